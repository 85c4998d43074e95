/** Workspace operations shared by the HTTP routes and the admin API. */

import { ConflictError } from '../core/errors'
import type { AccountRecord } from '../repositories/accounts'
import type { Repositories } from '../repositories'
import { derivedGuardrailId, type WorkspaceRecord } from '../repositories/workspaces'

const KEYS_PAGE = 500
const GUARDRAILS_PAGE = 100

/**
 * Regular keys bound to the workspace, disabled ones included (they may be enabled again). Counted
 * over the account's keys rather than through an index, so keys stored before this rule count too.
 */
const countBoundRegularKeys = async (repositories: Repositories, workspace: WorkspaceRecord): Promise<number> => {
  let count = 0
  for (let offset = 0; ; offset += KEYS_PAGE) {
    const { keys } = await repositories.apiKeys.listForAccount(workspace.accountId, { kind: 'regular' }, offset, KEYS_PAGE)
    count += keys.filter((key) => key.workspaceId === workspace.id).length
    if (keys.length < KEYS_PAGE) return count
  }
}

/** Another workspace of the account whose `default_guardrail_id` is a guardrail of `workspace`, if any. */
const workspaceDependingOn = async (repositories: Repositories, workspace: WorkspaceRecord): Promise<WorkspaceRecord | null> => {
  for (let offset = 0; ; offset += GUARDRAILS_PAGE) {
    const { workspaces } = await repositories.workspaces.listForAccount(workspace.accountId, offset, GUARDRAILS_PAGE)
    for (const other of workspaces) {
      // A workspace's own derived default belongs to it: only a default pointed elsewhere can depend on this one.
      if (other.id === workspace.id || other.defaultGuardrailId === (await derivedGuardrailId(other.id))) continue
      if ((await repositories.guardrails.get(other.defaultGuardrailId))?.workspaceId === workspace.id) return other
    }
    if (workspaces.length < GUARDRAILS_PAGE) return null
  }
}

/**
 * Deletes a workspace. Deleting the default one leaves the account without a default, so routes
 * that fall back to it answer 400 and ask for `workspace_id` (spec POST /byok). Refused while
 * regular keys are bound to it; management keys are account-wide and never block it.
 */
export const removeWorkspace = async (repositories: Repositories, account: AccountRecord, workspace: WorkspaceRecord) => {
  // Interns live somewhere (their runtime) and own vaults: they must be destroyed through their own route first.
  const { totalCount: interns } = await repositories.interns.list({ workspaceId: workspace.id }, 0, 0)
  if (interns > 0) throw new ConflictError(`The workspace still has ${interns} intern(s); delete them first`)
  // A regular key acts inside its workspace: deleting the workspace under it would leave a key that looks valid.
  const keys = await countBoundRegularKeys(repositories, workspace)
  if (keys > 0) {
    throw new ConflictError(
      `The workspace still has ${keys} API key(s) bound to it, disabled ones included; delete them first (GET /keys?include_disabled=true lists them with their workspace_id)`,
    )
  }
  const dependent = await workspaceDependingOn(repositories, workspace)
  // A guardrail of this workspace that another workspace uses as its default would leave that one naming nothing.
  if (dependent) {
    throw new ConflictError(`Workspace "${dependent.slug}" uses a guardrail of this workspace as its default_guardrail_id; set another one there first`)
  }
  if (account.defaultWorkspaceId === workspace.id) {
    // Unset the default first: a crash after this step leaves a plain workspace, never a default to resurrect.
    await repositories.accounts.update(account.id, (current) =>
      current.defaultWorkspaceId === workspace.id ? { ...current, defaultWorkspaceId: null } : current,
    )
  }
  const deleted = await repositories.workspaces.delete(workspace.id)
  // Provider keys belong to their workspace: they go with it, so no key material outlives it.
  for (;;) {
    const { credentials } = await repositories.byok.list({ workspaceId: workspace.id }, 0, 100)
    if (credentials.length === 0) break
    for (const credential of credentials) await repositories.byok.delete(credential.id)
  }
  // Its guardrails go with it too, each with its key assignments.
  for (;;) {
    const page = await repositories.guardrails.listForAccount(account.id, workspace.id, 0, GUARDRAILS_PAGE)
    if (page.guardrails.length === 0) break
    for (const guardrail of page.guardrails) await repositories.guardrails.delete(guardrail.id)
  }
  // Its cached answers are its callers' content: they go with it as well.
  await repositories.responseCache.clear(workspace.id)
  return deleted
}
