import * as v from 'valibot'
import { integerQuery } from '../core/validation'
import { AUDIT_ACTIONS, AUDIT_TARGET_TYPES } from '../repositories/audit-log'
import { DateTimeSchema } from './keys.schemas'

export const AUDIT_LOG_PAGE_MAX = 100
const AUDIT_LOG_PAGE_DEFAULT = 50

const list = (values: readonly string[]) => values.map((value) => `"${value}"`).join(', ')

// Entries name keys by the first 8 hex characters of their hash: a whole hash sent as a filter means that key.
const WHOLE_HASH = /^[0-9a-f]{64}$/
const asKeyPrefix = (value: string) => (WHOLE_HASH.test(value) ? value.slice(0, 8) : value)

export const ListAuditLogQuerySchema = v.pipe(
  v.strictObject({
    limit: v.optional(integerQuery(1, AUDIT_LOG_PAGE_MAX), String(AUDIT_LOG_PAGE_DEFAULT)),
    /** The previous page's `next_cursor`: the page after it, older entries. */
    cursor: v.optional(v.pipe(v.string(), v.regex(/^[\w-]{1,400}$/, 'must be a cursor from next_cursor'))),
    action: v.optional(v.picklist(AUDIT_ACTIONS, `must be one of ${list(AUDIT_ACTIONS)}`)),
    target_type: v.optional(v.picklist(AUDIT_TARGET_TYPES, `must be one of ${list(AUDIT_TARGET_TYPES)}`)),
    /** As entries name targets: a key by the first 8 hex characters of its hash (or its whole hash), others by their id. */
    target_id: v.optional(
      v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(200, 'must be at most 200 characters'), v.transform(asKeyPrefix)),
    ),
    /** The acting key's hash prefix (8 hex characters, or its whole hash), or `operator` for `gateway.admin` and the CLI. */
    actor: v.optional(
      v.pipe(
        v.string(),
        v.regex(/^(?:[0-9a-f]{8}|[0-9a-f]{64}|operator)$/, 'must be a key hash or its first 8 characters (lowercase hex), or "operator"'),
        v.transform(asKeyPrefix),
      ),
    ),
    /** Entries at or after this instant. */
    from: v.optional(DateTimeSchema),
    /** Entries at or before this instant. */
    to: v.optional(DateTimeSchema),
  }),
  v.forward(
    v.check((query) => query.from === undefined || query.to === undefined || query.from <= query.to, 'must not be before query.from'),
    ['to'],
  ),
)
