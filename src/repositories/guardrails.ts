/**
 * Guardrails (docs/decisions.md, Guardrails): named sets of rules an account applies to API keys and members
 * (one guardrail each at most) and, through each workspace's `default_guardrail_id`, to all of a workspace's
 * traffic. Assignments live in collections of their own, keyed by what they are assigned to, so "at most one
 * each" is the store's own uniqueness.
 */

import { StorageConflictError } from '../core/errors'
import type { RecordInput, StorageDriver } from '../storage/contract'
import { isUniqueConflict, retryLostRaces, updateRecord } from './mutate'
import { creationSortKey } from './sort-key'

export const GUARDRAILS = 'guardrails'
export const GUARDRAIL_KEY_ASSIGNMENTS = 'guardrail_key_assignments'
export const GUARDRAIL_MEMBER_ASSIGNMENTS = 'guardrail_member_assignments'

export type ContentFilterAction = 'block' | 'redact' | 'flag'

export const CONTENT_FILTER_BUILTIN_SLUGS = [
  'email',
  'phone',
  'ssn',
  'credit-card',
  'ip-address',
  'secrets',
  'person-name',
  'address',
  'regex-prompt-injection',
] as const
export type ContentFilterBuiltinSlug = (typeof CONTENT_FILTER_BUILTIN_SLUGS)[number]

/** Which messages a builtin reads: the caller's own (`user_only`) or every role, instructions and tool results included. */
export type ScanScope = 'user_only' | 'all_messages'

/** An operator's pattern (RE2 syntax, run in linear time by re2js). */
export type ContentFilter = { pattern: string; action: ContentFilterAction; label: string | null }

export type ContentFilterBuiltin = { slug: ContentFilterBuiltinSlug; action: ContentFilterAction; label: string | null; scanScope: ScanScope | null }

/** Model families with a zero-data-retention switch of their own (OpenRouter's `enforce_zdr_<family>`). */
export const ZDR_FAMILIES = ['anthropic', 'openai', 'google', 'xai', 'other'] as const
export type ZdrFamily = (typeof ZDR_FAMILIES)[number]

export type GuardrailInterval = 'daily' | 'weekly' | 'monthly'

/** What a guardrail enforces; `null` everywhere means "no restriction". */
export type GuardrailRules = {
  allowedModels: string[] | null
  ignoredModels: string[] | null
  allowedProviders: string[] | null
  ignoredProviders: string[] | null
  /** Per family: `true` routes only to zero-data-retention endpoints. */
  enforceZdr: Record<ZdrFamily, boolean | null>
  /** `false`: endpoints that train on prompts are not used (free ones, paid ones). */
  enableFreeModelTraining: boolean | null
  enablePaidModelTraining: boolean | null
  /** Nano-dollars (src/core/money.ts) each governed key may spend per `resetInterval`. */
  limitNano: number | null
  resetInterval: GuardrailInterval | null
  /** Whether BYOK spend, at the list price, counts toward `limitNano`. */
  includeByokInBudgets: boolean
  contentFilters: ContentFilter[] | null
  contentFilterBuiltins: ContentFilterBuiltin[] | null
}

export type GuardrailRecord = {
  id: string
  accountId: string
  workspaceId: string
  name: string
  description: string | null
  createdAt: string
  updatedAt: string | null
  /** Listing order: creation order. */
  sortKey: string
} & GuardrailRules

export const NO_RULES: GuardrailRules = Object.freeze({
  allowedModels: null,
  ignoredModels: null,
  allowedProviders: null,
  ignoredProviders: null,
  enforceZdr: Object.freeze({ anthropic: null, openai: null, google: null, xai: null, other: null }),
  enableFreeModelTraining: null,
  enablePaidModelTraining: null,
  limitNano: null,
  resetInterval: null,
  includeByokInBudgets: false,
  contentFilters: null,
  contentFilterBuiltins: null,
}) as GuardrailRules

/** What every assignment records: which guardrail, in which account, by whom and when. */
type AssignmentBase = {
  /** The assignment's own id (OpenRouter's `id`). */
  id: string
  guardrailId: string
  accountId: string
  /** The user behind the management key that assigned it. */
  assignedBy: string | null
  createdAt: string
  sortKey: string
}

/** A key's guardrail: one record per key, replaced when the key is assigned elsewhere. */
export type GuardrailKeyAssignment = AssignmentBase & { keyHash: string }

/** A member's guardrail (a user the account's keys act for): one per user and account, followed by every key of that user. */
export type GuardrailMemberAssignment = AssignmentBase & { userId: string }

const toInput = (guardrail: GuardrailRecord): RecordInput<GuardrailRecord> => ({
  id: guardrail.id,
  data: guardrail,
  indexes: { accountId: guardrail.accountId, workspaceId: guardrail.workspaceId },
  sortKey: guardrail.sortKey,
})

/**
 * Assignments of one kind, each stored under the id of what it is assigned to (`recordId`), so "at most one
 * guardrail each" is the store's own uniqueness and assigning another replaces it.
 */
