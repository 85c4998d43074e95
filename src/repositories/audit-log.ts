/**
 * The audit log's entries: one per administrative change (docs/decisions.md, Audit log), written once and kept until
 * the retention sweep. The store lists a collection oldest first only (by sort key, then id) with equality filters
 * and offsets, so the newest-first pages the routes serve are cut from the end of that order: the boundaries a cursor
 * or a time range set are found by binary search over offsets, a few one-record reads each, and the page is then one
 * read. The retention sweep deletes from the front, as the usage ledger's does.
 */

import type { JsonObject, RecordInput, StorageDriver, StoredRecord } from '../storage/contract'
import { creationSortKey } from './sort-key'

export const AUDIT_LOG = 'audit_log'

/** Every action an entry may name: what was changed and how. One per mutating management route or admin call. */
export const AUDIT_ACTIONS = [
  'account.create',
  'account.update_flags',
  'key.create',
  'key.update',
  'key.revoke',
  'key.delete',
  'byok.create',
  'byok.update',
  'byok.delete',
  'byok.reseal',
  'workspace.create',
  'workspace.update',
  'workspace.delete',
  'workspace_budget.set',
  'workspace_budget.delete',
  'workspace.clear_response_cache',
  'guardrail.create',
  'guardrail.update',
  'guardrail.delete',
  'guardrail.assign_keys',
  'guardrail.unassign_keys',
  'guardrail.assign_members',
  'guardrail.unassign_members',
  'credits.grant',
  'preset.save',
  'intern.create',
  'intern.update',
  'intern.provision',
  'intern.suspend',
  'intern.delete',
] as const

export type AuditAction = (typeof AUDIT_ACTIONS)[number]

/** What an entry's target may be. */
export const AUDIT_TARGET_TYPES = [
  'account',
  'key',
  'byok_credential',
  'byok_credentials',
  'workspace',
  'workspace_budget',
  'guardrail',
  'credit_grant',
  'preset',
  'intern',
] as const

export type AuditTargetType = (typeof AUDIT_TARGET_TYPES)[number]

/** Who acted: a key (its kind and the first 8 hex characters of its hash, never more) or the operator (`gateway.admin`, the CLI). */
export type AuditActor = { keyPrefix: string | null; kind: 'management' | 'regular' | 'operator' }

export type AuditEntryRecord = {
  id: string
  /** ISO 8601 on the gateway's clock. */
  createdAt: string
  actor: AuditActor
  action: AuditAction
  target: { type: AuditTargetType; id: string }
  /** The account the change belongs to; null for a change across the whole gateway (re-sealing BYOK keys). */
  accountId: string | null
  workspaceId: string | null
  /** The changed fields and their new values, secrets replaced by `[redacted]` (src/services/audit-log.ts). */
  changes: JsonObject
  /** The request that made the change; null for the operator's calls. */
  requestId: string | null
  sortKey: string
}

/** The equality filters a listing may combine; `accountId` always. */
export type AuditFilter = { accountId: string; action?: string; targetType?: string; targetId?: string; actor?: string }

/** A place in the store's order: an entry's sort key and id. */
export type AuditPosition = { sortKey: string; id: string }

/** How an actor is filtered: by its key prefix, or `operator`. */
export const actorIndex = (actor: AuditActor): string => actor.keyPrefix ?? actor.kind

const toInput = (entry: AuditEntryRecord): RecordInput<AuditEntryRecord> => ({
  id: entry.id,
  data: entry,
  indexes: {
    ...(entry.accountId === null ? {} : { accountId: entry.accountId }),
    action: entry.action,
    targetType: entry.target.type,
    targetId: entry.target.id,
    actor: actorIndex(entry.actor),
  },
  // ISO 8601 in UTC sorts as time does; a per-process sequence keeps one millisecond's entries in order.
  sortKey: entry.sortKey,
})

const whereOf = (filter: AuditFilter): Record<string, string> =>
  Object.fromEntries(Object.entries(filter).filter(([, value]) => value !== undefined)) as Record<string, string>

