import * as v from 'valibot'
import { SHA256_HEX_PATTERN } from '../core/patterns'

/** Longest id looked up; longer ones cannot be ours. */
export const GENERATION_ID_MAX = 128

// Unknown parameters are refused (strict): a filter that would be ignored must not look applied.
export const GetGenerationQuerySchema = v.strictObject({
  id: v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(GENERATION_ID_MAX, `must be at most ${GENERATION_ID_MAX} characters`)),
})

const isCalendarDate = (value: string) => {
  const date = new Date(`${value}T00:00:00.000Z`)
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === value
}

export const ActivityQuerySchema = v.strictObject({
  /** One UTC day, `YYYY-MM-DD`, within the ledger's retention. */
  date: v.optional(v.pipe(v.string(), v.regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD'), v.check(isCalendarDate, 'must be a calendar date'))),
  api_key_hash: v.optional(v.pipe(v.string(), v.regex(SHA256_HEX_PATTERN, 'must be a key hash: 64 lowercase hex characters'))),
  /** The user a key acts for (its `creator_user_id`). */
  user_id: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(256, 'must be at most 256 characters'))),
  group_by: v.optional(v.picklist(['workspace'], 'must be "workspace"')),
  workspace_id: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'))),
})
