/**
 * The gateway processes that send spend settlements (docs/decisions.md, "Books that balance"): one record per process,
 * rewritten every few seconds while it lives, saying up to which period every settlement its records carry has
 * landed. A record that stopped being rewritten belongs to a process that died: another process sends again what its
 * records carry after that period, then deletes it.
 */

import { StorageConflictError } from '../core/errors'
import type { StorageDriver } from '../storage/contract'

export const SPEND_OWNERS = 'spend_owners'

export type SpendOwnerRecord = {
  /** The process's id (its spend book's owner id). */
  owner: string
  /** Unix ms, on the process's clock, when it last wrote this record. */
  heartbeatAt: number
  /** The last ten-second period through which every settlement its records carry has landed; -1 for none yet. */
  settledThrough: number
}

export interface SpendOwner {
  record: SpendOwnerRecord
  version: number
}

export const createSpendOwnersRepository = (storage: StorageDriver) => ({
  /** Writes the process's record, creating it when absent (first beat, or another process took it for dead). */
  async beat(record: SpendOwnerRecord): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = await storage.get<SpendOwnerRecord>(SPEND_OWNERS, record.owner)
      try {
        if (current) {
          if ((await storage.update(SPEND_OWNERS, record.owner, current.version, { id: record.owner, data: record })) !== null) return
        } else {
          await storage.create(SPEND_OWNERS, { id: record.owner, data: record })
          return
        }
      } catch (error) {
        // Another process deleted or wrote it meanwhile: read again.
        if (!(error instanceof StorageConflictError)) throw error
      }
    }
  },

  /** Every process that has a record. */
  async list(): Promise<SpendOwner[]> {
    const { items } = await storage.list<SpendOwnerRecord>(SPEND_OWNERS)
    return items.map((item) => ({ record: item.data, version: item.version }))
  },

  /** Deletes a process's record if it is still at `version` (not written again since it was read); resolves whether it went. */
  async remove(owner: string, version?: number): Promise<boolean> {
    try {
      return await storage.delete(SPEND_OWNERS, owner, version)
    } catch (error) {
      if (error instanceof StorageConflictError) return false
      throw error
    }
  },
})

export type SpendOwnersRepository = ReturnType<typeof createSpendOwnersRepository>
