/** Picks the storage driver the runner's configuration names. Drivers load only when chosen. */

import type { StorageDriver } from '../storage/contract'
import type { RunnerConfig } from './config'

/** Where credentials in a store URL are masked, for messages. */
export const describeStorage = (storage: string): string => storage.replace(/\/\/[^@/]*@/, '//***@')

export const openStorage = async (config: RunnerConfig): Promise<StorageDriver> => {
  const { storage } = config
  if (storage === 'memory') return (await import('../storage/memory')).memoryStorage()
  if (storage === 'file') return (await import('../storage/file')).openFileStorage({ directory: config.dataDir })
  if (/^rediss?:/.test(storage)) {
    const { redisStorage } = await import('../storage/redis')
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
