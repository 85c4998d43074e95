/** Accounts: the tenants of a gateway. Each owns API keys and workspaces and has one default workspace. */

import { randomId } from '../core/crypto'
import type { RecordInput, StorageDriver, StoredRecord } from '../storage/contract'
import { isUniqueConflict, updateRecord } from './mutate'
import { creationSortKey } from './sort-key'

export const ACCOUNTS = 'accounts'

/** Programme memberships and similar switches; every flag defaults to false. */
export type AccountFlags = {
  /** Member of the interns programme (spec Authentication 3: others get 404 on intern routes). */
  interns: boolean
}

export type AccountRecord = {
  id: string
  name: string
  slug: string
  /** The user the account acts as; shown as `created_by` on workspaces it creates. */
  ownerUserId: string
  flags: AccountFlags
  /** `null` once the default workspace was deleted (spec: BYOK then asks for `workspace_id`). */
  defaultWorkspaceId: string | null
  /** What the operator granted (src/services/credits.ts): the sum of the grants applied so far. */
  credits: AccountCredits
  createdAt: string
  updatedAt: string
  /** Listing order: creation order. */
  sortKey: string
}

export type AccountCredits = {
  /** Sum of the applied grants, in nano-dollars (src/core/money.ts). */
  grantedNano: number
  /** Sequence number of the last grant applied; the next grant takes the next number. */
  grantCount: number
}

const NO_CREDITS: AccountCredits = Object.freeze({ grantedNano: 0, grantCount: 0 })

// Accounts stored before credits existed read as having none granted.
const withCredits = (account: AccountRecord): AccountRecord => (account.credits ? account : { ...account, credits: NO_CREDITS })

export const DEFAULT_ACCOUNT_SLUG = 'default'
export const ACCOUNT_SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/

const toInput = (account: AccountRecord): RecordInput<AccountRecord> => ({
  id: account.id,
  data: account,
  uniques: [`slug:${account.slug}`],
  sortKey: account.sortKey,
})

export const createAccountsRepository = (storage: StorageDriver, now: () => Date) => ({
  async get(id: string): Promise<AccountRecord | null> {
    const record = await storage.get<AccountRecord>(ACCOUNTS, id)
    return record ? withCredits(record.data) : null
  },

  async findBySlug(slug: string): Promise<AccountRecord | null> {
    const record = await storage.findByUnique<AccountRecord>(ACCOUNTS, `slug:${slug}`)
    return record ? withCredits(record.data) : null
  },

  /**
   * Creates an account that will own the workspace `defaultWorkspaceId`. Resolves the existing
   * account instead when `slug` is taken and `reuseExisting` is set (concurrent start-ups).
   */
  async create(input: { name: string; slug: string; flags?: Partial<AccountFlags>; reuseExisting?: boolean }) {
    const timestamp = now().toISOString()
    const account: AccountRecord = {
      id: randomId(),
      name: input.name,
      slug: input.slug,
      ownerUserId: `user_${randomId().replaceAll('-', '')}`,
      flags: { interns: input.flags?.interns ?? false },
      defaultWorkspaceId: randomId(),
      credits: NO_CREDITS,
      createdAt: timestamp,
      updatedAt: timestamp,
      sortKey: creationSortKey(timestamp),
    }
    try {
      return { account: withCredits((await storage.create(ACCOUNTS, toInput(account))).data), created: true }
    } catch (error) {
      if (!input.reuseExisting || !isUniqueConflict(error)) throw error
      const existing = await this.findBySlug(input.slug)
      if (!existing) throw error
      return { account: existing, created: false }
    }
  },

  async update(id: string, change: (account: AccountRecord) => AccountRecord): Promise<AccountRecord | null> {
    const record = await updateRecord<AccountRecord>(storage, ACCOUNTS, id, (current: StoredRecord<AccountRecord>) =>
      toInput({ ...change(withCredits(current.data)), id, updatedAt: now().toISOString() }),
    )
    return record ? withCredits(record.data) : null
  },

  async list(offset: number, limit: number) {
    const page = await storage.list<AccountRecord>(ACCOUNTS, { offset, limit })
    return { accounts: page.items.map((item) => withCredits(item.data)), totalCount: page.totalCount }
  },
})
