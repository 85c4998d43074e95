/**
 * API keys. The raw key exists only in the response that creates it; the store keeps its SHA-256
 * hex hash, which doubles as the key's public address (`/keys/{hash}`, `allowed_api_key_hashes`).
 */

import { randomHex, sha256Hex } from '../core/crypto'
import type { RecordInput, StorageDriver } from '../storage/contract'
import type { ResponseCacheSetting } from './response-cache'
import { creationSortKey } from './sort-key'
import { updateRecord, withoutUndefined } from './mutate'

export const API_KEYS = 'api_keys'

export type ApiKeyKind = 'management' | 'regular'

/** The calendar period after which a key's limit starts again (UTC; weeks start on Monday); `null`: never. */
export type LimitReset = 'daily' | 'weekly' | 'monthly'

/** A key's spending limit (docs/decisions.md, Credits and limits). */
export type ApiKeyLimits = {
  /** Nano-dollars (src/core/money.ts) the key may spend per period; `null` for no limit. */
  limitNano: number | null
  limitReset: LimitReset | null
  /** Whether BYOK requests count toward the limit, at the list price. */
  includeByokInLimit: boolean
  /** ISO 8601; from then on the key is refused (401). */
  expiresAt: string | null
}

export type ApiKeyRecord = {
  /** SHA-256 hex of the raw key; also the record id. */
  hash: string
  accountId: string
  workspaceId: string
  kind: ApiKeyKind
  name: string
  /** Masked form of the raw key, safe to show. */
  label: string
  disabled: boolean
  creatorUserId: string
  createdAt: string
  updatedAt: string | null
  /** The response cache's default for the key's requests, before its workspace's (docs/decisions.md, Response cache). */
  cache?: ResponseCacheSetting | null
  /** Listing order: creation order. */
  sortKey: string
} & ApiKeyLimits

const NO_LIMITS: ApiKeyLimits = Object.freeze({ limitNano: null, limitReset: null, includeByokInLimit: false, expiresAt: null })

// Keys stored before limits existed read as unlimited and never expiring.
const withLimits = (key: ApiKeyRecord): ApiKeyRecord => (key.includeByokInLimit === undefined ? { ...NO_LIMITS, ...key } : key)

const RAW_KEY_PREFIX = 'mg-v1-'
const GENERATED_KEY = /^mg-v1-[0-9a-f]{64}$/

/** A new raw key: our prefix and 256 random bits. Shown to the caller once, never stored. */
export const generateRawKey = (): string => `${RAW_KEY_PREFIX}${randomHex(32)}`

/** Masks a raw key as its public counterpart does (`mg-v1-0e6...1c96`): never more than 7 characters of secret. */
export const labelForRawKey = (rawKey: string): string => {
  if (GENERATED_KEY.test(rawKey)) return `${RAW_KEY_PREFIX}${rawKey.slice(6, 9)}...${rawKey.slice(-4)}`
  return `${rawKey.slice(0, 3)}...${rawKey.slice(-4)}`
}

const toInput = (key: ApiKeyRecord): RecordInput<ApiKeyRecord> => ({
  id: key.hash,
  data: key,
  indexes: { accountId: key.accountId, kind: key.kind, disabled: String(key.disabled) },
  sortKey: key.sortKey,
})

export type ApiKeyFilter = { kind?: ApiKeyKind; disabled?: boolean; workspaceId?: string }

export const createApiKeysRepository = (storage: StorageDriver, now: () => Date) => ({
  /**
   * Stores the hash of `rawKey`; throws `StorageConflictError('unique')` when that key already exists, or when
   * another key holds `claim` (a unique name that makes "create one key of this kind" atomic across processes).
   */
  async create(
    rawKey: string,
    fields: Pick<ApiKeyRecord, 'accountId' | 'workspaceId' | 'kind' | 'name' | 'creatorUserId'> & Partial<ApiKeyLimits> & Pick<ApiKeyRecord, 'cache'>,
    claim?: string,
  ) {
    const createdAt = now().toISOString()
    const key: ApiKeyRecord = {
      ...NO_LIMITS,
      ...(withoutUndefined(fields) as typeof fields),
      hash: await sha256Hex(rawKey),
      label: labelForRawKey(rawKey),
      disabled: false,
      createdAt,
      updatedAt: null,
      sortKey: creationSortKey(createdAt),
    }
    return (await storage.create(API_KEYS, claim === undefined ? toInput(key) : { ...toInput(key), uniques: [claim] })).data
  },

  async get(hash: string): Promise<ApiKeyRecord | null> {
    const record = await storage.get<ApiKeyRecord>(API_KEYS, hash)
    return record ? withLimits(record.data) : null
  },

  async update(
    hash: string,
    change: Partial<Pick<ApiKeyRecord, 'name' | 'disabled' | 'limitNano' | 'limitReset' | 'includeByokInLimit' | 'cache'>>,
  ): Promise<ApiKeyRecord | null> {
    const record = await updateRecord<ApiKeyRecord>(storage, API_KEYS, hash, (current) =>
      toInput({ ...withLimits(current.data), ...withoutUndefined(change), updatedAt: now().toISOString() }),
    )
    return record ? withLimits(record.data) : null
  },

  async delete(hash: string): Promise<boolean> {
    return storage.delete(API_KEYS, hash)
  },

  async listForAccount(accountId: string, filter: ApiKeyFilter, offset: number, limit: number) {
    const where: Record<string, string> = { accountId }
    if (filter.kind) where.kind = filter.kind
    if (filter.disabled !== undefined) where.disabled = String(filter.disabled)
    if (filter.workspaceId === undefined) {
      const page = await storage.list<ApiKeyRecord>(API_KEYS, { where, offset, limit })
      return { keys: page.items.map((item) => withLimits(item.data)), totalCount: page.totalCount }
    }
    // Key records carry no workspace index (stored keys were written without one), so the workspace is matched on
    // the record: an account's keys are a management-sized list.
    const all = await storage.list<ApiKeyRecord>(API_KEYS, { where })
    const inWorkspace = all.items.filter((item) => item.data.workspaceId === filter.workspaceId)
    return { keys: inWorkspace.slice(offset, offset + limit).map((item) => withLimits(item.data)), totalCount: inWorkspace.length }
  },
})
