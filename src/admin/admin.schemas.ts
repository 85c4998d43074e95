import * as v from 'valibot'
import { ACCOUNT_SLUG_PATTERN } from '../repositories/accounts'
import { UserIdSchema } from '../routes/keys.schemas'

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
})
export type CreateKeyInput = v.InferInput<typeof CreateKeyInputSchema>
