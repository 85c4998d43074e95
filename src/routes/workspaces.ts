/**
 * Workspaces (spec: Workspace; `GET /workspaces/{id}`), plus the list, create, update and delete
 * routes of the public counterpart (docs/decisions.md, Accounts and workspaces), all for management keys of the owning account.
 */

import { ConflictError, InvalidRequestError, NotFoundError } from '../core/errors'
import { findGuardrail } from '../services/guardrails'
import { defineRoute, json } from '../pipeline/route'
import { isUniqueConflict } from '../repositories/mutate'
import { removeWorkspace } from '../services/workspaces'
import { derivedGuardrailId, type WorkspaceRecord, type WorkspaceSettings } from '../repositories/workspaces'
import type { Repositories } from '../repositories'
import {
  CreateWorkspaceBodySchema,
  DeleteWorkspaceQuerySchema,
  ListWorkspacesQuerySchema,
  UpdateWorkspaceRouteBodySchema,
  WorkspaceParamsSchema,
  type UpdateWorkspaceBody,
} from './workspaces.schemas'
import { isResponseStorageOn } from '../services/stored-responses'
import { assertSemanticAvailable, cacheSettingFromWire, cacheSettingToWire } from './response-cache.schemas'

/** Wire name of every writable workspace setting; the one table both directions use. */
export const WORKSPACE_SETTING_WIRE_NAMES = {
  name: 'name',
  slug: 'slug',
  description: 'description',
  defaultTextModel: 'default_text_model',
  defaultImageModel: 'default_image_model',
  defaultProviderSort: 'default_provider_sort',
  disabledServerTools: 'disabled_server_tools',
  ioLoggingApiKeyIds: 'io_logging_api_key_ids',
  ioLoggingSamplingRate: 'io_logging_sampling_rate',
  includeByokInBudgets: 'include_byok_in_budgets',
  isDataDiscountLoggingEnabled: 'is_data_discount_logging_enabled',
  isObservabilityBroadcastEnabled: 'is_observability_broadcast_enabled',
  isObservabilityIoLoggingEnabled: 'is_observability_io_logging_enabled',
  isResponseStorageEnabled: 'is_response_storage_enabled',
  cache: 'cache',
} as const satisfies Record<keyof WorkspaceSettings, string>

/** Validated wire fields → settings; omitted fields stay omitted (unchanged). */
export const fromWorkspaceWire = (body: UpdateWorkspaceBody): WorkspaceSettings => {
  const settings: Record<string, unknown> = {}
  for (const [setting, wireName] of Object.entries(WORKSPACE_SETTING_WIRE_NAMES)) {
    const value = (body as Record<string, unknown>)[wireName]
    if (value !== undefined) settings[setting] = value
  }
  if (body.cache !== undefined) settings.cache = cacheSettingFromWire(body.cache)
  return settings as WorkspaceSettings
}

/** The spec's Workspace object. */
export const toWorkspaceWire = (workspace: WorkspaceRecord) => ({
  id: workspace.id,
  name: workspace.name,
  slug: workspace.slug,
  description: workspace.description,
  created_by: workspace.createdBy,
  created_at: workspace.createdAt,
  updated_at: workspace.updatedAt,
  default_guardrail_id: workspace.defaultGuardrailId,
  default_image_model: workspace.defaultImageModel,
  default_text_model: workspace.defaultTextModel,
  default_provider_sort: workspace.defaultProviderSort,
  disabled_server_tools: workspace.disabledServerTools,
  io_logging_api_key_ids: workspace.ioLoggingApiKeyIds,
  io_logging_sampling_rate: workspace.ioLoggingSamplingRate,
  include_byok_in_budgets: workspace.includeByokInBudgets,
  is_data_discount_logging_enabled: workspace.isDataDiscountLoggingEnabled,
  is_observability_broadcast_enabled: workspace.isObservabilityBroadcastEnabled,
  is_observability_io_logging_enabled: workspace.isObservabilityIoLoggingEnabled,
  is_response_storage_enabled: isResponseStorageOn(workspace),
  cache: cacheSettingToWire(workspace.cache),
})

const slugTaken = (slug: string) => new ConflictError(`Workspace slug "${slug}" is already taken`)

const requireWorkspace = async (repositories: Repositories, accountId: string, idOrSlug: string) => {
  const workspace = await repositories.workspaces.findForAccount(accountId, idOrSlug)
  if (!workspace) throw new NotFoundError('Workspace not found')
  return workspace
}

