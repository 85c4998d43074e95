/**
 * Interns, their vaults, and the idempotency records of intern creation. An intern's name is unique
 * per creator within a workspace: the store's unique key decides between concurrent writers.
 */

import { StorageConflictError } from '../core/errors'
import type { JsonValue, RecordInput, StorageDriver } from '../storage/contract'
import { isUniqueConflict, retryLostRaces, updateRecord } from './mutate'
import { creationSortKey } from './sort-key'

export const INTERNS = 'interns'
export const VAULTS = 'vaults'
export const INTERN_CREATIONS = 'intern_creations'
export const INTERN_CONVERSATIONS = 'intern_conversations'

export type InternStatus =
  | 'awaiting_messaging_install'
  | 'queued'
  | 'provisioning'
  | 'running'
  | 'failed'
  | 'stopped'
  | 'destroying'
  | 'destroy_failed'

/** How the run of a session-aware prompt handles consent (OpenRouter's `approval_mode`). */
export type ConversationApprovalMode = 'self-drive' | 'manual'

/**
 * An intern keeps one conversation; `sessionId` names it once a session-aware chat started it, and
 * `approvalMode` is the mode its latest run started with (a tool reply continues under it).
 */
type ConversationData = { items: JsonValue[]; sessionId?: string; approvalMode?: ConversationApprovalMode }

export interface ConversationSession {
  id: string
  approvalMode: ConversationApprovalMode
}

const readConversation = async (
  storage: StorageDriver,
  internId: string,
): Promise<{ items: JsonValue[]; sessionId: string | null; approvalMode: ConversationApprovalMode | null }> => {
  const record = await storage.get<ConversationData>(INTERN_CONVERSATIONS, internId)
  return { items: (record?.data.items ?? []) as JsonValue[], sessionId: record?.data.sessionId ?? null, approvalMode: record?.data.approvalMode ?? null }
}

export type InternProgress = { step_label: string; step_number: number; total_steps: number }

export type InternRecord = {
  id: string
  accountId: string
  workspaceId: string
  /** The acting user that created it; names are unique per creator within a workspace. */
  creatorUserId: string
  name: string
  description: string | null
  instructions: string | null
  /** The configured model; `null` means the workspace default. */
  model: string | null
  /** The model the running intern uses (set at provisioning; a `model` update waits for the next one). */
  runningModel: string | null
  /** The provisioning run that may still change this record (see interns/service.ts). */
  provisioningId?: string | null
  /** Who runs that provisioning, and until when it counts as alive (interns/lease.ts). */
  provisioningLease?: { holder: string; expiresAt: string } | null
  status: InternStatus
  hostname: string | null
  progress: InternProgress | null
  lastFailureMessage: string | null
  vaultId: string | null
  attachedVaultId: string | null
  createdAt: string
  updatedAt: string
  sortKey: string
}

export type VaultRecord = {
  id: string
  accountId: string
  workspaceId: string
  /** The intern that owns the vault. */
  internId: string
  createdAt: string
}

export type InternCreationRecord = {
  id: string
  accountId: string
  fingerprint: string
  internId: string
  vaultId: string
  state: 'started' | 'completed'
  createdAt: string
}

const nameUnique = (intern: Pick<InternRecord, 'workspaceId' | 'creatorUserId' | 'name'>) =>
  `name:${intern.workspaceId}:${intern.creatorUserId}:${intern.name}`

const toInput = (intern: InternRecord): RecordInput<InternRecord> => ({
  id: intern.id,
  data: intern,
  indexes: { accountId: intern.accountId, workspaceId: intern.workspaceId, status: intern.status },
  uniques: [nameUnique(intern)],
  sortKey: intern.sortKey,
})

