import * as v from 'valibot'
import { SHA256_HEX_PATTERN, UUID_PATTERN } from '../core/patterns'
import { integerQuery, ModelSlugSchema } from '../core/validation'
import { compileContentPattern } from '../features/guardrails/content-pattern'
import { CONTENT_FILTER_BUILTIN_SLUGS } from '../repositories/guardrails'
import { UserIdSchema } from './keys.schemas'

export const GUARDRAILS_PAGE_MAX = 100
export const GUARDRAILS_PAGE_DEFAULT = 50
export const GUARDRAIL_NAME_MAX = 255
export const GUARDRAIL_DESCRIPTION_MAX = 2000
/** Entries of a model or provider list. */
export const GUARDRAIL_LIST_MAX = 500
export const CONTENT_FILTERS_MAX = 50
/** Characters of one content filter pattern: RE2 compiles it to a program that grows with it. */
export const CONTENT_PATTERN_MAX = 1000
export const CONTENT_LABEL_MAX = 100
/** The largest spending limit, in USD (as a key's: counters stay exact up to about 9 million). */
export const GUARDRAIL_LIMIT_MAX = 1_000_000
/** Keys one bulk assignment call names. */
export const BULK_KEYS_MAX = 500

export const GuardrailParamsSchema = v.strictObject({
  id: v.pipe(v.string(), v.regex(UUID_PATTERN, 'must be a guardrail id (a UUID)')),
})

const pageEntries = {
  offset: v.optional(integerQuery(0, Number.MAX_SAFE_INTEGER), '0'),
  limit: v.optional(integerQuery(1, GUARDRAILS_PAGE_MAX), String(GUARDRAILS_PAGE_DEFAULT)),
}

export const ListGuardrailsQuerySchema = v.strictObject({
  ...pageEntries,
  workspace_id: v.optional(v.pipe(v.string(), v.regex(UUID_PATTERN, 'must be a workspace id (a UUID)'))),
})

export const ListAssignmentsQuerySchema = v.strictObject(pageEntries)

const NameSchema = v.pipe(
  v.string(),
  v.trim(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(GUARDRAIL_NAME_MAX, `must be at most ${GUARDRAIL_NAME_MAX} characters`),
)

const uniqueList = <S extends v.GenericSchema<unknown, string>>(item: S) =>
  v.nullable(
    v.pipe(
      v.array(item),
      v.maxLength(GUARDRAIL_LIST_MAX, `must have at most ${GUARDRAIL_LIST_MAX} items`),
      v.check((items) => new Set(items).size === items.length, 'must not repeat an entry'),
    ),
  )

// A base provider slug (`openai`) or one variant of it (`openai/turbo`), as provider preferences take them.
const ProviderIdSchema = v.pipe(v.string(), v.regex(/^[a-z0-9][a-z0-9-]*(?:\/[a-z0-9][a-z0-9-]*)?$/, 'must be a provider slug'))

const ActionSchema = v.picklist(['block', 'redact', 'flag'], 'must be one of block, redact, flag')

const LabelSchema = v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(CONTENT_LABEL_MAX, `must be at most ${CONTENT_LABEL_MAX} characters`))

