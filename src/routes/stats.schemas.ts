import * as v from 'valibot'

/** The longest range one `GET /stats` covers: a month of hours is 744 buckets, of days 31. */
export const STATS_MAX_RANGE_DAYS = 31

/** The most ledger records one `GET /stats` reads; past it the answer says `truncated: true` (docs/dashboard.md). */
export const STATS_RECORD_CAP = 100_000

/** What the figures can be broken down by: the calling key (its hash), the served model, the provider, the workspace. */
export const STATS_GROUPS = ['key', 'model', 'provider', 'workspace'] as const

export const STATS_BUCKETS = ['hour', 'day'] as const

// An instant with its zone, as `Date#toISOString` writes it or any RFC 3339 offset: a bare date or local time is
// ambiguous, so it is refused rather than read in the gateway's zone.
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/

const TimestampSchema = v.pipe(
  v.string(),
  v.regex(TIMESTAMP, 'must be an ISO 8601 time with its zone, with a Z or an offset such as +02:00'),
  v.check((value) => !Number.isNaN(Date.parse(value)), 'must be a real time'),
  v.transform((value) => new Date(Date.parse(value)).toISOString()),
)

// Unknown parameters are refused (strict): a filter that would be ignored must not look applied. The checks between
// `from` and `to` are the route's, made once the defaults are read from the gateway's clock.
export const StatsQuerySchema = v.strictObject({
  /** Start of the range, inclusive (default: a day before `to`). */
  from: v.optional(TimestampSchema),
  /** End of the range, exclusive (default: now). */
  to: v.optional(TimestampSchema),
  /** Breaks the figures down by one dimension as well as totalling them. */
  group_by: v.optional(v.picklist(STATS_GROUPS, `must be one of ${STATS_GROUPS.join(', ')}`)),
  /** Width of the time series' buckets (default: hour for ranges up to two days, day beyond). */
  bucket: v.optional(v.picklist(STATS_BUCKETS, 'must be hour or day')),
})
