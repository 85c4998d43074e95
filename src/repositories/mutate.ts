/** Read-modify-write over the storage contract's compare-and-set, retried when another writer won. */

import { StorageConflictError } from '../core/errors'
import type { JsonObject, RecordInput, StorageDriver, StoredRecord } from '../storage/contract'

const MAX_ATTEMPTS = 8

/**
 * Applies `change` to the current record and writes it with compare-and-set, re-reading and
 * re-applying on a version conflict. `change` must be a pure function of the record it is given.
 * Resolves `null` when the record does not exist (or `change` returns `null` to abort).
 */
export const updateRecord = async <T extends JsonObject>(
  storage: StorageDriver,
  collection: string,
  id: string,
  change: (current: StoredRecord<T>) => RecordInput<T> | null,
): Promise<StoredRecord<T> | null> => {
  for (let attempt = 1; ; attempt++) {
    const current = await storage.get<T>(collection, id)
    if (!current) return null
    const next = change(current)
    if (!next) return null
    try {
      return await storage.update(collection, id, current.version, next)
    } catch (error) {
      const isLostRace = error instanceof StorageConflictError && error.kind === 'version'
      if (!isLostRace || attempt >= MAX_ATTEMPTS) throw error
    }
  }
}

/** True when `error` is a storage unique-key conflict. */
export const isUniqueConflict = (error: unknown): boolean =>
  error instanceof StorageConflictError && error.kind === 'unique'

/** Drops `undefined` entries, so "omitted" never overwrites a stored value (omitted means unchanged). */
export const withoutUndefined = <T extends object>(value: T): Partial<T> =>
  Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as Partial<T>
