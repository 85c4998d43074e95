/**
 * The programmatic admin API (`gateway.admin`): what an operator does outside HTTP, such as minting
 * the first management key, setting account flags and managing workspaces. Inputs are validated
 * like request bodies; failures are `GatewayError`s with a message naming the field.
 */

import { NotFoundError } from '../core/errors'
import { parseInput } from '../core/validation'
import type { AccountRecord } from '../repositories/accounts'
import type { Repositories } from '../repositories'
import type { WorkspaceRecord } from '../repositories/workspaces'
import { createAccount, ensureDefaultAccount, requireAccount } from './accounts'
import { ensureManagementKey, issueApiKey } from './api-keys'
import {
  AccountFlagsInputSchema,
  CreateAccountInputSchema,
  CreateKeyInputSchema,
  CreateWorkspaceInputSchema,
  UpdateWorkspaceInputSchema,
  type CreateAccountInput,
  type CreateKeyInput,
  type CreateWorkspaceInput,
  type UpdateWorkspaceInput,
} from './admin.schemas'

export const createAdmin = (repositories: Repositories) => {
  const accountFor = (idOrSlug: string | undefined) =>
    idOrSlug === undefined ? ensureDefaultAccount(repositories) : requireAccount(repositories, idOrSlug)

  const workspaceFor = async (account: AccountRecord, idOrSlug: string): Promise<WorkspaceRecord> => {
    const workspace = await repositories.workspaces.findForAccount(account.id, idOrSlug)
    if (!workspace) throw new NotFoundError('Workspace not found')
    return workspace
  }

  return {
    /** The account of a fresh install (slug `default`), created with its default workspace on first use. */
    ensureDefaultAccount: () => ensureDefaultAccount(repositories),

    /** Creates an account and its default workspace (slug `default`). */
    async createAccount(input: CreateAccountInput) {
      const parsed = parseInput(CreateAccountInputSchema, input, 'input')
      const { account, workspace } = await createAccount(repositories, parsed)
      return { account, workspace }
    },

    /** An account by id or slug. */
    getAccount: (idOrSlug: string) => requireAccount(repositories, idOrSlug),

    async listAccounts(offset = 0, limit = 100) {
      return repositories.accounts.list(offset, limit)
    },

    /** Sets account flags such as membership of the interns programme; omitted flags stay unchanged. */
    async setAccountFlags(accountIdOrSlug: string | undefined, flags: { interns?: boolean }) {
      const parsed = parseInput(AccountFlagsInputSchema, flags, 'input')
      const account = await accountFor(accountIdOrSlug)
      const updated = await repositories.accounts.update(account.id, (current) => ({
        ...current,
        flags: { ...current.flags, ...Object.fromEntries(Object.entries(parsed).filter(([, value]) => value !== undefined)) },
      }))
      if (!updated) throw new NotFoundError('Account not found')
      return updated
    },

    /**
     * Creates an API key and returns its raw value, which is never shown again.
     * @example const { key } = await gateway.admin.createKey({ kind: 'management', name: 'ops' })
     */
    async createKey(input: CreateKeyInput = {}) {
      const parsed = parseInput(CreateKeyInputSchema, input, 'input')
      const account = await accountFor(parsed.accountId)
      const { rawKey, record } = await issueApiKey(repositories, account, {
        kind: parsed.kind,
        name: parsed.name,
        workspaceId: parsed.workspaceId,
      })
      return { key: rawKey, record }
    },

    /**
     * Makes an operator-chosen raw key (e.g. `MODELGATE_MANAGEMENT_KEY`) a management key of the
     * default account, creating the account on first use. Idempotent.
     */
    async ensureManagementKey(rawKey: string, options: { accountId?: string; name?: string } = {}) {
      const account = await accountFor(options.accountId)
      return ensureManagementKey(repositories, account, rawKey, options.name)
    },

    async createWorkspace(accountIdOrSlug: string | undefined, input: CreateWorkspaceInput) {
      const parsed = parseInput(CreateWorkspaceInputSchema, input, 'input')
      const account = await accountFor(accountIdOrSlug)
      return repositories.workspaces.create(account, parsed)
    },

    async getWorkspace(accountIdOrSlug: string | undefined, workspaceIdOrSlug: string) {
      return workspaceFor(await accountFor(accountIdOrSlug), workspaceIdOrSlug)
    },

    async listWorkspaces(accountIdOrSlug: string | undefined, offset = 0, limit = 100) {
      const account = await accountFor(accountIdOrSlug)
      return repositories.workspaces.listForAccount(account.id, offset, limit)
    },

    async updateWorkspace(accountIdOrSlug: string | undefined, workspaceIdOrSlug: string, input: UpdateWorkspaceInput) {
      const parsed = parseInput(UpdateWorkspaceInputSchema, input, 'input')
      const workspace = await workspaceFor(await accountFor(accountIdOrSlug), workspaceIdOrSlug)
      const updated = await repositories.workspaces.update(workspace.id, parsed)
      if (!updated) throw new NotFoundError('Workspace not found')
      return updated
    },

    /**
     * Deletes a workspace. Deleting the default one leaves the account without a default, so
     * routes that fall back to it answer 400 and ask for `workspace_id` (spec POST /byok).
     */
    async deleteWorkspace(accountIdOrSlug: string | undefined, workspaceIdOrSlug: string) {
      const account = await accountFor(accountIdOrSlug)
      const workspace = await workspaceFor(account, workspaceIdOrSlug)
      // Unset the default first: a crash after this step leaves a plain workspace, never a default to resurrect.
      if (account.defaultWorkspaceId === workspace.id) {
        await repositories.accounts.update(account.id, (current) =>
          current.defaultWorkspaceId === workspace.id ? { ...current, defaultWorkspaceId: null } : current,
        )
      }
      return repositories.workspaces.delete(workspace.id)
    },
  }
}

export type GatewayAdmin = ReturnType<typeof createAdmin>