export const createInternsRepository = (storage: StorageDriver, now: () => Date) => ({
  newSortKey: (createdAt: string) => creationSortKey(createdAt),

  /** Creates the intern; `'exists'` when this id is already stored, `'name_taken'` when another holds the name. */
  async create(intern: InternRecord): Promise<InternRecord | 'exists' | 'name_taken'> {
    try {
      return (await storage.create(INTERNS, toInput(intern))).data
    } catch (error) {
      if (!isUniqueConflict(error)) throw error
      return (await storage.get(INTERNS, intern.id)) ? 'exists' : 'name_taken'
    }
  },

  async get(id: string): Promise<InternRecord | null> {
    return (await storage.get<InternRecord>(INTERNS, id))?.data ?? null
  },

  /**
   * Compare-and-set update; `change` returns `null` to leave the record alone. Unique conflicts propagate.
   * `shouldKeepUpdatedAt` is for bookkeeping callers see nothing of (a lease renewal), so `updated_at` stays.
   */
  async update(
    id: string,
    change: (current: InternRecord) => InternRecord | null,
    options: { shouldKeepUpdatedAt?: boolean } = {},
  ): Promise<InternRecord | null> {
    const record = await updateRecord<InternRecord>(storage, INTERNS, id, (current) => {
      const next = change(current.data)
      return next ? toInput({ ...next, id, updatedAt: options.shouldKeepUpdatedAt ? next.updatedAt : now().toISOString() }) : null
    })
    return record?.data ?? null
  },

  delete: (id: string) => storage.delete(INTERNS, id),

  /** Interns of every account in one status, for this gateway's own housekeeping (the provisioning sweep). */
  async listByStatus(status: InternStatus, offset: number, limit: number): Promise<InternRecord[]> {
    return (await storage.list<InternRecord>(INTERNS, { where: { status }, offset, limit })).items.map((item) => item.data)
  },

  async list(where: { workspaceId: string; status?: string }, offset: number, limit: number) {
    const filter: Record<string, string> = { workspaceId: where.workspaceId }
    if (where.status) filter.status = where.status
    const page = await storage.list<InternRecord>(INTERNS, { where: filter, offset, limit })
    return { interns: page.items.map((item) => item.data), totalCount: page.totalCount }
  },

  vaults: {
    async create(vault: VaultRecord): Promise<VaultRecord> {
      try {
        return (await storage.create(VAULTS, { id: vault.id, data: vault, indexes: { internId: vault.internId } })).data
      } catch (error) {
        if (!isUniqueConflict(error)) throw error
        const existing = await storage.get<VaultRecord>(VAULTS, vault.id)
        if (!existing) throw error
        return existing.data
      }
    },
    async get(id: string): Promise<VaultRecord | null> {
      return (await storage.get<VaultRecord>(VAULTS, id))?.data ?? null
    },
    delete: (id: string) => storage.delete(VAULTS, id),
  },

  conversations: {
    async get(internId: string): Promise<JsonValue[]> {
      return (await readConversation(storage, internId)).items
    },
    /** The conversation with the session it belongs to (`null` until a session-aware chat names one). */
    session: (internId: string) => readConversation(storage, internId),
    /**
     * Replaces the conversation with `change(current items)` by compare-and-set, creating it on first
     * use; a concurrent turn that wrote first is re-read and `change` applied on top of it. With
     * `session`, a conversation of another session is replaced: `change` starts from no items.
     */
    async update(internId: string, change: (items: JsonValue[]) => JsonValue[], session?: ConversationSession) {
      await retryLostRaces(async () => {
        const current = await storage.get<ConversationData>(INTERN_CONVERSATIONS, internId)
        const isSameSession = session === undefined || current?.data.sessionId === session.id
        const items = change(isSameSession ? (current?.data.items ?? []) : [])
        const sessionId = session?.id ?? current?.data.sessionId
        const approvalMode = session?.approvalMode ?? current?.data.approvalMode
        const input = {
          id: internId,
          data: { items, ...(sessionId === undefined ? {} : { sessionId }), ...(approvalMode === undefined ? {} : { approvalMode }) },
        }
        if (current) return storage.update(INTERN_CONVERSATIONS, internId, current.version, input)
        try {
          return await storage.create(INTERN_CONVERSATIONS, input)
        } catch (error) {
          // Another turn created it first: a lost race like any other.
          if (isUniqueConflict(error)) throw new StorageConflictError('version')
          throw error
        }
      })
    },
    delete: (internId: string) => storage.delete(INTERN_CONVERSATIONS, internId),
  },

  creations: {
    /** Claims a creation key; returns the stored record, whether this call created it or not. */
    async claim(record: InternCreationRecord): Promise<{ record: InternCreationRecord; version: number; isNew: boolean }> {
      try {
        const stored = await storage.create(INTERN_CREATIONS, { id: record.id, data: record })
        return { record: stored.data, version: stored.version, isNew: true }
      } catch (error) {
        if (!isUniqueConflict(error)) throw error
        const existing = await storage.get<InternCreationRecord>(INTERN_CREATIONS, record.id)
        if (!existing) throw error
        return { record: existing.data, version: existing.version, isNew: false }
      }
    },
    async complete(id: string) {
      await updateRecord<InternCreationRecord>(storage, INTERN_CREATIONS, id, (current) =>
        current.data.state === 'completed' ? null : { id, data: { ...current.data, state: 'completed' } },
      )
    },
    /** Frees a creation key; with `expectedVersion`, only while the claim is unchanged (else a version conflict). */
    release: (id: string, expectedVersion?: number) => storage.delete(INTERN_CREATIONS, id, expectedVersion),
  },
})