const ContentFilterSchema = v.strictObject({
  pattern: v.pipe(
    v.string(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(CONTENT_PATTERN_MAX, `must be at most ${CONTENT_PATTERN_MAX} characters`),
    v.rawCheck(({ dataset, addIssue }) => {
      if (!dataset.typed) return
      const problem = compileContentPattern(dataset.value).problem
      if (problem) addIssue({ message: `is not a pattern RE2 can run: ${problem}` })
    }),
  ),
  action: ActionSchema,
  label: v.optional(v.nullable(LabelSchema)),
})

const ContentFilterBuiltinSchema = v.strictObject({
  slug: v.picklist(CONTENT_FILTER_BUILTIN_SLUGS, `must be one of ${CONTENT_FILTER_BUILTIN_SLUGS.join(', ')}`),
  action: ActionSchema,
  label: v.optional(LabelSchema),
  scan_scope: v.optional(v.picklist(['user_only', 'all_messages'], 'must be user_only or all_messages')),
})

const nullableBoolean = v.optional(v.nullable(v.boolean()))

/** The rule fields create and update share; omitted means unchanged (update) or none (create), `null` clears. */
const ruleEntries = {
  description: v.optional(
    v.nullable(v.pipe(v.string(), v.maxLength(GUARDRAIL_DESCRIPTION_MAX, `must be at most ${GUARDRAIL_DESCRIPTION_MAX} characters`))),
  ),
  allowed_models: v.optional(uniqueList(ModelSlugSchema)),
  ignored_models: v.optional(uniqueList(ModelSlugSchema)),
  allowed_providers: v.optional(uniqueList(ProviderIdSchema)),
  ignored_providers: v.optional(uniqueList(ProviderIdSchema)),
  enforce_zdr: nullableBoolean,
  enforce_zdr_anthropic: nullableBoolean,
  enforce_zdr_openai: nullableBoolean,
  enforce_zdr_google: nullableBoolean,
  enforce_zdr_xai: nullableBoolean,
  enforce_zdr_other: nullableBoolean,
  enable_free_model_training: nullableBoolean,
  enable_paid_model_training: nullableBoolean,
  // The catalog says nothing of endpoints that publish prompts, so none is known to: only "allowed" (or unset) can be honoured.
  enable_free_model_publication: v.optional(
    v.nullable(v.literal(true, 'cannot be false: no endpoint of this gateway is known to publish prompts, so there is nothing to exclude; leave it out')),
  ),
  // This gateway has no OpenRouter ingress regions to restrict: accepting a list would enforce nothing.
  allowed_data_regions: v.optional(v.null('is not supported: this gateway has no OpenRouter data regions; leave it out or send null')),
  limit_usd: v.optional(
    v.nullable(v.pipe(v.number(), v.minValue(0, 'must be at least 0'), v.maxValue(GUARDRAIL_LIMIT_MAX, `must be at most ${GUARDRAIL_LIMIT_MAX}`))),
  ),
  reset_interval: v.optional(v.nullable(v.picklist(['daily', 'weekly', 'monthly'], 'must be one of daily, weekly, monthly'))),
  include_byok_in_budgets: v.optional(v.boolean()),
  content_filters: v.optional(
    v.nullable(v.pipe(v.array(ContentFilterSchema), v.maxLength(CONTENT_FILTERS_MAX, `must have at most ${CONTENT_FILTERS_MAX} items`))),
  ),
  content_filter_builtins: v.optional(
    v.nullable(
      v.pipe(
        v.array(ContentFilterBuiltinSchema),
        v.check((entries) => new Set(entries.map((entry) => entry.slug)).size === entries.length, 'must name each builtin once'),
      ),
    ),
  ),
}

export const CreateGuardrailBodySchema = v.strictObject({
  name: NameSchema,
  workspace_id: v.optional(v.pipe(v.string(), v.regex(UUID_PATTERN, 'must be a workspace id (a UUID)'))),
  ...ruleEntries,
})

export const UpdateGuardrailBodySchema = v.strictObject({ name: v.optional(NameSchema), ...ruleEntries })
export type UpdateGuardrailBody = v.InferOutput<typeof UpdateGuardrailBodySchema>

const KeyHashesSchema = v.pipe(
  v.array(v.pipe(v.string(), v.regex(SHA256_HEX_PATTERN, 'must be a key hash: 64 lowercase hex characters'))),
  v.minLength(1, 'must name at least one key'),
  v.maxLength(BULK_KEYS_MAX, `must have at most ${BULK_KEYS_MAX} items`),
)

export const BulkKeysBodySchema = v.strictObject({ key_hashes: KeyHashesSchema })

export const BulkMembersBodySchema = v.strictObject({
  member_user_ids: v.pipe(
    v.array(UserIdSchema),
    v.minLength(1, 'must name at least one member'),
    v.maxLength(BULK_KEYS_MAX, `must have at most ${BULK_KEYS_MAX} items`),
  ),
})
