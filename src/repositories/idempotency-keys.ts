/**
 * Idempotency records: one per (account, route, key). Created atomically as `pending` by the first
 * request, completed with the response it produced; retries replay that response.
 */

import type { StorageDriver } from '../storage/contract'
import { isUniqueConflict } from './mutate'

export const IDEMPOTENCY_KEYS = 'idempotency_keys'

export type IdempotencyRecord = {
  id: string
  accountId: string
  /** SHA-256 of the validated request, to tell a retry from a different request reusing the key. */
  fingerprint: string
  state: 'pending' | 'completed'
  /** A pending record whose owner went silent past this time (ms) may be taken over. */
  lockedUntil: number
  /** After this time (ms) the key may be reused for anything. */
  expiresAt: number
  response: { status: number; contentType: string; body: string } | null
  createdAt: string
}

export const createIdempotencyRepository = (storage: StorageDriver) => ({
  /** Claims the key; `null` when another request holds or held it. */
  async claim(record: IdempotencyRecord) {
    try {
      return await storage.create(IDEMPOTENCY_KEYS, { id: record.id, data: record, indexes: { accountId: record.accountId } })
    } catch (error) {
      if (isUniqueConflict(error)) return null
      throw error
    }
  },
  get: (id: string) => storage.get<IdempotencyRecord>(IDEMPOTENCY_KEYS, id),
  replace: (id: string, version: number, record: IdempotencyRecord) =>
    storage.update(IDEMPOTENCY_KEYS, id, version, { id, data: record, indexes: { accountId: record.accountId } }),
  remove: (id: string, version: number) => storage.delete(IDEMPOTENCY_KEYS, id, version),
})

export type IdempotencyRepository = ReturnType<typeof createIdempotencyRepository>