const createAssignmentStore = <A extends AssignmentBase>(storage: StorageDriver, now: () => Date, collection: string, recordId: (assignment: Omit<A, 'createdAt' | 'sortKey'>) => string) => {
  const toRecordInput = (assignment: A): RecordInput<A> => ({
    id: recordId(assignment),
    data: assignment,
    indexes: { accountId: assignment.accountId, guardrailId: assignment.guardrailId },
    sortKey: assignment.sortKey,
  })
  return {
    async get(id: string): Promise<A | null> {
      return (await storage.get<A>(collection, id))?.data ?? null
    },

    /** Resolves `true` when the assignee was not on this guardrail before. */
    assign(fields: Omit<A, 'createdAt' | 'sortKey'>): Promise<boolean> {
      const id = recordId(fields)
      return retryLostRaces(async () => {
        const createdAt = now().toISOString()
        const assignment = { ...fields, createdAt, sortKey: creationSortKey(createdAt) } as A
        const current = await storage.get<A>(collection, id)
        if (current) {
          if (current.data.guardrailId === fields.guardrailId) return false
          await storage.update(collection, id, current.version, toRecordInput(assignment))
          return true
        }
        try {
          await storage.create(collection, toRecordInput(assignment))
          return true
        } catch (error) {
          // Another request assigned it meanwhile: read it again and decide over that assignment.
          if (isUniqueConflict(error)) throw new StorageConflictError('version')
          throw error
        }
      })
    },

    /** Removes the assignment when it is to `guardrailId`; resolves whether it was. */
    unassign(id: string, guardrailId: string): Promise<boolean> {
      return retryLostRaces(async () => {
        const current = await storage.get<A>(collection, id)
        if (!current || current.data.guardrailId !== guardrailId) return false
        return storage.delete(collection, id, current.version)
      })
    },

    async forget(id: string): Promise<void> {
      await storage.delete(collection, id)
    },

    async list(filter: { accountId: string; guardrailId?: string }, offset: number, limit: number) {
      const where: Record<string, string> = filter.guardrailId === undefined ? { accountId: filter.accountId } : { accountId: filter.accountId, guardrailId: filter.guardrailId }
      const page = await storage.list<A>(collection, { where, offset, limit })
      return { assignments: page.items.map((item) => item.data), totalCount: page.totalCount }
    },

    async deleteFor(guardrailId: string): Promise<void> {
      for (;;) {
        const page = await storage.list<A>(collection, { where: { guardrailId }, limit: 100 })
        if (page.items.length === 0) return
        for (const item of page.items) await storage.delete(collection, item.id)
      }
    },
  }
}

const memberRecordId = (accountId: string, userId: string) => `${accountId}:${userId}`

export const createGuardrailsRepository = (storage: StorageDriver, now: () => Date) => {
  const keys = createAssignmentStore<GuardrailKeyAssignment>(storage, now, GUARDRAIL_KEY_ASSIGNMENTS, (assignment) => assignment.keyHash)
  const members = createAssignmentStore<GuardrailMemberAssignment>(storage, now, GUARDRAIL_MEMBER_ASSIGNMENTS, (assignment) =>
    memberRecordId(assignment.accountId, assignment.userId),
  )
  return {
    /** Stores a new guardrail; throws `StorageConflictError('unique')` when the id is taken. */
    async create(fields: Omit<GuardrailRecord, 'createdAt' | 'updatedAt' | 'sortKey'>): Promise<GuardrailRecord> {
      const createdAt = now().toISOString()
      const guardrail: GuardrailRecord = { ...fields, createdAt, updatedAt: null, sortKey: creationSortKey(createdAt) }
      return (await storage.create(GUARDRAILS, toInput(guardrail))).data
    },

    async get(id: string): Promise<GuardrailRecord | null> {
      return (await storage.get<GuardrailRecord>(GUARDRAILS, id))?.data ?? null
    },

    /** Applies `change` with compare-and-set (retried on a lost race); `null` when the guardrail does not exist. */
    async update(id: string, change: (current: GuardrailRecord) => GuardrailRecord): Promise<GuardrailRecord | null> {
      const record = await updateRecord<GuardrailRecord>(storage, GUARDRAILS, id, (current) =>
        toInput({ ...change(current.data), id, accountId: current.data.accountId, updatedAt: now().toISOString() }),
      )
      return record?.data ?? null
    },

    /** Deletes the guardrail and then its assignments, so no key or member keeps pointing at it. */
    async delete(id: string): Promise<boolean> {
      const deleted = await storage.delete(GUARDRAILS, id)
      await keys.deleteFor(id)
      await members.deleteFor(id)
      return deleted
    },

    async listForAccount(accountId: string, workspaceId: string | undefined, offset: number, limit: number) {
      const where: Record<string, string> = workspaceId === undefined ? { accountId } : { accountId, workspaceId }
      const page = await storage.list<GuardrailRecord>(GUARDRAILS, { where, offset, limit })
      return { guardrails: page.items.map((item) => item.data), totalCount: page.totalCount }
    },

    /** The guardrail assigned to a key, if any. */
    assignmentOf: (keyHash: string) => keys.get(keyHash),
    /** Assigns a key, replacing its earlier assignment (a key holds at most one guardrail); `true` when it changed. */
    assignKey: (fields: Omit<GuardrailKeyAssignment, 'createdAt' | 'sortKey'>) => keys.assign(fields),
    /** Removes the key's assignment when it is to `guardrailId`; resolves whether it was. */
    unassignKey: (keyHash: string, guardrailId: string) => keys.unassign(keyHash, guardrailId),
    /** Forgets a deleted key's assignment, whatever guardrail it was to. */
    forgetKey: (keyHash: string) => keys.forget(keyHash),
    listAssignments: (filter: { accountId: string; guardrailId?: string }, offset: number, limit: number) => keys.list(filter, offset, limit),

    /** The guardrail assigned to a member of the account, if any. */
    memberAssignmentOf: (accountId: string, userId: string) => members.get(memberRecordId(accountId, userId)),
    assignMember: (fields: Omit<GuardrailMemberAssignment, 'createdAt' | 'sortKey'>) => members.assign(fields),
    unassignMember: (accountId: string, userId: string, guardrailId: string) => members.unassign(memberRecordId(accountId, userId), guardrailId),
    listMemberAssignments: (filter: { accountId: string; guardrailId?: string }, offset: number, limit: number) => members.list(filter, offset, limit),
  }
}

export type GuardrailsRepository = ReturnType<typeof createGuardrailsRepository>
