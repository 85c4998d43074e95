import { defineConfig } from 'tsup'

/**
 * One entry per `package.json` export, besides the CLI and the worker scripts (run by path, never imported);
 * `test/unit/package-exports.test.ts` keeps the two in step.
 */
export const entry = {
  index: 'src/index.ts',
  cli: 'src/cli/main.ts',
  'adapters/node': 'src/adapters/node.ts',
  'adapters/express': 'src/adapters/express.ts',
  'adapters/bun': 'src/adapters/bun.ts',
  'adapters/deno': 'src/adapters/deno.ts',
  'transport/undici': 'src/transport/undici.ts',
  'storage/memory': 'src/storage/memory.ts',
  'storage/file': 'src/storage/file.ts',
  'storage/sql': 'src/storage/sql/index.ts',
  'storage/sqlite': 'src/storage/sqlite.ts',
  'storage/redis': 'src/storage/redis.ts',
  'storage/unstorage': 'src/storage/unstorage.ts',
  metrics: 'src/metrics/prometheus.ts',
  testing: 'src/testing/index.ts',
  // Beside the chunks in dist/, where src/workers/file-parser-pool.ts looks for it.
  'file-parser-worker': 'src/workers/file-parser-worker.ts',
  // Beside the chunks in dist/, where src/workers/similarity-pool.ts looks for it.
  'similarity-worker': 'src/workers/similarity-worker.ts',
}

/** Entries that are not package exports. */
export const UNEXPORTED_ENTRIES = ['cli', 'file-parser-worker', 'similarity-worker']

export default defineConfig({
  entry,
  format: ['esm'],
  dts: true,
  sourcemap: true,
  target: 'node20',
  platform: 'node',
  clean: true,
  splitting: true,
  treeshake: true,
  // Keep `node:` specifiers: Deno and Bun resolve built-ins only through them.
  removeNodeProtocol: false,
  // An optional dependency (tsup leaves out only dependencies and peer dependencies by itself), and a native module.
  external: ['libsql'],
})
