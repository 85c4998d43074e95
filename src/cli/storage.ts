/** Picks the storage driver the runner's configuration names, and says clearly when it cannot be used. */

import { isGatewayError } from '../core/errors'
import type { StorageDriver } from '../storage/contract'
import type { RunnerConfig } from './config'

/** Where credentials in a store URL are masked, for messages. */
export const describeStorage = (storage: string): string => storage.replace(/\/\/[^@/]*@/, '//***@')

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
export type StoreKind = 'memory' | 'file' | 'redis' | 'sql'

export const storeKindOf = (storage: string): StoreKind => {
  if (storage === 'memory' || storage === 'file') return storage
  return /^rediss?:/.test(storage) ? 'redis' : 'sql'
}

/** The stores several processes may share, as the message that refuses the others lists them. */
const SHARED_STORES = 'PostgreSQL or MySQL/MariaDB (MODELGATE_STORAGE=postgres://… or mysql://…) or Redis (redis://…)'

/**
 * Whether several processes may serve from the store at once (`modelgate serve --workers`), and if not, why not:
 * the one place that knows it for each kind of store. `null` when they may.
 */
const ONE_PROCESS_ONLY: Record<StoreKind, string | null> = {
  memory: 'the memory store lives in the memory of one process',
  file: 'the embedded file store is opened by one process at a time (it holds a lock on its directory)',
  redis: null,
  sql: null,
}

export type StoreSharing = { isShared: true } | { isShared: false; why: string; instead: string }

export const storeSharing = (storage: string): StoreSharing => {
  const why = ONE_PROCESS_ONLY[storeKindOf(storage)]
  return why === null ? { isShared: true } : { isShared: false, why, instead: SHARED_STORES }
}

export const openStorage = async (config: RunnerConfig): Promise<StorageDriver> => {
  const { storage } = config
  if (storage === 'memory') return (await import('../storage/memory')).memoryStorage()
  if (storage === 'file') return (await import('../storage/file')).openFileStorage({ directory: config.dataDir, ...(config.compactAfterBytes ? { compactAfterBytes: config.compactAfterBytes } : {}) })
  if (/^rediss?:/.test(storage)) {
    const { redisStorage } = await loadRedisDriver()
    return redisStorage({ url: storage, ...(config.redisPrefix ? { prefix: config.redisPrefix } : {}) })
  }
  const { openSqlStorage } = await import('../storage/sql')
  try {
    return await openSqlStorage({ url: storage, ...(config.sqlSchema ? { schema: config.sqlSchema } : {}) })
  } catch (error) {
    const cause = (error as Error).cause instanceof Error ? `: ${describeStorage(((error as Error).cause as Error).message)}` : ''
    throw new Error(`modelgate: cannot open the store at ${describeStorage(storage)}: ${(error as Error).message}${cause}`)
  }
}

/**
 * A store outage met while starting becomes an error that names the store (password masked) and why it
 * failed: the 503 a caller would see says only "Storage is unavailable".
 */
export const explainStoreFailure = (error: unknown, config: RunnerConfig): unknown => {
  if (!isGatewayError(error) || error.status !== 503) return error
  const where = config.storage === 'file' ? `the store in ${config.dataDir}` : `the store at ${describeStorage(config.storage)}`
  const cause = error.cause instanceof Error ? `: ${describeStorage(error.cause.message)}` : ''
  return new Error(`modelgate: cannot reach ${where}${cause}`, { cause: error })
}
