import * as v from 'valibot'
import { MODEL_SLUG_PATTERN, SHA256_HEX_PATTERN, UUID_PATTERN } from '../core/patterns'
import { integerQuery } from '../core/validation'
import { PROVIDER_SLUG_PATTERN } from '../providers/catalog'
import { UserIdSchema } from './keys.schemas'

// spec Limits: BYOK name 255, hash list 1..100, model and user id lists at most 100, page size 1..100.
export const BYOK_NAME_MAX = 255
export const BYOK_LIST_MAX = 100
export const BYOK_PAGE_MAX = 100
export const BYOK_PAGE_DEFAULT = 50
/** Generous for Azure's JSON keys, small enough that nobody stores a document as a "key". */
export const BYOK_KEY_MAX = 16_384

const UuidSchema = v.pipe(v.string(), v.regex(UUID_PATTERN, 'must be a UUID'))

const ProviderSlugSchema = v.pipe(
  v.string(),
  v.regex(PROVIDER_SLUG_PATTERN, 'must be a lowercase provider slug (letters, digits, hyphens, optionally one "/" segment)'),
)

const RawKeySchema = v.pipe(
  // A custom message: valibot's default quotes the received value, and a number sent as `key` is still a key.
  v.string('must be a string'),
  v.minLength(1, 'must not be empty'),
  v.maxLength(BYOK_KEY_MAX, `must be at most ${BYOK_KEY_MAX} characters`),
)

const listOf = <T extends v.GenericSchema<string, string>>(item: T, minimum: number) =>
  v.optional(
    v.nullable(
      v.pipe(
        v.array(item),
        v.check((items) => items.length >= minimum, `must have at least ${minimum} item`),
        v.maxLength(BYOK_LIST_MAX, `at most ${BYOK_LIST_MAX} items`),
      ),
    ),
  )

const settingsEntries = {
  // null names the credential after its provider, as when none is given (`@openrouter/sdk` allows null).
  name: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(BYOK_NAME_MAX, `must be at most ${BYOK_NAME_MAX} characters`)))),
  disabled: v.optional(v.boolean()),
  is_fallback: v.optional(v.boolean()),
  is_byok_only: v.optional(v.boolean()),
  is_required: v.optional(v.boolean()),
  allowed_api_key_hashes: listOf(
    v.pipe(v.string(), v.regex(SHA256_HEX_PATTERN, 'must match ^[a-f0-9]{64}$')),
    1,
  ),
  allowed_models: listOf(
    v.pipe(v.string(), v.maxLength(200, 'must be at most 200 characters'), v.regex(MODEL_SLUG_PATTERN, 'must be a model slug <author>/<name>')),
    0,
  ),
  allowed_user_ids: listOf(UserIdSchema, 0),
  declared_zdr: v.optional(v.nullable(v.boolean())),
}

export const CreateByokBodySchema = v.strictObject({
  key: RawKeySchema,
  provider: ProviderSlugSchema,
  workspace_id: v.optional(UuidSchema),
  ...settingsEntries,
})

export const UpdateByokBodySchema = v.strictObject({ key: v.optional(RawKeySchema), ...settingsEntries })
export type UpdateByokBody = v.InferOutput<typeof UpdateByokBodySchema>

export const ByokParamsSchema = v.strictObject({ id: UuidSchema })

export const ListByokQuerySchema = v.strictObject({
  offset: v.optional(integerQuery(0, Number.MAX_SAFE_INTEGER), '0'),
  limit: v.optional(integerQuery(1, BYOK_PAGE_MAX), String(BYOK_PAGE_DEFAULT)),
  workspace_id: v.optional(UuidSchema),
  provider: v.optional(ProviderSlugSchema),
})
