/**
 * Background responses (docs/decisions.md, Background runs): a `/responses` run detached from its HTTP request, its
 * state on one record per response (status, the lease of the process running it, a cancel flag, what it was asked),
 * and the events it streamed in chunks of a few, so that any gateway on the store can poll it, replay its events,
 * cancel it or take it over when its process died.
 */

import type { SealedSecret } from '../core/secrets'
import type { JsonObject, JsonValue, StorageDriver } from '../storage/contract'
import { updateRecord } from './mutate'
import { creationSortKey } from './sort-key'

export const BACKGROUND_RUNS = 'background_runs'
export const BACKGROUND_EVENTS = 'background_events'

export type BackgroundStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'incomplete' | 'cancelled'

/** What a run needs to run again, and the Response object as it stands (queued, then final). */
export type BackgroundRunContent = {
  /** The request body as the engine runs it (`previous_response_id` already resolved into `history`). */
  request: JsonObject
  input: JsonValue[]
  history: JsonValue[]
  response: JsonObject
}

export type BackgroundRunRecord = {
  id: string
  accountId: string
  workspaceId: string
  /** The key the run spends for: a run taken over by another process is billed to the same key. */
  keyHash: string
  createdAt: string
  status: BackgroundStatus
  /** The current run of the response: a takeover starts a new one, and only that one may change the record. */
  runId: string
  lease: { holder: string; expiresAt: string } | null
  /** Set by a cancel; the process running it stops at its next heartbeat (at once when it is the same process). */
  isCancelRequested: boolean
  /** The usage ledger's id of the current run's generation, once it started: what a takeover checks was billed. */
  generationId: string | null
  /** Events persisted so far, in chunks numbered from 0. */
  eventCount: number
  chunkCount: number
  content: { plain: BackgroundRunContent } | { sealed: SealedSecret }
  sortKey: string
}

/** A chunk of a run's events, as sealed or readable as its run's content. */
export type BackgroundEventChunk = {
  id: string
  responseId: string
  runId: string
  /** The chunk's position among its run's chunks. */
  index: number
  /** The `sequence_number` of its first event. */
  firstSequence: number
  events: { plain: JsonObject[] } | { sealed: SealedSecret }
}

const chunkId = (responseId: string, index: number) => `${responseId}.${index.toString().padStart(8, '0')}`

const toInput = (record: BackgroundRunRecord) => ({
  id: record.id,
  data: record,
  indexes: { status: record.status },
  sortKey: record.sortKey,
})

export const createBackgroundRunsRepository = (storage: StorageDriver) => ({
  async create(record: Omit<BackgroundRunRecord, 'sortKey'>): Promise<BackgroundRunRecord> {
    const full = { ...record, sortKey: creationSortKey(record.createdAt) }
    await storage.create(BACKGROUND_RUNS, toInput(full))
    return full
  },

  async get(id: string): Promise<BackgroundRunRecord | null> {
    return (await storage.get<BackgroundRunRecord>(BACKGROUND_RUNS, id))?.data ?? null
  },

  /** Compare-and-set; `change` returns `null` to leave the record alone (then resolves `null`). */
  async update(id: string, change: (current: BackgroundRunRecord) => BackgroundRunRecord | null): Promise<BackgroundRunRecord | null> {
    const record = await updateRecord<BackgroundRunRecord>(storage, BACKGROUND_RUNS, id, (current) => {
      const next = change(current.data)
      return next ? toInput(next) : null
    })
    return record?.data ?? null
  },

  async listByStatus(status: BackgroundStatus, offset: number, limit: number): Promise<BackgroundRunRecord[]> {
    return (await storage.list<BackgroundRunRecord>(BACKGROUND_RUNS, { where: { status }, offset, limit })).items.map((item) => item.data)
  },

  /** Keeps a chunk; a second write of one position keeps the first. */
  async appendChunk(chunk: BackgroundEventChunk): Promise<void> {
    await storage.createMany(BACKGROUND_EVENTS, [{ id: chunk.id, data: chunk, indexes: { responseId: chunk.responseId }, sortKey: chunk.id }])
  },

  chunkId,

  /** The chunks of `responseId` from position `from` on, in order. */
  async chunksFrom(responseId: string, from: number, count: number): Promise<BackgroundEventChunk[]> {
    const reads = await Promise.all(Array.from({ length: Math.max(0, count - from) }, (_, offset) => storage.get<BackgroundEventChunk>(BACKGROUND_EVENTS, chunkId(responseId, from + offset))))
    return reads.flatMap((read) => (read ? [read.data] : []))
  },

  /**
   * Deletes up to `limit` of the oldest runs (record and events) created before `before` (ISO 8601). Resolves with how
   * many went, and whether older ones may remain (the page was all expired).
   */
  async deleteOlderThan(before: string, limit: number): Promise<{ deleted: number; hasMore: boolean }> {
    const page = await storage.list<BackgroundRunRecord>(BACKGROUND_RUNS, { limit })
    const expired = page.items.filter((item) => item.data.createdAt < before)
    // Another process sweeping the same runs deletes some first; `delete` then answers false, which is fine.
    const outcomes = await Promise.all(expired.map((item) => this.delete(item.id)))
    return { deleted: outcomes.filter(Boolean).length, hasMore: expired.length === limit && expired.length > 0 }
  },

  /** Removes a run's record and its events. */
  async delete(id: string): Promise<boolean> {
    const record = await this.get(id)
    if (!record) return false
    await Promise.all(Array.from({ length: record.chunkCount }, (_, index) => storage.delete(BACKGROUND_EVENTS, chunkId(id, index))))
    return storage.delete(BACKGROUND_RUNS, id)
  },
})

export type BackgroundRunsRepository = ReturnType<typeof createBackgroundRunsRepository>
