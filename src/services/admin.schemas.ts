import * as v from 'valibot'
import { MODEL_SLUG_MAX, MODEL_SLUG_PATTERN, UUID_PATTERN } from '../core/patterns'
import { ACCOUNT_SLUG_PATTERN } from '../repositories/accounts'
import { WORKSPACE_SLUG_PATTERN } from '../repositories/workspaces'

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
})
export type CreateKeyInput = v.InferInput<typeof CreateKeyInputSchema>

const ModelSlugSchema = v.pipe(
  v.string(),
  v.maxLength(MODEL_SLUG_MAX, `must be at most ${MODEL_SLUG_MAX} characters`),
  v.regex(MODEL_SLUG_PATTERN, 'must be a model slug <author>/<name>'),
)

const WorkspaceSlugSchema = v.pipe(
  v.string(),
  v.regex(WORKSPACE_SLUG_PATTERN, 'must be 1 to 64 lowercase letters, digits or inner hyphens'),
  // A slug shaped like a UUID could shadow another workspace's id in GET /workspaces/{id}.
  v.check((slug) => !UUID_PATTERN.test(slug), 'must not look like a UUID'),
)

const workspaceSettingsEntries = {
  name: v.optional(NameSchema),
  slug: v.optional(WorkspaceSlugSchema),
  description: v.optional(v.pipe(v.string(), v.maxLength(2000, 'must be at most 2000 characters'))),
  defaultImageModel: v.optional(ModelSlugSchema),
  defaultTextModel: v.optional(ModelSlugSchema),
  defaultProviderSort: v.optional(v.picklist(['price', 'throughput', 'latency', 'exacto'])),
  disabledServerTools: v.optional(v.nullable(v.pipe(v.array(v.pipe(v.string(), v.minLength(1))), v.maxLength(100)))),
  ioLoggingApiKeyIds: v.optional(v.nullable(v.pipe(v.array(v.pipe(v.number(), v.integer())), v.maxLength(1000)))),
  ioLoggingSamplingRate: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1))),
  includeByokInBudgets: v.optional(v.boolean()),
  isDataDiscountLoggingEnabled: v.optional(v.boolean()),
  isObservabilityBroadcastEnabled: v.optional(v.boolean()),
  isObservabilityIoLoggingEnabled: v.optional(v.boolean()),
}

export const UpdateWorkspaceInputSchema = v.strictObject(workspaceSettingsEntries)
export type UpdateWorkspaceInput = v.InferInput<typeof UpdateWorkspaceInputSchema>

export const CreateWorkspaceInputSchema = v.strictObject({
  ...workspaceSettingsEntries,
  name: NameSchema,
  slug: WorkspaceSlugSchema,
})
export type CreateWorkspaceInput = v.InferInput<typeof CreateWorkspaceInputSchema>
