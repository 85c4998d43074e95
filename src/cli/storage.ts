/** Picks the storage driver the runner's configuration names, and says clearly when it cannot be used. */

import { resolve } from 'node:path'
import { isGatewayError } from '../core/errors'
import type { Logger } from '../core/logger'
import type { StorageDriver } from '../storage/contract'
import { ensurePrivateDirectory } from '../storage/private-files'
import type { RunnerConfig } from './config'

/** Where credentials in a store URL are masked, for messages. */
export const describeStorage = (storage: string): string => storage.replace(/\/\/[^@/]*@/, '//***@')

/** The file of the SQLite store: `<dataDir>/modelgate.db`, or the path after `sqlite:`; `undefined` for other stores. */
export const sqlitePathOf = (config: Pick<RunnerConfig, 'storage' | 'dataDir'>): string | undefined => {
  if (config.storage === 'sqlite') return resolve(config.dataDir, 'modelgate.db')
  if (!config.storage.startsWith('sqlite:')) return undefined
  // `sqlite:///var/lib/x.db` as URLs spell it, or simply `sqlite:/var/lib/x.db`.
  const path = config.storage.slice('sqlite:'.length)
  return resolve(path.startsWith('//') ? path.slice(2) : path)
}

const isMissingPackage = (error: unknown, name: string): boolean => {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && typeof message === 'string' && message.includes(`'${name}'`)
}

// The Redis driver is the one module that imports ioredis, an optional peer dependency.
const loadRedisDriver = async () => {
  try {
    return await import('../storage/redis')
  } catch (error) {
    if (!isMissingPackage(error, 'ioredis')) throw error
    throw new Error('modelgate: redis:// storage needs the "ioredis" package; install it with npm install ioredis', { cause: error })
  }
}

/** The kinds of store the runner opens, as `MODELGATE_STORAGE` names them. */
export type StoreKind = 'memory' | 'file' | 'sqlite' | 'redis' | 'sql'

export const storeKindOf = (storage: string): StoreKind => {
  if (storage === 'memory' || storage === 'file') return storage
  if (storage === 'sqlite' || storage.startsWith('sqlite:')) return 'sqlite'
  return /^rediss?:/.test(storage) ? 'redis' : 'sql'
}

/** The stores several processes may share, as the message that refuses the others lists them. */
const SHARED_STORES =
  'the embedded SQLite store (MODELGATE_STORAGE=sqlite, the default), PostgreSQL or MySQL/MariaDB (postgres://… or mysql://…) or Redis (redis://…)'

/**
 * Whether several processes may serve from the store at once (`modelgate serve --workers`), and if not, why not:
 * the one place that knows it for each kind of store. `null` when they may.
 */
const ONE_PROCESS_ONLY: Record<StoreKind, string | null> = {
  memory: 'the memory store lives in the memory of one process',
  file: 'the embedded file store is opened by one process at a time (it holds a lock on its directory)',
  // SQLite's write-ahead log lets the processes of one machine share its file.
  sqlite: null,
  redis: null,
  sql: null,
}

export type StoreSharing = { isShared: true } | { isShared: false; why: string; instead: string }

export const storeSharing = (storage: string): StoreSharing => {
  const why = ONE_PROCESS_ONLY[storeKindOf(storage)]
  return why === null ? { isShared: true } : { isShared: false, why, instead: SHARED_STORES }
}

const causeOf = (error: unknown): string => ((error as Error).cause instanceof Error ? `: ${describeStorage(((error as Error).cause as Error).message)}` : '')

/**
 * Opens the SQLite store. An embedded file store that an earlier version kept in the data directory moves into it
 * first, once (src/storage/sql/sqlite-import.ts), with one line in the log.
 */
const openSqlite = async (config: RunnerConfig, path: string, logger: Logger): Promise<StorageDriver> => {
  const { importFileStore, openSqliteStorage } = await import('../storage/sqlite')
  // The data directory holds the store: owner-only, as the embedded store's was.
  if (config.storage === 'sqlite') await ensurePrivateDirectory(config.dataDir)
  let moved
  try {
    moved = await importFileStore({ directory: config.dataDir, path })
  } catch (error) {
    throw new Error(`modelgate: cannot move the embedded store in ${resolve(config.dataDir)} into ${path}: ${(error as Error).message}${causeOf(error)}`, {
      cause: error,
    })
  }
  if (moved) {
    const records = Object.values(moved.records).reduce((sum, count) => sum + count, 0)
    logger.info(moved.isNew ? 'moved the embedded store into the SQLite store' : 'moved aside the embedded store an earlier start had copied into the SQLite store', {
      path,
      records,
      counters: moved.counters,
      tallies: moved.tallies,
      releasedHolds: moved.releasedHolds,
      backupDirectory: moved.backupDirectory,
    })
  }
  try {
    return await openSqliteStorage({ path })
  } catch (error) {
    throw new Error(`modelgate: cannot open the store at ${path}: ${(error as Error).message}${causeOf(error)}`, { cause: error })
  }
}

export const openStorage = async (config: RunnerConfig, logger: Logger): Promise<StorageDriver> => {
  const { storage } = config
  const sqlitePath = sqlitePathOf(config)
  if (sqlitePath !== undefined) return openSqlite(config, sqlitePath, logger)
  if (storage === 'memory') return (await import('../storage/memory')).memoryStorage({ logger })
  if (storage === 'file') return (await import('../storage/file')).openFileStorage({ directory: config.dataDir, ...(config.compactAfterBytes ? { compactAfterBytes: config.compactAfterBytes } : {}) })
  if (/^rediss?:/.test(storage)) {
    const { redisStorage } = await loadRedisDriver()
    return redisStorage({ url: storage, ...(config.redisPrefix ? { prefix: config.redisPrefix } : {}) })
  }
  const { openSqlStorage } = await import('../storage/sql')
  try {
    return await openSqlStorage({ url: storage, ...(config.sqlSchema ? { schema: config.sqlSchema } : {}) })
  } catch (error) {
    throw new Error(`modelgate: cannot open the store at ${describeStorage(storage)}: ${(error as Error).message}${causeOf(error)}`)
  }
}

/**
 * A store outage met while starting becomes an error that names the store (password masked) and why it
 * failed: the 503 a caller would see says only "Storage is unavailable".
 */
export const explainStoreFailure = (error: unknown, config: RunnerConfig): unknown => {
  if (!isGatewayError(error) || error.status !== 503) return error
  const sqlitePath = sqlitePathOf(config)
  const where =
    sqlitePath !== undefined
      ? `the store in ${sqlitePath}`
      : config.storage === 'file'
        ? `the store in ${config.dataDir}`
        : `the store at ${describeStorage(config.storage)}`
  const cause = error.cause instanceof Error ? `: ${describeStorage(error.cause.message)}` : ''
  return new Error(`modelgate: cannot reach ${where}${cause}`, { cause: error })
}
