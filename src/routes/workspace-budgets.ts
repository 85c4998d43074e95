/**
 * Workspace spend budgets on OpenRouter's paths (`/workspaces/{id}/budgets[/{interval}]`, the SDK's
 * `workspaces.getBudget`, `setBudget`, `deleteBudget`, `listBudgets`), for management keys of the
 * owning account, over the budget service the spend checks enforce (docs/decisions.md, Credits and limits).
 */

import { NotFoundError } from '../core/errors'
import { fromNano, toNano } from '../core/money'
import { defineRoute, json } from '../pipeline/route'
import type { Repositories } from '../repositories'
import type { WorkspaceBudget, WorkspaceRecord } from '../repositories/workspaces'
import { deleteWorkspaceBudget, setWorkspaceBudget } from '../services/workspace-budgets'
import { UpsertWorkspaceBudgetBodySchema, WorkspaceBudgetParamsSchema } from './workspace-budgets.schemas'
import { WorkspaceParamsSchema } from './workspaces.schemas'

/** OpenRouter's WorkspaceBudget; a `lifetime` budget never resets, so its `reset_interval` is `null`. */
export const toWorkspaceBudgetWire = (workspace: WorkspaceRecord, budget: WorkspaceBudget) => ({
  id: budget.id,
  workspace_id: workspace.id,
  limit_usd: fromNano(budget.limitNano),
  reset_interval: budget.interval === 'lifetime' ? null : budget.interval,
  created_at: budget.createdAt,
  updated_at: budget.updatedAt,
})

const requireWorkspace = async (repositories: Repositories, accountId: string, idOrSlug: string) => {
  const workspace = await repositories.workspaces.findForAccount(accountId, idOrSlug)
  if (!workspace) throw new NotFoundError('Workspace not found')
  return workspace
}

const noBudget = (interval: string) => new NotFoundError(`The workspace has no ${interval} budget`)

export const listWorkspaceBudgets = defineRoute({
  method: 'GET',
  path: '/workspaces/:id/budgets',
  auth: 'management',
  params: WorkspaceParamsSchema,
  async handle({ params, caller, repositories }) {
    const workspace = await requireWorkspace(repositories, caller.account.id, params.id)
    return json({ data: workspace.budgets.map((budget) => toWorkspaceBudgetWire(workspace, budget)), include_byok_in_budgets: workspace.includeByokInBudgets })
  },
})

export const getWorkspaceBudget = defineRoute({
  method: 'GET',
  path: '/workspaces/:id/budgets/:interval',
  auth: 'management',
  params: WorkspaceBudgetParamsSchema,
  async handle({ params, caller, repositories }) {
    const workspace = await requireWorkspace(repositories, caller.account.id, params.id)
    const budget = workspace.budgets.find((each) => each.interval === params.interval)
    if (!budget) throw noBudget(params.interval)
    return json({ data: toWorkspaceBudgetWire(workspace, budget), include_byok_in_budgets: workspace.includeByokInBudgets })
  },
})

export const setWorkspaceBudgetRoute = defineRoute({
  method: 'PUT',
  path: '/workspaces/:id/budgets/:interval',
  auth: 'management',
  audit: 'workspace_budget.set',
  params: WorkspaceBudgetParamsSchema,
  body: UpsertWorkspaceBudgetBodySchema,
  async handle({ params, body, caller, repositories, audit }) {
    const workspace = await requireWorkspace(repositories, caller.account.id, params.id)
    const updated = await setWorkspaceBudget(repositories, workspace, params.interval, toNano(body.limit_usd), body.include_byok_in_budgets)
    await audit({ target: { type: 'workspace_budget', id: updated.budget.id }, workspaceId: workspace.id, changes: { interval: params.interval, ...body } })
    return json({ data: toWorkspaceBudgetWire(updated.workspace, updated.budget), include_byok_in_budgets: updated.workspace.includeByokInBudgets })
  },
})

export const deleteWorkspaceBudgetRoute = defineRoute({
  method: 'DELETE',
  path: '/workspaces/:id/budgets/:interval',
  auth: 'management',
  audit: 'workspace_budget.delete',
  params: WorkspaceBudgetParamsSchema,
  async handle({ params, caller, repositories, audit }) {
    const workspace = await requireWorkspace(repositories, caller.account.id, params.id)
    const budget = workspace.budgets.find((each) => each.interval === params.interval)
    if (!budget || !(await deleteWorkspaceBudget(repositories, workspace, params.interval))) throw noBudget(params.interval)
    await audit({ target: { type: 'workspace_budget', id: budget.id }, workspaceId: workspace.id, changes: { interval: params.interval } })
    return json({ deleted: true })
  },
})
