/** Account set-up shared by the admin API, the CLI and the runner. */

import { InvalidRequestError, NotFoundError, StorageConflictError } from '../core/errors'
import { DEFAULT_ACCOUNT_SLUG, type AccountFlags, type AccountRecord } from '../repositories/accounts'
import { isUniqueConflict } from '../repositories/mutate'
import type { Repositories } from '../repositories'
import { DEFAULT_WORKSPACE_SLUG, type WorkspaceRecord } from '../repositories/workspaces'

/**
 * Makes sure the account's default workspace exists. An account is written before its workspace,
 * so a crash between the two leaves `defaultWorkspaceId` pointing nowhere; this finishes the job.
 * A workspace deleted on purpose has `defaultWorkspaceId: null` and is not recreated.
 */
export const ensureDefaultWorkspace = async (repositories: Repositories, account: AccountRecord): Promise<WorkspaceRecord | null> => {
  if (!account.defaultWorkspaceId) return null
  const existing = await repositories.workspaces.get(account.defaultWorkspaceId)
  if (existing) return existing
  try {
    return await repositories.workspaces.create(
      account,
      { name: 'Default', slug: DEFAULT_WORKSPACE_SLUG, description: 'Default workspace' },
      account.defaultWorkspaceId,
    )
  } catch (error) {
    if (!isUniqueConflict(error)) throw error
    // Another process finished it first, or the slug is held by a workspace created since.
    const winner = await repositories.workspaces.get(account.defaultWorkspaceId)
    if (winner) return winner
    throw new StorageConflictError('unique', `Workspace slug "${DEFAULT_WORKSPACE_SLUG}" is taken; the default workspace could not be created`)
  }
}

/** Creates an account together with its default workspace. */
export const createAccount = async (
  repositories: Repositories,
  input: { name: string; slug: string; flags?: Partial<AccountFlags> },
) => {
  const { account, created } = await repositories.accounts.create(input)
  const workspace = await ensureDefaultWorkspace(repositories, account)
  return { account, workspace: workspace!, created }
}

/** The account a fresh install starts with; created on first use, safely from several processes at once. */
export const ensureDefaultAccount = async (repositories: Repositories) => {
  const { account } = await repositories.accounts.create({ name: 'Default', slug: DEFAULT_ACCOUNT_SLUG, reuseExisting: true })
  await ensureDefaultWorkspace(repositories, account)
  return account
}

/** Finds an account by id or slug, or throws 404. */
export const requireAccount = async (repositories: Repositories, idOrSlug: string): Promise<AccountRecord> => {
  const account = (await repositories.accounts.findBySlug(idOrSlug)) ?? (await repositories.accounts.get(idOrSlug))
  if (!account) throw new NotFoundError('Account not found')
  return account
}

/**
 * The workspace a write goes to: the given one (which must belong to the account, else 404 so that
 * another account's workspace is never revealed), or the account's default (400 once that was deleted).
 */
export const resolveWorkspace = async (
  repositories: Repositories,
  account: AccountRecord,
  workspaceId: string | undefined,
): Promise<WorkspaceRecord> => {
  if (workspaceId !== undefined) {
    const workspace = await repositories.workspaces.findForAccount(account.id, workspaceId)
    if (!workspace) throw new NotFoundError('Workspace not found')
    return workspace
  }
  const workspace = await ensureDefaultWorkspace(repositories, account)
  if (!workspace) throw new InvalidRequestError('The default workspace was deleted; pass workspace_id')
  return workspace
}
