/** `GET /workspaces/{id}` (spec: Workspace). */

import { NotFoundError } from '../core/errors'
import { defineRoute, json } from '../core/route'
import type { WorkspaceRecord } from '../repositories/workspaces'
import { WorkspaceParamsSchema } from './workspaces.schemas'

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
})

export const getWorkspace = defineRoute({
  method: 'GET',
  path: '/workspaces/:id',
  auth: 'management',
  params: WorkspaceParamsSchema,
  async handle({ params, caller, repositories }) {
    const workspace = await repositories.workspaces.findForAccount(caller.account.id, params.id)
    if (!workspace) throw new NotFoundError('Workspace not found')
    return json({ data: toWorkspaceWire(workspace) })
  },
})
