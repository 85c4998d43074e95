/**
 * The programmatic admin API (`gateway.admin`): what an operator does outside HTTP, such as minting
 * the first management key, setting account flags and managing workspaces. Inputs are validated
 * like request bodies; failures are `GatewayError`s with a message naming the field.
 */

import { InvalidRequestError, NotFoundError } from '../core/errors'
import { fromNano, toNano } from '../core/money'
import { parseInput } from '../core/validation'
import type { SecretBox } from '../core/secrets'
import type { AccountRecord } from '../repositories/accounts'
import type { ApiKeyRecord } from '../repositories/api-keys'
import { auditSealedSecrets, reencryptByokCredentials } from '../services/byok'
import type { Repositories } from '../repositories'
import type { WorkspaceRecord } from '../repositories/workspaces'
import { createAccount, ensureDefaultAccount, requireAccount } from '../services/accounts'
import { ensureManagementKey, findKeyByHashPrefix, issueApiKey, mintFirstManagementKey } from '../services/api-keys'
import { removeWorkspace } from '../services/workspaces'
import { accountCredits, grantCredits } from '../services/credits'
import { keyTargetId, OPERATOR, type AuditEvent, type AuditLog } from '../services/audit-log'
import { deleteWorkspaceBudget, setWorkspaceBudget } from '../services/workspace-budgets'
import { CreateWorkspaceBodySchema, UpdateWorkspaceBodySchema } from '../routes/workspaces.schemas'
import { WORKSPACE_SETTING_WIRE_NAMES, fromWorkspaceWire } from '../routes/workspaces'
import { assertSemanticAvailable, cacheSettingToWire } from '../routes/response-cache.schemas'
import type { ResponseCacheSetting } from '../repositories/response-cache'
import type { WorkspaceSettings } from '../repositories/workspaces'
import {
  AccountFlagsInputSchema,
  BudgetIntervalSchema,
  CreateAccountInputSchema,
  CreateKeyInputSchema,
  GrantCreditsInputSchema,
  SetWorkspaceBudgetInputSchema,
  UpdateKeyLimitsInputSchema,
  type CreateAccountInput,
  type CreateKeyInput,
  type GrantCreditsInput,
  type SetWorkspaceBudgetInput,
  type UpdateKeyLimitsInput,
} from './admin.schemas'

const nanoOrNull = (usd: number | null | undefined) => (usd === undefined ? undefined : usd === null ? null : toNano(usd))

/** Workspace settings as the admin API takes them: camelCase names of the wire fields. */
export type WorkspaceSettingsInput = WorkspaceSettings
export type CreateWorkspaceInput = WorkspaceSettings & { name: string; slug: string }

// The admin API validates workspace settings with the very schemas of the HTTP routes.
const toWireNames = (input: object): Record<string, unknown> => {
  const wire: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(input)) {
    const wireName = (WORKSPACE_SETTING_WIRE_NAMES as Record<string, string>)[name]
    if (!wireName) throw new InvalidRequestError(`input.${name}: unknown workspace setting`)
    // The response cache's setting is the one whose value has wire names of its own (`ttl_seconds`).
    wire[wireName] = name === 'cache' && value !== undefined ? cacheSettingToWire(value as ResponseCacheSetting | null) : value
  }
  return wire
}

/** What a key's record says of its settings, in the wire's names, for its audit entry. */
const keySettings = (record: ApiKeyRecord) => ({
  name: record.name,
  kind: record.kind,
  workspace_id: record.workspaceId,
  creator_user_id: record.creatorUserId,
  limit: record.limitNano === null ? null : fromNano(record.limitNano),
  limit_reset: record.limitReset,
  include_byok_in_limit: record.includeByokInLimit,
  expires_at: record.expiresAt,
})

