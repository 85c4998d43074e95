/**
 * `npm run openapi:generate`: rewrites docs/openapi.json from the route table's schemas. Run it after changing a
 * route or its schemas, review the diff, commit; a unit test fails while the file is stale.
 */

import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { OPENAPI_FILE, openApiFileText } from './openapi-document'

const root = fileURLToPath(new URL('..', import.meta.url))
const text = openApiFileText()
writeFileSync(`${root}${OPENAPI_FILE}`, text)
const { paths } = JSON.parse(text) as { paths: Record<string, Record<string, unknown>> }
console.log(`${OPENAPI_FILE}: ${Object.values(paths).reduce((sum, methods) => sum + Object.keys(methods).length, 0)} operations`)
