/**
 * Stored responses (docs/decisions.md, Stored responses): a `/responses` answer kept with what it was asked, under the
 * workspace of the key that asked, until its retention runs out or it is deleted. Listing is oldest first by creation,
 * so the retention sweep deletes from the front, as the usage ledger's does.
 */

import type { SealedSecret } from '../core/secrets'
import type { JsonObject, JsonValue, RecordInput, StorageDriver } from '../storage/contract'
import { creationSortKey } from './sort-key'

export const STORED_RESPONSES = 'stored_responses'

/**
 * What a stored response holds: the Response object as answered, this request's input items, and the conversation
 * before them (the stored context of the response it continued, its input and its output).
 */
export type StoredResponseContent = {
  response: JsonObject
  input: JsonValue[]
  history: JsonValue[]
}

export type StoredResponseRecord = {
  id: string
  accountId: string
  workspaceId: string
  createdAt: string
  /**
   * The content, readable where the workspace keeps content readable (its I/O logging), else sealed with the gateway's
   * encryption key and bound to this record (src/core/secrets.ts).
   */
  content: { plain: StoredResponseContent } | { sealed: SealedSecret }
  sortKey: string
}

const toInput = (record: StoredResponseRecord): RecordInput<StoredResponseRecord> => ({
  id: record.id,
  data: record,
  indexes: { workspaceId: record.workspaceId },
  sortKey: record.sortKey,
})

export const createStoredResponsesRepository = (storage: StorageDriver) => ({
  /** Keeps a response; a second write of one id keeps the first (a retried store step changes nothing). */
  async save(record: Omit<StoredResponseRecord, 'sortKey'>): Promise<void> {
    await storage.createMany(STORED_RESPONSES, [toInput({ ...record, sortKey: creationSortKey(record.createdAt) })])
  },

  async get(id: string): Promise<StoredResponseRecord | null> {
    return (await storage.get<StoredResponseRecord>(STORED_RESPONSES, id))?.data ?? null
  },

  /** Whether the response was there to delete. */
  delete(id: string): Promise<boolean> {
    return storage.delete(STORED_RESPONSES, id)
  },

  /**
   * Deletes up to `limit` of the oldest responses created before `before` (ISO 8601). Resolves with how many went, and
   * whether older ones may remain (the page was all expired).
   */
  async deleteOlderThan(before: string, limit: number): Promise<{ deleted: number; hasMore: boolean }> {
    const page = await storage.list<StoredResponseRecord>(STORED_RESPONSES, { limit })
    const expired = page.items.filter((item) => item.data.createdAt < before)
    // Another process sweeping the same responses deletes some first; `delete` then answers false, which is fine.
    const outcomes = await Promise.all(expired.map((item) => storage.delete(STORED_RESPONSES, item.id)))
    return { deleted: outcomes.filter(Boolean).length, hasMore: expired.length === limit && expired.length > 0 }
  },
})

export type StoredResponsesRepository = ReturnType<typeof createStoredResponsesRepository>
