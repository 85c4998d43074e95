/** Workspaces: group credentials, interns and defaults inside an account (spec: Workspace). */

import { deriveId, randomId } from '../core/crypto'
import type { RecordInput, StorageDriver } from '../storage/contract'
import type { AccountRecord } from './accounts'
import type { ResponseCacheSetting } from './response-cache'
import { creationSortKey } from './sort-key'
import { updateRecord, withoutUndefined } from './mutate'

export const WORKSPACES = 'workspaces'

export type ProviderSort = 'price' | 'throughput' | 'latency' | 'exacto'

/** How often a budget's spend starts again (UTC calendar periods, weeks from Monday); `lifetime` never. */
export type BudgetInterval = 'daily' | 'weekly' | 'monthly' | 'lifetime'

/** A spend budget of a workspace, at most one per interval (docs/decisions.md, Credits and limits). */
export type WorkspaceBudget = {
  id: string
  interval: BudgetInterval
  /** Nano-dollars (src/core/money.ts) the workspace may spend per interval. */
  limitNano: number
  createdAt: string
  updatedAt: string
}

export type WorkspaceRecord = {
  id: string
  accountId: string
  name: string
  slug: string
  description: string
  createdBy: string
  createdAt: string
  updatedAt: string
  defaultGuardrailId: string
  defaultImageModel: string
  defaultTextModel: string
  defaultProviderSort: ProviderSort
  disabledServerTools: string[] | null
  ioLoggingApiKeyIds: number[] | null
  ioLoggingSamplingRate: number
  includeByokInBudgets: boolean
  isDataDiscountLoggingEnabled: boolean
  isObservabilityBroadcastEnabled: boolean
  isObservabilityIoLoggingEnabled: boolean
  /**
   * Whether `/responses` answers are stored (docs/decisions.md, Stored responses) where the gateway stores them.
   * Absent on workspaces stored before the setting existed, which store.
   */
  isResponseStorageEnabled?: boolean
  /** The response cache's default for the workspace's requests (docs/decisions.md, Response cache); absent or null: off. */
  cache?: ResponseCacheSetting | null
  /** Spend budgets, enforced on every request of the workspace's keys. */
  budgets: WorkspaceBudget[]
  /** Listing order: creation order. */
  sortKey: string
}

// Workspaces stored before budgets existed have none.
const withBudgets = (workspace: WorkspaceRecord): WorkspaceRecord => (workspace.budgets ? workspace : { ...workspace, budgets: [] })

/** Settings `null` clears: back to what a new workspace gets (OpenRouter's update takes null for each). */
type ClearableSetting = 'description' | 'defaultImageModel' | 'defaultTextModel' | 'defaultProviderSort'

/** The settings a workspace may be created or updated with; the rest is managed by the gateway. */
export type WorkspaceSettings = Partial<
  Omit<
    WorkspaceRecord,
    'id' | 'accountId' | 'createdBy' | 'createdAt' | 'updatedAt' | 'defaultGuardrailId' | 'budgets' | 'sortKey' | ClearableSetting
  > & { [Setting in ClearableSetting]: WorkspaceRecord[Setting] | null }
>

/** Defaults for new workspaces, set once in the gateway options. */
export interface WorkspaceDefaults {
  textModel: string
  imageModel: string
  providerSort: ProviderSort
}

export const WORKSPACE_SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/
export const DEFAULT_WORKSPACE_SLUG = 'default'

const DERIVED_IDS_MAX = 4096
const derivedIds = new Map<string, Promise<string>>()

/**
 * The id of a workspace's own default guardrail, derived from the workspace id (docs/decisions.md, Accounts and
 * workspaces), so every process knows it without a read. Cached: the request path asks for it on every request.
 */
export const derivedGuardrailId = (workspaceId: string): Promise<string> => {
  let id = derivedIds.get(workspaceId)
  if (!id) {
    if (derivedIds.size >= DERIVED_IDS_MAX) derivedIds.clear()
    id = deriveId(`guardrail:${workspaceId}`)
    derivedIds.set(workspaceId, id)
  }
  return id
}

const slugUnique = (accountId: string, slug: string) => `slug:${accountId}:${slug}`

const toInput = (workspace: WorkspaceRecord): RecordInput<WorkspaceRecord> => ({
  id: workspace.id,
  data: workspace,
  indexes: { accountId: workspace.accountId },
  uniques: [slugUnique(workspace.accountId, workspace.slug)],
  sortKey: workspace.sortKey,
})

