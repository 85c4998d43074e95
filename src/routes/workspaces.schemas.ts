import * as v from 'valibot'
import { UUID_PATTERN } from '../core/patterns'
import { booleanQuery, integerQuery, ModelSlugSchema } from '../core/validation'
import { WORKSPACE_SLUG_PATTERN } from '../repositories/workspaces'
import { WorkspaceCacheSettingSchema } from './response-cache.schemas'

export const WORKSPACES_PAGE_MAX = 100
export const WORKSPACE_NAME_MAX = 255
export const WORKSPACE_DESCRIPTION_MAX = 2000

export const WorkspaceParamsSchema = v.strictObject({
  // spec GET /workspaces/{id}: the workspace UUID or slug, minimum length 1.
  id: v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(256, 'must be at most 256 characters')),
})

export const ListWorkspacesQuerySchema = v.strictObject({
  offset: v.optional(integerQuery(0, Number.MAX_SAFE_INTEGER), '0'),
  limit: v.optional(integerQuery(1, WORKSPACES_PAGE_MAX), '50'),
})

/**
 * `DELETE /workspaces/{id}`: OpenRouter's confirmation, required to delete the account's default workspace (its
 * regular keys and the routes that fall back to it stop working); it changes nothing for another workspace.
 */
export const DeleteWorkspaceQuerySchema = v.strictObject({
  confirm_default_workspace_deletion: v.optional(booleanQuery(), 'false'),
})

const NameSchema = v.pipe(
  v.string(),
  v.trim(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(WORKSPACE_NAME_MAX, `must be at most ${WORKSPACE_NAME_MAX} characters`),
)

export const WorkspaceSlugSchema = v.pipe(
  v.string(),
  v.regex(WORKSPACE_SLUG_PATTERN, 'must be 1 to 64 lowercase letters, digits or inner hyphens'),
  // A slug shaped like a UUID could shadow another workspace's id in GET /workspaces/{id}.
  v.check((slug) => !UUID_PATTERN.test(slug), 'must not look like a UUID'),
)

/** `exacto` routes on tool-calling quality figures the gateway does not have (docs/decisions.md, "Routing by measured speed"). */
// Never quoting the value sent: the message would be taken for an echo of the input and replaced (src/core/validation.ts).
const EXACTO_REFUSED = 'must be price, throughput or latency: the tool-calling quality sort is not supported (the gateway has no figures to route on)'

/**
 * Settings a caller may write, with the spec's wire names (docs/decisions.md, Accounts and workspaces for element types).
 * `null` clears a description, default model or sort back to a new workspace's value, as OpenRouter's SDK may send it.
 */
const settingsEntries = {
  description: v.optional(
    v.nullable(v.pipe(v.string(), v.maxLength(WORKSPACE_DESCRIPTION_MAX, `must be at most ${WORKSPACE_DESCRIPTION_MAX} characters`))),
  ),
  default_text_model: v.optional(v.nullable(ModelSlugSchema)),
  default_image_model: v.optional(v.nullable(ModelSlugSchema)),
  default_provider_sort: v.optional(
    v.pipe(
      v.nullable(v.picklist(['price', 'throughput', 'latency', 'exacto'], 'must be one of price, throughput, latency, exacto')),
      v.check((sort) => sort !== 'exacto', EXACTO_REFUSED),
    ),
  ),
  disabled_server_tools: v.optional(
    v.nullable(v.pipe(v.array(v.pipe(v.string(), v.minLength(1, 'must not be empty'))), v.maxLength(100, 'at most 100 items'))),
  ),
  io_logging_api_key_ids: v.optional(
    v.nullable(v.pipe(v.array(v.pipe(v.number(), v.integer('must be an integer'))), v.maxLength(1000, 'at most 1000 items'))),
  ),
  io_logging_sampling_rate: v.optional(v.pipe(v.number(), v.minValue(0, 'must be at least 0'), v.maxValue(1, 'must be at most 1'))),
  include_byok_in_budgets: v.optional(v.boolean()),
  // OpenRouter's discount for letting it log prompts: this gateway gives none and logs nothing for one, so only false.
  is_data_discount_logging_enabled: v.optional(
    v.pipe(v.boolean(), v.check((enabled) => !enabled, 'only false: this gateway offers no discount for logging prompts, and logs none for one')),
  ),
  is_observability_broadcast_enabled: v.optional(v.boolean()),
  is_observability_io_logging_enabled: v.optional(v.boolean()),
  // docs/decisions.md, Stored responses: false keeps this workspace's `/responses` answers out of the response store.
  is_response_storage_enabled: v.optional(v.boolean()),
  // The response cache's default for the workspace's requests (docs/decisions.md, Response cache); null: off.
  cache: WorkspaceCacheSettingSchema,
}

export const CreateWorkspaceBodySchema = v.strictObject({ name: NameSchema, slug: WorkspaceSlugSchema, ...settingsEntries })

export const UpdateWorkspaceBodySchema = v.strictObject({
  name: v.optional(NameSchema),
  slug: v.optional(WorkspaceSlugSchema),
  ...settingsEntries,
})
export type UpdateWorkspaceBody = v.InferOutput<typeof UpdateWorkspaceBodySchema>

/** What `PATCH /workspaces/{id}` takes: the settings, and which guardrail governs all of the workspace's traffic. */
export const UpdateWorkspaceRouteBodySchema = v.strictObject({
  ...UpdateWorkspaceBodySchema.entries,
  // null goes back to the workspace's own default guardrail (its id derived from the workspace's), none until configured.
  default_guardrail_id: v.optional(v.nullable(v.pipe(v.string(), v.regex(UUID_PATTERN, 'must be a guardrail id (a UUID)')))),
})
