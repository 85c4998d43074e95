/**
 * BYOK credentials: a caller's own upstream-provider keys, per workspace. The raw key is never
 * stored; `secret` holds it sealed with AES-256-GCM (see core/secrets), and `label` a masked form.
 */

import type { SealedSecret } from '../core/secrets'
import type { RecordInput, StorageDriver } from '../storage/contract'
import { updateRecord } from './mutate'

export const BYOK_CREDENTIALS = 'byok_credentials'

export type ByokRecord = {
  id: string
  accountId: string
  workspaceId: string
  provider: string
  name: string
  label: string
  sortOrder: number
  disabled: boolean
  isFallback: boolean
  isByokOnly: boolean
  isRequired: boolean
  allowedApiKeyHashes: string[] | null
  allowedModels: string[] | null
  allowedUserIds: string[] | null
  declaredZdr: boolean | null
  secret: SealedSecret
  createdAt: string
  updatedAt: string
}

// spec GET /byok: stable order by sort_order, then created_at (then id, from the store).
const sortKeyOf = (record: ByokRecord) => `${String(record.sortOrder).padStart(10, '0')}|${record.createdAt}`

const toInput = (record: ByokRecord): RecordInput<ByokRecord> => ({
  id: record.id,
  data: record,
  indexes: { accountId: record.accountId, workspaceId: record.workspaceId, provider: record.provider },
  sortKey: sortKeyOf(record),
})

export const createByokRepository = (storage: StorageDriver, now: () => Date) => ({
  async create(record: ByokRecord) {
    return (await storage.create(BYOK_CREDENTIALS, toInput(record))).data
  },

  async get(id: string): Promise<ByokRecord | null> {
    return (await storage.get<ByokRecord>(BYOK_CREDENTIALS, id))?.data ?? null
  },

  /** Applies `change` with compare-and-set; `change` may be async only through prepared values. */
  async update(id: string, change: (current: ByokRecord) => ByokRecord | null): Promise<ByokRecord | null> {
    const record = await updateRecord<ByokRecord>(storage, BYOK_CREDENTIALS, id, (current) => {
      const next = change(current.data)
      return next ? toInput({ ...next, id, updatedAt: now().toISOString() }) : null
    })
    return record?.data ?? null
  },

  async delete(id: string): Promise<boolean> {
    return storage.delete(BYOK_CREDENTIALS, id)
  },

  async list(where: { accountId?: string; workspaceId?: string; provider?: string }, offset: number, limit?: number) {
    const filter = Object.fromEntries(Object.entries(where).filter(([, value]) => value !== undefined)) as Record<string, string>
    const page = await storage.list<ByokRecord>(BYOK_CREDENTIALS, { where: filter, offset, ...(limit === undefined ? {} : { limit }) })
    return { credentials: page.items.map((item) => item.data), totalCount: page.totalCount }
  },
})
