/**
 * Guardrail lookups shared by the guardrail and workspace routes: a workspace's default guardrail exists from the
 * start, unconfigured, and is stored only once it is first changed (as OpenRouter "materializes" it on update).
 */

import { NotFoundError } from '../core/errors'
import type { AccountRecord } from '../repositories/accounts'
import type { Repositories } from '../repositories'
import { NO_RULES, type GuardrailRecord } from '../repositories/guardrails'
import { isUniqueConflict } from '../repositories/mutate'
import type { WorkspaceRecord } from '../repositories/workspaces'

const WORKSPACES_PAGE = 100

/** The account's workspace whose default guardrail is `guardrailId`, if any. */
export const workspaceDefaultingTo = async (repositories: Repositories, accountId: string, guardrailId: string): Promise<WorkspaceRecord | null> => {
  for (let offset = 0; ; offset += WORKSPACES_PAGE) {
    const { workspaces } = await repositories.workspaces.listForAccount(accountId, offset, WORKSPACES_PAGE)
    const found = workspaces.find((workspace) => workspace.defaultGuardrailId === guardrailId)
    if (found) return found
    if (workspaces.length < WORKSPACES_PAGE) return null
  }
}

/** The name a workspace's default guardrail has until it is given another. */
export const defaultGuardrailName = (workspace: WorkspaceRecord) => `Default guardrail of workspace "${workspace.name}"`

/** A workspace's default guardrail as it is before anything was configured: no rules, enforcing nothing. */
export const unconfiguredDefaultGuardrail = (workspace: WorkspaceRecord): GuardrailRecord => ({
  ...NO_RULES,
  id: workspace.defaultGuardrailId,
  accountId: workspace.accountId,
  workspaceId: workspace.id,
  name: defaultGuardrailName(workspace),
  description: null,
  createdAt: workspace.createdAt,
  updatedAt: null,
  sortKey: '',
})

export type ResolvedGuardrail = { record: GuardrailRecord; isStored: boolean }

/** A guardrail of the account: a stored one, or a workspace default not configured yet; `null` for neither. */
export const findGuardrail = async (repositories: Repositories, account: AccountRecord, id: string): Promise<ResolvedGuardrail | null> => {
  const stored = await repositories.guardrails.get(id)
  if (stored) return stored.accountId === account.id ? { record: stored, isStored: true } : null
  const workspace = await workspaceDefaultingTo(repositories, account.id, id)
  return workspace ? { record: unconfiguredDefaultGuardrail(workspace), isStored: false } : null
}

export const GUARDRAIL_NOT_FOUND = 'Guardrail not found'

/** As `findGuardrail`, or a 404. */
export const requireGuardrail = async (repositories: Repositories, account: AccountRecord, id: string): Promise<ResolvedGuardrail> => {
  const found = await findGuardrail(repositories, account, id)
  if (!found) throw new NotFoundError(GUARDRAIL_NOT_FOUND)
  return found
}

/** Stores a workspace's default guardrail the first time it is changed; another request may be doing the same. */
export const materializeGuardrail = async (repositories: Repositories, record: GuardrailRecord): Promise<void> => {
  try {
    // Stored with its own timestamps: `create` sets them, whatever the unconfigured record carried.
    await repositories.guardrails.create(record)
  } catch (error) {
    if (!isUniqueConflict(error)) throw error
  }
}