export const createWorkspacesRepository = (storage: StorageDriver, defaults: WorkspaceDefaults, now: () => Date) => {
  const cleared: Pick<WorkspaceRecord, ClearableSetting> = {
    description: '',
    defaultImageModel: defaults.imageModel,
    defaultTextModel: defaults.textModel,
    defaultProviderSort: defaults.providerSort,
  }
  /** The settings as stored: omitted ones left out (unchanged), cleared ones at a new workspace's value. */
  const toStored = (settings: WorkspaceSettings): Partial<WorkspaceRecord> => {
    const stored: Record<string, unknown> = withoutUndefined(settings)
    for (const setting of Object.keys(cleared) as ClearableSetting[]) if (stored[setting] === null) stored[setting] = cleared[setting]
    return stored as Partial<WorkspaceRecord>
  }

  return {
    /** Creates a workspace; throws `StorageConflictError('unique')` when the id or the slug is taken. */
    async create(account: AccountRecord, settings: WorkspaceSettings & { name: string; slug: string }, id = randomId()) {
      const timestamp = now().toISOString()
      const workspace: WorkspaceRecord = {
        id,
        accountId: account.id,
        ...cleared,
        disabledServerTools: null,
        ioLoggingApiKeyIds: null,
        ioLoggingSamplingRate: 1,
        includeByokInBudgets: false,
        isDataDiscountLoggingEnabled: false,
        isObservabilityBroadcastEnabled: false,
        isObservabilityIoLoggingEnabled: false,
        isResponseStorageEnabled: true,
        budgets: [],
        ...toStored(settings),
        name: settings.name,
        slug: settings.slug,
        createdBy: account.ownerUserId,
        // docs/decisions.md, Accounts and workspaces: the guardrail id is derived from the workspace id, so it is stable everywhere.
        defaultGuardrailId: await derivedGuardrailId(id),
        createdAt: timestamp,
        updatedAt: timestamp,
        sortKey: creationSortKey(timestamp),
      }
      return (await storage.create(WORKSPACES, toInput(workspace))).data
    },

    async get(id: string): Promise<WorkspaceRecord | null> {
      const record = await storage.get<WorkspaceRecord>(WORKSPACES, id)
      return record ? withBudgets(record.data) : null
    },

    /** A workspace of `accountId` by UUID or slug; another account's workspace reads as absent. */
    async findForAccount(accountId: string, idOrSlug: string): Promise<WorkspaceRecord | null> {
      const bySlug = await storage.findByUnique<WorkspaceRecord>(WORKSPACES, slugUnique(accountId, idOrSlug))
      if (bySlug) return withBudgets(bySlug.data)
      const byId = await this.get(idOrSlug)
      return byId && byId.accountId === accountId ? byId : null
    },

    async update(id: string, settings: WorkspaceSettings): Promise<WorkspaceRecord | null> {
      const record = await updateRecord<WorkspaceRecord>(storage, WORKSPACES, id, (current) =>
        toInput({ ...withBudgets(current.data), ...toStored(settings), updatedAt: now().toISOString() }),
      )
      return record ? withBudgets(record.data) : null
    },

    /** Points the workspace's traffic at another guardrail of its account (the caller checked that it is one). */
    async setDefaultGuardrail(id: string, guardrailId: string): Promise<WorkspaceRecord | null> {
      const record = await updateRecord<WorkspaceRecord>(storage, WORKSPACES, id, (current) =>
        toInput({ ...withBudgets(current.data), defaultGuardrailId: guardrailId, updatedAt: now().toISOString() }),
      )
      return record ? withBudgets(record.data) : null
    },

    /** Replaces the workspace's budgets with what `change` makes of them (compare-and-set, retried on a lost race). */
    async updateBudgets(id: string, change: (budgets: WorkspaceBudget[], timestamp: string) => WorkspaceBudget[]): Promise<WorkspaceRecord | null> {
      const record = await updateRecord<WorkspaceRecord>(storage, WORKSPACES, id, (current) => {
        const timestamp = now().toISOString()
        return toInput({ ...withBudgets(current.data), budgets: change(withBudgets(current.data).budgets, timestamp), updatedAt: timestamp })
      })
      return record ? withBudgets(record.data) : null
    },

    async delete(id: string): Promise<boolean> {
      return storage.delete(WORKSPACES, id)
    },

    async listForAccount(accountId: string, offset: number, limit: number) {
      const page = await storage.list<WorkspaceRecord>(WORKSPACES, { where: { accountId }, offset, limit })
      return { workspaces: page.items.map((item) => withBudgets(item.data)), totalCount: page.totalCount }
    },
  }
}
