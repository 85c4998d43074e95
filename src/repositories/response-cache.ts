/**
 * The response cache's entries (docs/decisions.md, Response cache): one record per workspace and request key, holding a
 * whole answer until it expires. Records carry their own expiry (the storage contract has none for records): a read
 * of an expired entry is a miss and removes it, and every fill sweeps its workspace's expired entries and evicts the
 * oldest until the workspace is within its caps.
 */

import { StorageConflictError } from '../core/errors'
import type { JsonObject, StorageDriver } from '../storage/contract'

export const RESPONSE_CACHE = 'response_cache'
/** The semantic cache's prompt embeddings, one per entry, newest first per workspace and request shape. */
export const RESPONSE_CACHE_VECTORS = 'response_cache_vectors'

/**
 * A workspace's or key's `cache` default: answers are kept this long unless a request says otherwise; a workspace's
 * `semantic` also answers requests close in meaning to a stored one.
 */
export type ResponseCacheSetting = { ttlSeconds: number; semantic?: boolean }

export type ResponseCacheVectorRecord = {
  workspaceId: string
  /** The hash of everything in the request but its prompt: only requests of the same shape are compared. */
  shape: string
  /** The exact entry whose prompt this is. */
  entryId: string
  vector: number[]
  storedAt: number
}

export type ResponseCacheRecord = {
  workspaceId: string
  /** When it was stored and when it stops being served, in ms since the epoch. */
  storedAt: number
  expiresAt: number
  /** The size of `answer` as JSON text, in bytes of UTF-16 code units (what the caps count). */
  size: number
  answer: JsonObject
}

/** The limits a fill keeps a workspace within. */
export interface ResponseCacheCaps {
  /** The largest answer kept, as JSON text; a larger one is not stored. */
  maxEntryBytes: number
  /** What a workspace's entries may hold together, and how many there may be. */
  maxWorkspaceBytes: number
  maxWorkspaceEntries: number
}

// Oldest first, as listing is ascending by sort key: the workspace's eviction order.
const storedOrder = (storedAt: number) => storedAt.toString().padStart(16, '0')
// Newest first, for the vectors a lookup compares: the key counts down with time.
const NEWEST_FIRST_BASE = 10 ** 15
const newestFirst = (storedAt: number) => (NEWEST_FIRST_BASE - storedAt).toString().padStart(16, '0')

/** Entries read per page when a workspace is swept or cleared. */
const PAGE = 500

export const createResponseCacheRepository = (storage: StorageDriver) => {
  /** Every entry of the workspace, oldest first. */
  const entriesOf = async (workspaceId: string) => (await storage.list<ResponseCacheRecord>(RESPONSE_CACHE, { where: { workspaceId } })).items

  return {
    /** The entry under `id` while it is fresh; an expired one is removed and reads as absent. */
    async get(id: string, now: number): Promise<ResponseCacheRecord | null> {
      const stored = await storage.get<ResponseCacheRecord>(RESPONSE_CACHE, id)
      if (!stored) return null
      if (stored.data.expiresAt > now) return stored.data
      await storage.delete(RESPONSE_CACHE, id, stored.version).catch(() => undefined)
      return null
    },

    /**
     * Stores `answer` under `id` for `ttlMs` (replacing an entry there), then keeps the workspace within `caps`:
     * expired entries go, then the oldest until both caps hold. Resolves `false` when the answer was too large to keep.
     */
    async put(id: string, workspaceId: string, answer: JsonObject, ttlMs: number, now: number, caps: ResponseCacheCaps): Promise<boolean> {
      const size = JSON.stringify(answer).length
      if (size > caps.maxEntryBytes) return false
      const record: ResponseCacheRecord = { workspaceId, storedAt: now, expiresAt: now + ttlMs, size, answer }
      const input = { id, data: record, isDataHandedOver: true, indexes: { workspaceId }, sortKey: storedOrder(now) }
      await storage.delete(RESPONSE_CACHE, id)
      try {
        await storage.create(RESPONSE_CACHE, input)
      } catch (error) {
        // Another request filled the same key meanwhile: its answer is as good as this one.
        if (error instanceof StorageConflictError) return true
        throw error
      }
      let bytes = 0
      let count = 0
      const kept: Array<{ id: string; size: number }> = []
      for (const entry of await entriesOf(workspaceId)) {
        if (entry.data.expiresAt <= now) {
          await storage.delete(RESPONSE_CACHE, entry.id).catch(() => undefined)
          continue
        }
        kept.push({ id: entry.id, size: entry.data.size })
        bytes += entry.data.size
        count++
      }
      for (const entry of kept) {
        if (bytes <= caps.maxWorkspaceBytes && count <= caps.maxWorkspaceEntries) break
        await storage.delete(RESPONSE_CACHE, entry.id).catch(() => undefined)
        bytes -= entry.size
        count--
      }
      return true
    },

    /** The prompt embeddings of the workspace's `limit` most recent entries of `shape`, newest first. */
    async recentVectors(workspaceId: string, shape: string, limit: number): Promise<ResponseCacheVectorRecord[]> {
      return (await storage.list<ResponseCacheVectorRecord>(RESPONSE_CACHE_VECTORS, { where: { workspaceId, shape }, limit })).items.map((item) => item.data)
    },

    /** Keeps the prompt embedding of entry `entryId`; only the `keepLast` most recent of its workspace and shape stay. */
    async putVector(record: ResponseCacheVectorRecord, keepLast: number): Promise<void> {
      const { workspaceId, shape } = record
      await storage.delete(RESPONSE_CACHE_VECTORS, record.entryId)
      await storage.create(RESPONSE_CACHE_VECTORS, { id: record.entryId, data: record, isDataHandedOver: true, indexes: { workspaceId, shape }, sortKey: newestFirst(record.storedAt) })
      const { items } = await storage.list<ResponseCacheVectorRecord>(RESPONSE_CACHE_VECTORS, { where: { workspaceId, shape }, offset: keepLast })
      for (const stale of items) await storage.delete(RESPONSE_CACHE_VECTORS, stale.id).catch(() => undefined)
    },

    /** Removes every entry of the workspace, and their embeddings; resolves with how many entries there were. */
    async clear(workspaceId: string): Promise<number> {
      let removed = 0
      for (;;) {
        const { items } = await storage.list<ResponseCacheRecord>(RESPONSE_CACHE, { where: { workspaceId }, limit: PAGE })
        if (items.length === 0) break
        for (const entry of items) if (await storage.delete(RESPONSE_CACHE, entry.id)) removed++
      }
      for (;;) {
        const { items } = await storage.list(RESPONSE_CACHE_VECTORS, { where: { workspaceId }, limit: PAGE })
        if (items.length === 0) return removed
        for (const vector of items) await storage.delete(RESPONSE_CACHE_VECTORS, vector.id)
      }
    },
  }
}

export type ResponseCacheRepository = ReturnType<typeof createResponseCacheRepository>