export const getWorkspace = defineRoute({
  method: 'GET',
  path: '/workspaces/:id',
  auth: 'management',
  params: WorkspaceParamsSchema,
  async handle({ params, caller, repositories }) {
    return json({ data: toWorkspaceWire(await requireWorkspace(repositories, caller.account.id, params.id)) })
  },
})

export const listWorkspaces = defineRoute({
  method: 'GET',
  path: '/workspaces',
  auth: 'management',
  query: ListWorkspacesQuerySchema,
  async handle({ query, caller, repositories }) {
    const page = await repositories.workspaces.listForAccount(caller.account.id, query.offset, query.limit)
    return json({ data: page.workspaces.map(toWorkspaceWire), total_count: page.totalCount })
  },
})

export const createWorkspace = defineRoute({
  method: 'POST',
  path: '/workspaces',
  auth: 'management',
  audit: 'workspace.create',
  body: CreateWorkspaceBodySchema,
  isIdempotent: true,
  async handle({ body, caller, repositories, audit, runtime }) {
    assertSemanticAvailable(body.cache, runtime.inference.responseCache.semantic !== undefined)
    let workspace: WorkspaceRecord
    try {
      const settings = fromWorkspaceWire(body) as WorkspaceSettings & { name: string; slug: string }
      workspace = await repositories.workspaces.create(caller.account, settings)
    } catch (error) {
      if (isUniqueConflict(error)) throw slugTaken(body.slug)
      throw error
    }
    await audit({ target: { type: 'workspace', id: workspace.id }, workspaceId: workspace.id, changes: body })
    return json({ data: toWorkspaceWire(workspace) }, 201)
  },
})

export const updateWorkspace = defineRoute({
  method: 'PATCH',
  path: '/workspaces/:id',
  auth: 'management',
  audit: 'workspace.update',
  params: WorkspaceParamsSchema,
  body: UpdateWorkspaceRouteBodySchema,
  async handle({ params, body, caller, repositories, audit, runtime }) {
    assertSemanticAvailable(body.cache, runtime.inference.responseCache.semantic !== undefined)
    const workspace = await requireWorkspace(repositories, caller.account.id, params.id)
    // Its own default guardrail (derived from its id) is always there to go back to, configured or not.
    const ownDefault = await derivedGuardrailId(workspace.id)
    const guardrailId = body.default_guardrail_id === null ? ownDefault : body.default_guardrail_id
    if (guardrailId !== undefined && guardrailId !== ownDefault && !(await findGuardrail(repositories, caller.account, guardrailId))) {
      throw new InvalidRequestError('body.default_guardrail_id: no guardrail of this account has this id')
    }
    let updated: WorkspaceRecord | null
    try {
      updated = await repositories.workspaces.update(workspace.id, fromWorkspaceWire(body))
      if (updated && guardrailId !== undefined) updated = await repositories.workspaces.setDefaultGuardrail(workspace.id, guardrailId)
    } catch (error) {
      if (isUniqueConflict(error)) throw slugTaken(body.slug ?? workspace.slug)
      throw error
    }
    if (!updated) throw new NotFoundError('Workspace not found')
    await audit({ target: { type: 'workspace', id: workspace.id }, workspaceId: workspace.id, changes: body })
    return json({ data: toWorkspaceWire(updated) })
  },
})

export const deleteWorkspace = defineRoute({
  method: 'DELETE',
  path: '/workspaces/:id',
  auth: 'management',
  audit: 'workspace.delete',
  params: WorkspaceParamsSchema,
  query: DeleteWorkspaceQuerySchema,
  async handle({ params, query, caller, repositories, audit }) {
    const workspace = await requireWorkspace(repositories, caller.account.id, params.id)
    if (workspace.id === caller.account.defaultWorkspaceId && !query.confirm_default_workspace_deletion) {
      throw new InvalidRequestError(
        'query.confirm_default_workspace_deletion: must be true to delete the default workspace; routes that fall back to it answer 400 afterwards',
      )
    }
    if (!(await removeWorkspace(repositories, caller.account, workspace))) throw new NotFoundError('Workspace not found')
    await audit({ target: { type: 'workspace', id: workspace.id }, workspaceId: workspace.id, changes: { slug: workspace.slug, name: workspace.name } })
    return json({ deleted: true })
  },
})