/** `hasSemanticModel`: whether the gateway names an embedding model for the semantic cache, which a workspace may then turn on. */
export const createAdmin = (repositories: Repositories, secrets: SecretBox, now: () => Date, auditLog: AuditLog, hasSemanticModel: boolean) => {
  // Every change made here is the operator's: no key acted, no request carried it (docs/decisions.md, Audit log).
  const audit = (event: Omit<AuditEvent, 'actor' | 'requestId'>) => auditLog.record({ ...event, actor: OPERATOR, requestId: null })
  const auditKeyCreated = (record: ApiKeyRecord) =>
    audit({ action: 'key.create', target: { type: 'key', id: keyTargetId(record.hash) }, accountId: record.accountId, workspaceId: record.workspaceId, changes: keySettings(record) })

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
      await audit({ action: 'account.create', target: { type: 'account', id: account.id }, accountId: account.id, changes: { ...parsed } })
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
      await audit({ action: 'account.update_flags', target: { type: 'account', id: account.id }, accountId: account.id, changes: { ...parsed } })
      return updated
    },

    /**
     * Creates an API key and returns its raw value, which is never shown again.
     * @example const { key } = await gateway.admin.createKey({ kind: 'management', name: 'ops' })
     */
    async createKey(input: CreateKeyInput = {}) {
      const parsed = parseInput(CreateKeyInputSchema, input, 'input')
      if (parsed.expiresAt && Date.parse(parsed.expiresAt) <= now().getTime()) throw new InvalidRequestError('input.expiresAt: must be in the future')
      const account = await accountFor(parsed.accountId)
      const { rawKey, record } = await issueApiKey(repositories, account, {
        kind: parsed.kind,
        name: parsed.name,
        workspaceId: parsed.workspaceId,
        creatorUserId: parsed.creatorUserId,
        limitNano: nanoOrNull(parsed.limit),
        limitReset: parsed.limitReset,
        includeByokInLimit: parsed.includeByokInLimit,
        expiresAt: parsed.expiresAt,
      })
      await auditKeyCreated(record)
      return { key: rawKey, record }
    },

    /**
     * Sets a key's spending limit (USD, `null` for none), its reset period and whether BYOK spend counts;
     * omitted fields stay unchanged. The key is named by its hash or a prefix of at least 8 hex characters.
     */
    async updateKeyLimits(accountIdOrSlug: string | undefined, hashOrPrefix: string, input: UpdateKeyLimitsInput) {
      const parsed = parseInput(UpdateKeyLimitsInputSchema, input, 'input')
      const key = await findKeyByHashPrefix(repositories, await accountFor(accountIdOrSlug), hashOrPrefix)
      const updated = await repositories.apiKeys.update(key.hash, {
        limitNano: nanoOrNull(parsed.limit),
        limitReset: parsed.limitReset,
        includeByokInLimit: parsed.includeByokInLimit,
      })
      if (!updated) throw new NotFoundError('API key not found')
      await audit({
        action: 'key.update',
        target: { type: 'key', id: keyTargetId(key.hash) },
        accountId: key.accountId,
        workspaceId: key.workspaceId,
        changes: { limit: parsed.limit, limit_reset: parsed.limitReset, include_byok_in_limit: parsed.includeByokInLimit },
      })
      return updated
    },

    /**
     * Grants an account credits (USD; negative takes some back). Each grant is kept as a numbered record
     * (`listCreditGrants`); the account's total is the sum of them.
     * @example await gateway.admin.grantCredits('acme', { amount: 50, note: 'March invoice' })
     */
    async grantCredits(accountIdOrSlug: string | undefined, input: GrantCreditsInput) {
      const parsed = parseInput(GrantCreditsInputSchema, input, 'input')
      const account = await accountFor(accountIdOrSlug)
      const { grant } = await grantCredits(repositories, account.id, { amountNano: toNano(parsed.amount), note: parsed.note, grantedBy: parsed.grantedBy })
      await audit({
        action: 'credits.grant',
        target: { type: 'credit_grant', id: grant.id },
        accountId: account.id,
        changes: { amount: parsed.amount, note: parsed.note, granted_by: parsed.grantedBy },
      })
      return { grant, ...(await accountCredits(repositories, (await repositories.accounts.get(account.id))!, now())) }
    },

    /** What the account was granted and spent, in USD, as `GET /credits` reports it. */
    async getCredits(accountIdOrSlug: string | undefined) {
      return accountCredits(repositories, await accountFor(accountIdOrSlug), now())
    },

    /** The account's credit grants, oldest first. */
    async listCreditGrants(accountIdOrSlug: string | undefined, offset = 0, limit = 100) {
      const account = await accountFor(accountIdOrSlug)
      return repositories.creditGrants.listForAccount(account.id, offset, limit)
    },

    /**
     * Sets a workspace's spend budget for one interval (`daily`, `weekly`, `monthly` or `lifetime`; UTC periods),
     * replacing the limit of an existing one. `includeByokInBudgets`, when given, applies to all its budgets.
     */
    async setWorkspaceBudget(accountIdOrSlug: string | undefined, workspaceIdOrSlug: string, input: SetWorkspaceBudgetInput) {
      const parsed = parseInput(SetWorkspaceBudgetInputSchema, input, 'input')
      const workspace = await workspaceFor(await accountFor(accountIdOrSlug), workspaceIdOrSlug)
      const updated = await setWorkspaceBudget(repositories, workspace, parsed.interval, toNano(parsed.limitUsd), parsed.includeByokInBudgets)
      await audit({
        action: 'workspace_budget.set',
        target: { type: 'workspace_budget', id: updated.budget.id },
        accountId: workspace.accountId,
        workspaceId: workspace.id,
        changes: { interval: parsed.interval, limit_usd: parsed.limitUsd, include_byok_in_budgets: parsed.includeByokInBudgets },
      })
      return updated
    },

    /** Removes a workspace's budget for one interval; resolves `false` when it had none. */
    async deleteWorkspaceBudget(accountIdOrSlug: string | undefined, workspaceIdOrSlug: string, interval: string) {
      const parsedInterval = parseInput(BudgetIntervalSchema, interval, 'input')
      const workspace = await workspaceFor(await accountFor(accountIdOrSlug), workspaceIdOrSlug)
      const budget = workspace.budgets.find((each) => each.interval === parsedInterval)
      const deleted = await deleteWorkspaceBudget(repositories, workspace, parsedInterval)
      if (deleted) {
        await audit({
          action: 'workspace_budget.delete',
          target: { type: 'workspace_budget', id: budget?.id ?? `${workspace.id}:${parsedInterval}` },
          accountId: workspace.accountId,
          workspaceId: workspace.id,
          changes: { interval: parsedInterval },
        })
      }
      return deleted
    },

    /**
     * Makes an operator-chosen raw key (e.g. `MODELGATE_MANAGEMENT_KEY`) a management key of the
     * default account, creating the account on first use. Idempotent.
     */
    async ensureManagementKey(rawKey: string, options: { accountId?: string; name?: string } = {}) {
      const account = await accountFor(options.accountId)
      const ensured = await ensureManagementKey(repositories, account, rawKey, options.name)
      if (ensured.created) await auditKeyCreated(ensured.record)
      return ensured
    },

    /** Lists an account's keys (never their raw values), in creation order; disabled ones only when asked. */
    async listKeys(
      accountIdOrSlug: string | undefined,
      options: { offset?: number; limit?: number; includeDisabled?: boolean; kind?: 'management' | 'regular' } = {},
    ) {
      const account = await accountFor(accountIdOrSlug)
      const filter = { ...(options.includeDisabled ? {} : { disabled: false }), ...(options.kind ? { kind: options.kind } : {}) }
      return repositories.apiKeys.listForAccount(account.id, filter, options.offset ?? 0, options.limit ?? 100)
    },

    /**
     * Disables a key of the account, named by its hash or a prefix of at least 8 hex characters; it stops
     * working at once, in every gateway on the store. Unlike `PATCH /keys/{hash}`, this may disable the last
     * management key: it is the way out when that key leaked (mint a new one with `createKey`).
     */
    async revokeKey(accountIdOrSlug: string | undefined, hashOrPrefix: string) {
      const key = await findKeyByHashPrefix(repositories, await accountFor(accountIdOrSlug), hashOrPrefix)
      const updated = await repositories.apiKeys.update(key.hash, { disabled: true })
      if (!updated) throw new NotFoundError('API key not found')
      await audit({ action: 'key.revoke', target: { type: 'key', id: keyTargetId(key.hash) }, accountId: key.accountId, workspaceId: key.workspaceId, changes: { disabled: true } })
      return updated
    },

    /**
     * First run: when the account (default: the default account) has no management key at all, mints one and
     * returns its raw value, shown once; otherwise `null`. Safe from several processes starting together.
     */
    async mintFirstManagementKey(options: { accountId?: string } = {}) {
      const minted = await mintFirstManagementKey(repositories, await accountFor(options.accountId))
      if (minted) await auditKeyCreated(minted.record)
      return minted && { key: minted.rawKey, record: minted.record }
    },

    async createWorkspace(accountIdOrSlug: string | undefined, input: CreateWorkspaceInput) {
      const parsed = parseInput(CreateWorkspaceBodySchema, toWireNames(input), 'input')
      assertSemanticAvailable(parsed.cache, hasSemanticModel, 'input')
      const account = await accountFor(accountIdOrSlug)
      const workspace = await repositories.workspaces.create(account, fromWorkspaceWire(parsed) as CreateWorkspaceInput)
      await audit({ action: 'workspace.create', target: { type: 'workspace', id: workspace.id }, accountId: account.id, workspaceId: workspace.id, changes: parsed })
      return workspace
    },

    async getWorkspace(accountIdOrSlug: string | undefined, workspaceIdOrSlug: string) {
      return workspaceFor(await accountFor(accountIdOrSlug), workspaceIdOrSlug)
    },

    async listWorkspaces(accountIdOrSlug: string | undefined, offset = 0, limit = 100) {
      const account = await accountFor(accountIdOrSlug)
      return repositories.workspaces.listForAccount(account.id, offset, limit)
    },

    async updateWorkspace(accountIdOrSlug: string | undefined, workspaceIdOrSlug: string, input: WorkspaceSettingsInput) {
      const parsed = parseInput(UpdateWorkspaceBodySchema, toWireNames(input), 'input')
      assertSemanticAvailable(parsed.cache, hasSemanticModel, 'input')
      const workspace = await workspaceFor(await accountFor(accountIdOrSlug), workspaceIdOrSlug)
      const updated = await repositories.workspaces.update(workspace.id, fromWorkspaceWire(parsed))
      if (!updated) throw new NotFoundError('Workspace not found')
      await audit({ action: 'workspace.update', target: { type: 'workspace', id: workspace.id }, accountId: workspace.accountId, workspaceId: workspace.id, changes: parsed })
      return updated
    },

    /**
     * Re-seals every BYOK credential with the primary encryption key (the first of `encryptionKeys`),
     * after a master-key rotation. Old keys must stay configured until this has run.
     */
    async reencryptSecrets() {
      const outcome = await reencryptByokCredentials(repositories, secrets)
      // Across every account: stored and logged, but listed by no account's `GET /audit-log`.
      await audit({
        action: 'byok.reseal',
        target: { type: 'byok_credentials', id: await secrets.primaryKeyId() },
        accountId: null,
        changes: { scanned: outcome.scanned, moved: outcome.moved, failed: outcome.failed?.length ?? 0 },
      })
      return outcome
    },

    /**
     * Whether this gateway's encryption keys open the stored BYOK credentials: key ids in use but not configured
     * (with how many credentials each) and credentials that fail to open. The runner refuses to start on `missing`.
     */
    auditSecrets: () => auditSealedSecrets(repositories, secrets),

    /**
     * Deletes audit entries older than the gateway's `auditLog.retentionDays`, a bounded number per call (the gateway
     * also sweeps on its own, every `auditLog.sweepIntervalMs`); resolves with how many went.
     */
    sweepAuditLog: () => auditLog.sweep(),

    /** How many BYOK credentials exist across all accounts (the runner checks this before starting without a key). */
    async countByokCredentials() {
      return (await repositories.byok.list({}, 0, 0)).totalCount
    },

    /**
     * Deletes a workspace. Deleting the default one leaves the account without a default, so
     * routes that fall back to it answer 400 and ask for `workspace_id` (spec POST /byok).
     */
    async deleteWorkspace(accountIdOrSlug: string | undefined, workspaceIdOrSlug: string) {
      const account = await accountFor(accountIdOrSlug)
      const workspace = await workspaceFor(account, workspaceIdOrSlug)
      const removed = await removeWorkspace(repositories, account, workspace)
      if (removed) await audit({ action: 'workspace.delete', target: { type: 'workspace', id: workspace.id }, accountId: account.id, workspaceId: workspace.id })
      return removed
    },
  }
}

export type GatewayAdmin = ReturnType<typeof createAdmin>
