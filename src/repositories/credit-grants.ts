/**
 * Credit grants: one record per grant an operator made, numbered 1, 2, 3… per account. The number is the
 * record's id, so two grants can never take the same one, and the account's `credits.grantCount` says how
 * many of them its `credits.grantedNano` already holds (src/services/credits.ts applies them in order).
 */

import type { RecordInput, StorageDriver } from '../storage/contract'

export const CREDIT_GRANTS = 'credit_grants'

export type CreditGrantRecord = {
  id: string
  accountId: string
  /** 1 for the account's first grant, then one more per grant. */
  sequence: number
  /** Nano-dollars (src/core/money.ts); negative for a correction that takes credits back. */
  amountNano: number
  /** Why, in the operator's words; may be empty. */
  note: string
  /** Where the grant came from (`admin`, `cli`, or what the caller of the admin API says). */
  grantedBy: string
  createdAt: string
  sortKey: string
}

const grantId = (accountId: string, sequence: number) => `${accountId}:${sequence}`

// Zero-padded, so listing order is grant order.
const sequenceSortKey = (sequence: number) => sequence.toString().padStart(12, '0')

const toInput = (grant: CreditGrantRecord): RecordInput<CreditGrantRecord> => ({
  id: grant.id,
  data: grant,
  indexes: { accountId: grant.accountId },
  sortKey: grant.sortKey,
})

export const createCreditGrantsRepository = (storage: StorageDriver, now: () => Date) => ({
  /** Records grant number `sequence`; throws `StorageConflictError('unique')` when that number is taken. */
  async create(fields: Pick<CreditGrantRecord, 'accountId' | 'sequence' | 'amountNano' | 'note' | 'grantedBy'>): Promise<CreditGrantRecord> {
    const grant: CreditGrantRecord = {
      ...fields,
      id: grantId(fields.accountId, fields.sequence),
      createdAt: now().toISOString(),
      sortKey: sequenceSortKey(fields.sequence),
    }
    return (await storage.create(CREDIT_GRANTS, toInput(grant))).data
  },

  async get(accountId: string, sequence: number): Promise<CreditGrantRecord | null> {
    return (await storage.get<CreditGrantRecord>(CREDIT_GRANTS, grantId(accountId, sequence)))?.data ?? null
  },

  /** The account's grants in grant order. */
  async listForAccount(accountId: string, offset: number, limit: number) {
    const page = await storage.list<CreditGrantRecord>(CREDIT_GRANTS, { where: { accountId }, offset, limit })
    return { grants: page.items.map((item) => item.data), totalCount: page.totalCount }
  },
})