/** Store order: by sort key, then id, both by UTF-16 code units as the contract compares them. */
const compare = (left: AuditPosition, right: AuditPosition): number =>
  left.sortKey !== right.sortKey ? (left.sortKey < right.sortKey ? -1 : 1) : left.id === right.id ? 0 : left.id < right.id ? -1 : 1

export interface AuditPageQuery {
  /** Entries at or after this instant (ISO 8601, `toISOString` form). */
  from?: string
  /** Entries at or before this instant. */
  to?: string
  /** Only entries older than this place: the previous page's last entry. */
  before?: AuditPosition
  limit: number
}

export const createAuditLogRepository = (storage: StorageDriver) => {
  const readAt = async (where: Record<string, string>, offset: number): Promise<StoredRecord<AuditEntryRecord> | undefined> =>
    (await storage.list<AuditEntryRecord>(AUDIT_LOG, { where, offset, limit: 1 })).items[0]

  /**
   * The first offset in [low, high) whose entry passes `isAtOrPast`, which is false and then true along the store's
   * order; `high` when none does. An entry gone since the count (swept) reads as past the end.
   */
  const firstIndex = async (where: Record<string, string>, low: number, high: number, isAtOrPast: (entry: StoredRecord<AuditEntryRecord>) => boolean) => {
    while (low < high) {
      const middle = Math.floor((low + high) / 2)
      const entry = await readAt(where, middle)
      if (!entry || isAtOrPast(entry)) high = middle
      else low = middle + 1
    }
    return low
  }

  return {
    /** Stores one entry, with its sort key made here from its creation time. */
    async append(entry: Omit<AuditEntryRecord, 'sortKey'>): Promise<AuditEntryRecord> {
      return (await storage.create(AUDIT_LOG, toInput({ ...entry, sortKey: creationSortKey(entry.createdAt) }))).data
    },

    /**
     * One page of the entries matching `filter`, newest first, and whether older ones match too. Entries written while
     * pages are read land after the first page's start and never shift a later page (a page is cut before a place, not
     * at an offset).
     */
    async page(filter: AuditFilter, query: AuditPageQuery): Promise<{ entries: AuditEntryRecord[]; hasMore: boolean }> {
      const where = whereOf(filter)
      const total = (await storage.list<AuditEntryRecord>(AUDIT_LOG, { where, limit: 0 })).totalCount
      const { from, to, before } = query
      const start = from === undefined ? 0 : await firstIndex(where, 0, total, (entry) => entry.data.createdAt >= from)
      let end = total
      if (to !== undefined) end = await firstIndex(where, start, end, (entry) => entry.data.createdAt > to)
      if (before !== undefined) end = await firstIndex(where, start, end, (entry) => compare(entry, before) >= 0)
      const offset = Math.max(start, end - query.limit)
      if (end <= offset) return { entries: [], hasMore: false }
      const items = (await storage.list<AuditEntryRecord>(AUDIT_LOG, { where, offset, limit: end - offset })).items
      // An entry that moved into the window while it was found (a sweep between the reads) is left out, never shown twice.
      const inRange = items.filter(
        (item) =>
          (from === undefined || item.data.createdAt >= from) &&
          (to === undefined || item.data.createdAt <= to) &&
          (before === undefined || compare(item, before) < 0),
      )
      return { entries: inRange.reverse().map((item) => item.data), hasMore: offset > start }
    },

    /**
     * Deletes up to `limit` of the oldest entries created before `before` (ISO 8601). Resolves with how many went, and
     * whether older entries may remain (the page was all expired).
     */
    async deleteOlderThan(before: string, limit: number): Promise<{ deleted: number; hasMore: boolean }> {
      const page = await storage.list<AuditEntryRecord>(AUDIT_LOG, { limit })
      const expired = page.items.filter((item) => item.data.createdAt < before)
      // Another process sweeping the same entries deletes some first; `delete` then answers false, which is fine.
      const outcomes = await Promise.all(expired.map((item) => storage.delete(AUDIT_LOG, item.id)))
      return { deleted: outcomes.filter(Boolean).length, hasMore: expired.length === limit && expired.length > 0 }
    },
  }
}

export type AuditLogRepository = ReturnType<typeof createAuditLogRepository>
