/**
 * Workspace spend budgets, at most one per interval, shaped as OpenRouter's workspace budgets are
 * (`id`, `limit_usd`, `reset_interval`), so the public routes for them can be served over this later.
 */

import { randomId } from '../core/crypto'
import { NotFoundError } from '../core/errors'
import type { Repositories } from '../repositories'
import type { BudgetInterval, WorkspaceBudget, WorkspaceRecord } from '../repositories/workspaces'

/** Sets the budget of `interval` (creating it, or changing its limit); `includeByokInBudgets` when given applies to every budget. */
export const setWorkspaceBudget = async (
  repositories: Repositories,
  workspace: WorkspaceRecord,
  interval: BudgetInterval,
  limitNano: number,
  includeByokInBudgets?: boolean,
) => {
  let updated = await repositories.workspaces.updateBudgets(workspace.id, (budgets, timestamp) => {
    const existing = budgets.find((budget) => budget.interval === interval)
    const budget: WorkspaceBudget = existing
      ? { ...existing, limitNano, updatedAt: timestamp }
      : { id: randomId(), interval, limitNano, createdAt: timestamp, updatedAt: timestamp }
    return [...budgets.filter((other) => other.interval !== interval), budget]
  })
  if (updated && includeByokInBudgets !== undefined) updated = await repositories.workspaces.update(workspace.id, { includeByokInBudgets })
  if (!updated) throw new NotFoundError('Workspace not found')
  return { workspace: updated, budget: updated.budgets.find((budget) => budget.interval === interval)! }
}

/** Removes the budget of `interval`; resolves `false` when the workspace had none. */
export const deleteWorkspaceBudget = async (repositories: Repositories, workspace: WorkspaceRecord, interval: BudgetInterval): Promise<boolean> => {
  if (!workspace.budgets.some((budget) => budget.interval === interval)) return false
  const updated = await repositories.workspaces.updateBudgets(workspace.id, (budgets) => budgets.filter((budget) => budget.interval !== interval))
  if (!updated) throw new NotFoundError('Workspace not found')
  return true
}
