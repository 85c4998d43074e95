import * as v from 'valibot'
import { ACCOUNT_SLUG_PATTERN } from '../repositories/accounts'
import { ExpiresAtSchema, KEY_LIMIT_MAX, KeyLimitSchema, LimitResetSchema, UserIdSchema } from '../routes/keys.schemas'

const NameSchema = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(255, 'must be at most 255 characters'))

export const AccountFlagsInputSchema = v.strictObject({
  interns: v.optional(v.boolean()),
})

export const CreateAccountInputSchema = v.strictObject({
  name: NameSchema,
  slug: v.pipe(v.string(), v.regex(ACCOUNT_SLUG_PATTERN, 'must be 1 to 63 lowercase letters, digits or hyphens')),
  flags: v.optional(AccountFlagsInputSchema),
})
export type CreateAccountInput = v.InferInput<typeof CreateAccountInputSchema>

export const CreateKeyInputSchema = v.strictObject({
  /** Account id or slug; the default account when omitted. */
  accountId: v.optional(v.string()),
  kind: v.optional(v.picklist(['regular', 'management']), 'regular'),
  name: v.optional(NameSchema, 'API key'),
  /** Workspace id or slug; the account's default workspace when omitted. */
  workspaceId: v.optional(v.string()),
  /** The user the key acts for (BYOK `allowed_user_ids` match it); the account's owner when omitted. */
  creatorUserId: v.optional(UserIdSchema),
  /** Spending limit in USD; none when omitted or null. */
  limit: v.optional(KeyLimitSchema),
  limitReset: v.optional(LimitResetSchema),
  includeByokInLimit: v.optional(v.boolean()),
  /** ISO 8601 with seconds and a time zone; the key is refused from then on. */
  expiresAt: v.optional(ExpiresAtSchema),
})
export type CreateKeyInput = v.InferInput<typeof CreateKeyInputSchema>

export const UpdateKeyLimitsInputSchema = v.strictObject({
  limit: v.optional(KeyLimitSchema),
  limitReset: v.optional(LimitResetSchema),
  includeByokInLimit: v.optional(v.boolean()),
})
export type UpdateKeyLimitsInput = v.InferInput<typeof UpdateKeyLimitsInputSchema>

/** The largest single grant, in USD either way: a typo of a few zeros should not pass. */
export const GRANT_MAX = KEY_LIMIT_MAX
export const CREDIT_NOTE_MAX = 500

export const GrantCreditsInputSchema = v.strictObject({
  /** USD; negative to take credits back (a correction), never zero. */
  amount: v.pipe(
    v.number(),
    v.finite('must be a finite number'),
    v.check((amount) => amount !== 0, 'must not be 0'),
    v.minValue(-GRANT_MAX, `must be at least -${GRANT_MAX}`),
    v.maxValue(GRANT_MAX, `must be at most ${GRANT_MAX}`),
  ),
  note: v.optional(v.pipe(v.string(), v.trim(), v.maxLength(CREDIT_NOTE_MAX, `must be at most ${CREDIT_NOTE_MAX} characters`)), ''),
  /** Who or what granted it, for the record (default `admin`). */
  grantedBy: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(255, 'must be at most 255 characters')), 'admin'),
})
export type GrantCreditsInput = v.InferInput<typeof GrantCreditsInputSchema>

export const BudgetIntervalSchema = v.picklist(['daily', 'weekly', 'monthly', 'lifetime'], 'must be "daily", "weekly", "monthly" or "lifetime"')

export const SetWorkspaceBudgetInputSchema = v.strictObject({
  interval: BudgetIntervalSchema,
  /** USD per interval, greater than 0 (as OpenRouter's workspace budgets take it). */
  limitUsd: v.pipe(
    v.number(),
    v.finite('must be a finite number'),
    v.check((limit) => limit > 0, 'must be greater than 0'),
    v.maxValue(KEY_LIMIT_MAX, `must be at most ${KEY_LIMIT_MAX}`),
  ),
  /** Whether BYOK spend (at the list price) counts toward every budget of the workspace; unchanged when omitted. */
  includeByokInBudgets: v.optional(v.boolean()),
})
export type SetWorkspaceBudgetInput = v.InferInput<typeof SetWorkspaceBudgetInputSchema>
