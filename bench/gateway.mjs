// @ts-check
/**
 * The gateway under test, alone in its own process so its CPU time is its own: the built package
 * (`BENCH_BUILD_DIR`, dist/ or the bench's private build of the same tsup config) served by
 * node:http through `toNodeListener`, pooled undici upstream transport, memory storage (its calls counted), no logger,
 * and the bench's two providers pointed at the loopback upstream (`BENCH_UPSTREAM_URL`, bench/providers.mjs).
 * `BENCH_LEDGER=off` starts it with the usage ledger off (`ledger: { enabled: false }`), the bench's
 * `modelgate/no-ledger` column. `BENCH_STORE=redis` or `postgres` puts its state on the local Redis or
 * PostgreSQL instead of in memory; `sqlite` in a SQLite file (the runner's default store), `file` in the embedded file
 * store (the runner's default before it), each in a temporary directory of its own.
 */

import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { answerStatsRequests, reportReady } from './process-stats.mjs'
import { BENCH_MODELS, benchProviders } from './providers.mjs'

const buildDir = process.env.BENCH_BUILD_DIR
const upstreamUrl = process.env.BENCH_UPSTREAM_URL
if (!buildDir || !upstreamUrl) throw new Error('gateway.mjs needs BENCH_BUILD_DIR and BENCH_UPSTREAM_URL')

const load = (/** @type {string} */ file) => import(pathToFileURL(join(buildDir, file)).href)
const [{ createGateway, memoryStorage }, { toNodeListener }, { undiciTransport }] = await Promise.all([
  load('index.js'),
  load('adapters/node.js'),
  load('transport/undici.js'),
])

/** The usage ledger's collection (src/repositories/generations.ts): one `createMany` per group-commit write. */
const LEDGER_COLLECTION = 'generations'

/**
 * The memory store, counting the driver calls the gateway makes: on Redis or SQL each would be a command or a
 * statement, so the count per request is what the gateway asks of a networked store (its usage record, spend
 * counters, key and workspace reads). The usage ledger's writes are counted apart, with the records they carry.
 */
const countCalls = (/** @type {Record<string, unknown>} */ driver) => {
  const counted = { calls: 0, ledgerWrites: 0, ledgerRecords: 0 }
  const proxy = new Proxy(driver, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver)
      if (typeof value !== 'function' || name === 'close') return value
      return (/** @type {unknown[]} */ ...args) => {
        counted.calls++
        if (name === 'createMany' && args[0] === LEDGER_COLLECTION && Array.isArray(args[1])) {
          counted.ledgerWrites++
          counted.ledgerRecords += args[1].length
        }
        return value.apply(target, args)
      }
    },
  })
  return { proxy, counted }
}

/** Loopback only: the bench never sends traffic elsewhere. */
const REDIS_URL = 'redis://127.0.0.1:6379'
const POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres'

/** The local Redis under a key prefix of this process's own, whose keys `cleanUp` deletes. */
const openRedis = async () => {
  const [{ redisStorage }, { default: Redis }] = await Promise.all([load('storage/redis.js'), import('ioredis')])
  const prefix = `modelgate-bench:${process.pid}:`
  const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
  const cleanUp = async () => {
    for await (const keys of client.scanStream({ match: `${prefix}*`, count: 1000 })) {
      if (keys.length > 0) await client.unlink(...keys)
    }
    await client.quit()
  }
  return { driver: redisStorage({ client, prefix }), cleanUp }
}

/** The local PostgreSQL in a schema of this process's own, which `cleanUp` drops. */
const openPostgres = async () => {
  const [{ openSqlStorage }, { default: postgres }] = await Promise.all([load('storage/sql.js'), import('postgres')])
  const schema = `modelgate_bench_${process.pid}`
  const driver = await openSqlStorage({ url: POSTGRES_URL, schema })
  const cleanUp = async () => {
    const admin = postgres(POSTGRES_URL, { max: 1, onnotice: () => {} })
    await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end({ timeout: 5 })
  }
  return { driver, cleanUp }
}

/** A store on this machine's disk, in a temporary directory of its own that `cleanUp` removes. */
const openOnDisk = async (/** @type {'sqlite' | 'file'} */ kind) => {
  const directory = await mkdtemp(join(tmpdir(), `modelgate-bench-${kind}-`))
  const driver =
    kind === 'sqlite'
      ? await (await load('storage/sqlite.js')).openSqliteStorage({ path: join(directory, 'modelgate.db') })
      : await (await load('storage/file.js')).openFileStorage({ directory })
  return { driver, cleanUp: () => rm(directory, { recursive: true, force: true }) }
}

/**
 * The store: memory, or with `BENCH_STORE=redis` or `postgres` the local server, in a namespace of this process's
 * own that `cleanUp` removes once the gateway has closed (a run killed before that leaves it: see bench/README.md),
 * or with `sqlite` or `file` a directory on disk of its own.
 */
const openStore = async () => {
  if (process.env.BENCH_STORE === 'redis') return openRedis()
  if (process.env.BENCH_STORE === 'postgres') return openPostgres()
  if (process.env.BENCH_STORE === 'sqlite' || process.env.BENCH_STORE === 'file') return openOnDisk(process.env.BENCH_STORE)
  return { driver: memoryStorage(), cleanUp: async () => {} }
}

const isLedgerOff = process.env.BENCH_LEDGER === 'off'
const opened = await openStore()
const store = countCalls(opened.driver)
const transport = undiciTransport()
const gateway = createGateway({
  storage: /** @type {any} */ (store.proxy),
  logger: false,
  transport,
  ...(isLedgerOff ? { ledger: { enabled: false } } : {}),
  providers: benchProviders(upstreamUrl),
  models: BENCH_MODELS,
})
const { key } = await gateway.admin.createKey({ kind: 'regular', name: 'bench' })

const server = createServer(toNodeListener(gateway))
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => {
  const address = /** @type {import('node:net').AddressInfo} */ (server.address())
  reportReady({ url: `http://127.0.0.1:${address.port}`, key })
})
answerStatsRequests(
  async () => {
    await new Promise((resolve) => server.close(() => resolve(undefined)))
    await transport.close()
    await gateway.close()
    await opened.cleanUp()
  },
  () => ({ storeCalls: store.counted.calls, ledgerWrites: store.counted.ledgerWrites, ledgerRecords: store.counted.ledgerRecords }),
)
