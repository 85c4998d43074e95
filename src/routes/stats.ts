/**
 * `GET /stats`: the usage ledger summed over a time range for management keys, in total and by key, model, provider
 * or workspace, with a time series, latency and time-to-first-token percentiles, error and fallback rates, and the
 * most recent generations (docs/dashboard.md). Bounded: a range of at most 31 days, within the ledger's retention,
 * and at most `STATS_RECORD_CAP` records read (past that the answer says `truncated`).
 */

import { InvalidRequestError } from '../core/errors'
import { defineRoute, json, NO_STORE } from '../pipeline/route'
import type { GenerationRecord } from '../repositories/generations'
import { bucketStarts, FigureTally, isFallback, type BucketWidth } from './stats.figures'
import { STATS_MAX_RANGE_DAYS, STATS_RECORD_CAP, StatsQuerySchema, type STATS_GROUPS } from './stats.schemas'

const DAY_MS = 86_400_000

/** Ranges up to this long are bucketed by hour unless `bucket` says otherwise: 48 points. */
const HOURLY_UP_TO_MS = 2 * DAY_MS

/** How many of the newest generations the answer lists. */
const STATS_RECENT_COUNT = 20

type Group = (typeof STATS_GROUPS)[number]

/** The value a record is grouped under; null for a request no provider served. */
const groupOf: Record<Group, (record: GenerationRecord) => string | null> = {
  key: (record) => record.keyHash,
  model: (record) => record.model,
  provider: (record) => record.provider,
  workspace: (record) => record.workspaceId,
}

const toRecentWire = (record: GenerationRecord) => ({
  id: record.id,
  created_at: record.createdAt,
  model: record.model,
  provider: record.provider,
  key_hash: record.keyHash,
  workspace_id: record.workspaceId,
  status: record.status,
  error_type: record.errorType,
  is_fallback: isFallback(record),
  cost: record.cost,
  prompt_tokens: record.tokens.input,
  completion_tokens: record.tokens.output,
  latency_ms: record.latencyMs,
  time_to_first_token_ms: record.timeToFirstTokenMs,
})

/** The newest records seen so far, newest first, kept to `count`. */
const newestOf = (count: number) => {
  let kept: GenerationRecord[] = []
  const byNewest = (a: GenerationRecord, b: GenerationRecord) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id)
  return {
    add(record: GenerationRecord) {
      kept.push(record)
      // Trimmed in batches, so a busy range is not sorted once per record.
      if (kept.length >= count * 10) kept = kept.sort(byNewest).slice(0, count)
    },
    list: () => kept.sort(byNewest).slice(0, count),
  }
}

export const getStats = defineRoute({
  method: 'GET',
  path: '/stats',
  auth: 'management',
  query: StatsQuerySchema,
  async handle({ query, caller, repositories, runtime, now }) {
    const to = query.to ?? now().toISOString()
    const asked = query.from ?? new Date(Date.parse(to) - DAY_MS).toISOString()
    if (asked >= to) throw new InvalidRequestError(`query.to: must be later than from (${asked})`)
    if (Date.parse(to) - Date.parse(asked) > STATS_MAX_RANGE_DAYS * DAY_MS) {
      throw new InvalidRequestError(`query.from: the range from..to must be at most ${STATS_MAX_RANGE_DAYS} days`)
    }
    const { ledger } = runtime
    // Records older than the ledger's retention are gone (or about to be): the range starts where they stop.
    const retainedSince = ledger?.retainedSince() ?? asked
    const from = asked < retainedSince ? (retainedSince < to ? retainedSince : to) : asked
    const bucket: BucketWidth = query.bucket ?? (Date.parse(to) - Date.parse(from) <= HOURLY_UP_TO_MS ? 'hour' : 'day')
    const total = new FigureTally(bucket)
    const groups = new Map<string | null, FigureTally>()
    const recent = newestOf(STATS_RECENT_COUNT)
    let isTruncated = false
    // With the ledger off (`ledger.enabled: false`) nothing was recorded: every figure is zero.
    if (ledger && from < to) {
      const records = repositories.generations.listBetween(caller.account.id, from, to, STATS_RECORD_CAP, () => {
        isTruncated = true
      })
      for await (const record of records) {
        total.add(record)
        recent.add(record)
        if (query.group_by === undefined) continue
        const value = groupOf[query.group_by](record)
        let group = groups.get(value)
        if (!group) {
          group = new FigureTally(bucket)
          groups.set(value, group)
        }
        group.add(record)
      }
    }
    const fromTime = Date.parse(from)
    // An account's traffic: no cache on the way keeps it.
    return json({
      data: {
        from,
        to,
        bucket,
        truncated: isTruncated,
        total: total.toWire(bucketStarts(fromTime, Math.max(fromTime, Date.parse(to)), bucket)),
        ...(query.group_by === undefined
          ? {}
          : {
              group_by: query.group_by,
              groups: [...groups.entries()]
                .sort(([a, left], [b, right]) => right.requestCount - left.requestCount || String(a).localeCompare(String(b)))
                .map(([group, tally]) => ({ group, ...tally.toWire() })),
            }),
        recent: recent.list().map(toRecentWire),
      },
    }, 200, NO_STORE)
  },
})
