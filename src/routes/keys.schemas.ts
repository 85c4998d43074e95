import * as v from 'valibot'
import { SHA256_HEX_PATTERN } from '../core/patterns'
import { booleanQuery, integerQuery } from '../core/validation'

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

export const KeyParamsSchema = v.object({
  hash: v.pipe(v.string(), v.regex(SHA256_HEX_PATTERN, 'must be the key hash: 64 lowercase hex characters')),
})

export const ListKeysQuerySchema = v.object({
  offset: v.optional(integerQuery(0, Number.MAX_SAFE_INTEGER), '0'),
  limit: v.optional(integerQuery(1, KEYS_PAGE_MAX), String(KEYS_PAGE_MAX)),
  include_disabled: v.optional(booleanQuery(), 'false'),
})
export type ListKeysQuery = v.InferOutput<typeof ListKeysQuerySchema>

export const CreateKeyBodySchema = v.object({
  name: KeyNameSchema,
  kind: v.optional(v.picklist(['regular', 'management'], 'must be "regular" or "management"'), 'regular'),
  workspace_id: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'))),
  /**
   * The user the key acts for (as `@openrouter/sdk` names it on key creation); BYOK `allowed_user_ids`
   * match it. The account's owner when omitted.
   */
  creator_user_id: v.optional(UserIdSchema),
})
export type CreateKeyBody = v.InferOutput<typeof CreateKeyBodySchema>

export const UpdateKeyBodySchema = v.object({
  name: v.optional(KeyNameSchema),
  disabled: v.optional(v.boolean()),
})
export type UpdateKeyBody = v.InferOutput<typeof UpdateKeyBodySchema>
