import * as v from 'valibot'
import { SHA256_HEX_PATTERN, UUID_PATTERN } from '../core/patterns'
import { booleanQuery, integerQuery } from '../core/validation'
import { CacheSettingSchema } from './response-cache.schemas'

export const KEY_NAME_MAX = 255
export const KEYS_PAGE_MAX = 100
/** spec BYOK `allowed_user_ids`: each entry at most 256 characters; a key's user must fit one. */
export const USER_ID_MAX = 256

/** A user id, as a key's `creator_user_id` and in a credential's `allowed_user_ids`. */
export const UserIdSchema = v.pipe(
  v.string(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(USER_ID_MAX, `must be at most ${USER_ID_MAX} characters`),
)

const KeyNameSchema = v.pipe(
  v.string(),
  v.trim(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(KEY_NAME_MAX, `must be at most ${KEY_NAME_MAX} characters`),
)

export const KeyParamsSchema = v.strictObject({
  hash: v.pipe(v.string(), v.regex(SHA256_HEX_PATTERN, 'must be the key hash: 64 lowercase hex characters')),
})

export const ListKeysQuerySchema = v.strictObject({
  offset: v.optional(integerQuery(0, Number.MAX_SAFE_INTEGER), '0'),
  limit: v.optional(integerQuery(1, KEYS_PAGE_MAX), String(KEYS_PAGE_MAX)),
  include_disabled: v.optional(booleanQuery(), 'false'),
  // `@openrouter/sdk`'s `apiKeys.list` filter: only the keys bound to this workspace (every key when omitted).
  workspace_id: v.optional(v.pipe(v.string(), v.regex(UUID_PATTERN, 'must be a workspace id (a UUID)'))),
})

/** The largest spending limit a key may have, in USD (counters stay exact up to about 9 million). */
export const KEY_LIMIT_MAX = 1_000_000

/** A key's spending limit in USD; `null` for none. */
export const KeyLimitSchema = v.nullable(
  v.pipe(v.number(), v.minValue(0, 'must be at least 0'), v.maxValue(KEY_LIMIT_MAX, `must be at most ${KEY_LIMIT_MAX}`)),
)

/** When the limit starts again: UTC calendar days, weeks (from Monday) or months; `null`: never. */
export const LimitResetSchema = v.nullable(v.picklist(['daily', 'weekly', 'monthly'], 'must be "daily", "weekly", "monthly" or null'))

// As OpenRouter takes it: seconds required (fractions allowed), and a time zone.
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/

// Date.parse rolls 2099-02-30 over into March: the fields must survive a round trip to be a real date and time.
const isRealDateTime = (value: string): boolean => {
  const [year, month, day, hour, minute, second] = value.split(/[-T:.Z+]/).map(Number) as [number, number, number, number, number, number]
  const time = new Date(Date.UTC(year, month - 1, day, hour, minute, second))
  return (
    time.getUTCFullYear() === year &&
    time.getUTCMonth() === month - 1 &&
    time.getUTCDate() === day &&
    time.getUTCHours() === hour &&
    time.getUTCMinutes() === minute &&
    time.getUTCSeconds() === second
  )
}

/** An instant as OpenRouter takes one (seconds and a time zone), normalised to `toISOString()` form. */
export const DateTimeSchema = v.pipe(
  v.string(),
  v.regex(ISO_DATE_TIME, 'must be an ISO 8601 date-time with seconds and a time zone, such as 2026-01-31T23:59:59Z'),
  v.check(isRealDateTime, 'must be a valid date-time'),
  v.transform((value) => new Date(value).toISOString()),
)

/** An expiry instant. Whether it is in the future is the route's check (it needs the clock). */
export const ExpiresAtSchema = v.nullable(DateTimeSchema)

// Strict: a field we do not act on (OpenRouter's `external` partner identity) is refused by name, never ignored.
export const CreateKeyBodySchema = v.strictObject({
  name: KeyNameSchema,
  kind: v.optional(v.picklist(['regular', 'management'], 'must be "regular" or "management"'), 'regular'),
  workspace_id: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'))),
  /**
   * The user the key acts for (as `@openrouter/sdk` names it on key creation); BYOK `allowed_user_ids`
   * match it. The account's owner when omitted or null.
   */
  creator_user_id: v.optional(v.nullable(UserIdSchema)),
  limit: v.optional(KeyLimitSchema),
  limit_reset: v.optional(LimitResetSchema),
  include_byok_in_limit: v.optional(v.boolean()),
  expires_at: v.optional(ExpiresAtSchema),
  // The response cache's default for the key's requests, before its workspace's (docs/decisions.md, Response cache).
  cache: CacheSettingSchema,
})

export const UpdateKeyBodySchema = v.strictObject({
  name: v.optional(KeyNameSchema),
  disabled: v.optional(v.boolean()),
  limit: v.optional(KeyLimitSchema),
  limit_reset: v.optional(LimitResetSchema),
  include_byok_in_limit: v.optional(v.boolean()),
  cache: CacheSettingSchema,
})
