/**
 * `DELETE /workspaces/{id}/response-cache`: removes every answer the response cache keeps for the workspace
 * (docs/routes.md, Response cache), for management keys of the owning account. The next request of each kind runs
 * upstream again.
 */

import { NotFoundError } from '../core/errors'
import { defineRoute, json } from '../pipeline/route'
import { WorkspaceParamsSchema } from './workspaces.schemas'

export const clearWorkspaceResponseCache = defineRoute({
  method: 'DELETE',
  path: '/workspaces/:id/response-cache',
  auth: 'management',
  audit: 'workspace.clear_response_cache',
  params: WorkspaceParamsSchema,
  async handle({ params, caller, repositories, audit }) {
    const workspace = await repositories.workspaces.findForAccount(caller.account.id, params.id)
    if (!workspace) throw new NotFoundError('Workspace not found')
    const removed = await repositories.responseCache.clear(workspace.id)
    await audit({ target: { type: 'workspace', id: workspace.id }, workspaceId: workspace.id, changes: { removed } })
    return json({ data: { workspace_id: workspace.id, removed } })
  },
})
