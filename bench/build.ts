/**
 * Finds the built package to measure. dist/ is used when it is newer than every source file, so the
 * bench measures what ships. Otherwise the same tsup config is built, without type declarations, into
 * a private folder: dist/ is left alone, because tests of other sessions and CI steps may be reading it.
 */

import { createHash } from 'node:crypto'
import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const DIST = join(ROOT, 'dist')
/**
 * One folder per checkout: git worktrees often share one node_modules (a symlink), and a build of another
 * worktree's sources, newer than this one's, would otherwise pass for fresh here.
 */
const PRIVATE_BUILD = join(ROOT, 'node_modules', '.cache', 'modelgate-bench', createHash('sha256').update(realpathSync(ROOT)).digest('hex').slice(0, 12), 'dist')
/** The files the bench's gateway process imports, and the runner it starts. */
const NEEDED = ['index.js', 'adapters/node.js', 'transport/undici.js', 'cli.js']
const INPUTS = ['src', 'tsup.config.ts', 'package.json', 'package-lock.json']

const newestMtime = (path: string): number => {
  if (!existsSync(path)) return 0
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  let newest = stat.mtimeMs
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, name)))
  return newest
}

const isFresh = (dir: string, sourcesChangedAt: number): boolean =>
  NEEDED.every((file) => existsSync(join(dir, file)) && statSync(join(dir, file)).mtimeMs > sourcesChangedAt)

export interface BuildChoice {
  dir: string
  /** How it was obtained, for the report. */
  description: string
}

/** Returns a build of the current sources, building one when dist/ is missing or stale. */
export const resolveBuild = async (): Promise<BuildChoice> => {
  // Another build (a branch, a patched copy) to compare against; used as it is.
  const given = process.env.BENCH_BUILD_DIR
  if (given) return { dir: given, description: `${given} (BENCH_BUILD_DIR)` }
  const sourcesChangedAt = Math.max(...INPUTS.map((input) => newestMtime(join(ROOT, input))))
  if (process.env.BENCH_BUILD !== 'always' && isFresh(DIST, sourcesChangedAt)) return { dir: DIST, description: 'dist/ (up to date with src/)' }
  if (process.env.BENCH_BUILD !== 'always' && isFresh(PRIVATE_BUILD, sourcesChangedAt)) {
    return { dir: PRIVATE_BUILD, description: 'private tsup build of src/ (dist/ is stale or missing)' }
  }
  const started = performance.now()
  const [{ build }, config] = await Promise.all([import('tsup'), import('../tsup.config')])
  await build({ ...config.default, config: false, dts: false, outDir: PRIVATE_BUILD, clean: true, silent: true })
  const seconds = ((performance.now() - started) / 1000).toFixed(1)
  return { dir: PRIVATE_BUILD, description: `private tsup build of src/, built now in ${seconds} s (dist/ is stale or missing)` }
}
