/**
 * Guardrails (docs/decisions.md, Guardrails): named sets of rules an account applies to API keys (one guardrail
 * per key at most) and, through each workspace's `default_guardrail_id`, to all of a workspace's traffic. The
 * key assignments live in a collection of their own, keyed by the key's hash, so "at most one per key" is the
 * store's own uniqueness.
 */

import { StorageConflictError } from '../core/errors'
import type { RecordInput, StorageDriver } from '../storage/contract'
import { isUniqueConflict, retryLostRaces, updateRecord } from './mutate'
import { creationSortKey } from './sort-key'

export const GUARDRAILS = 'guardrails'
export const GUARDRAIL_KEY_ASSIGNMENTS = 'guardrail_key_assignments'

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

/** A key's guardrail: one record per key, replaced when the key is assigned elsewhere. */
export type GuardrailKeyAssignment = {
  /** The assignment's own id (OpenRouter's `id`). */
  id: string
  keyHash: string
  guardrailId: string
  accountId: string
  /** The user behind the management key that assigned it. */
  assignedBy: string | null
  createdAt: string
  sortKey: string
}

const toInput = (guardrail: GuardrailRecord): RecordInput<GuardrailRecord> => ({
  id: guardrail.id,
  data: guardrail,
  indexes: { accountId: guardrail.accountId, workspaceId: guardrail.workspaceId },
  sortKey: guardrail.sortKey,
})

const toAssignmentInput = (assignment: GuardrailKeyAssignment): RecordInput<GuardrailKeyAssignment> => ({
  id: assignment.keyHash,
  data: assignment,
  indexes: { accountId: assignment.accountId, guardrailId: assignment.guardrailId },
  sortKey: assignment.sortKey,
})

export const createGuardrailsRepository = (storage: StorageDriver, now: () => Date) => ({
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

  /** Deletes the guardrail and then its key assignments, so no key keeps pointing at it. */
  async delete(id: string): Promise<boolean> {
    const deleted = await storage.delete(GUARDRAILS, id)
    for (;;) {
      const page = await storage.list<GuardrailKeyAssignment>(GUARDRAIL_KEY_ASSIGNMENTS, { where: { guardrailId: id }, limit: 100 })
      if (page.items.length === 0) break
      for (const item of page.items) await storage.delete(GUARDRAIL_KEY_ASSIGNMENTS, item.id)
    }
    return deleted
  },

  async listForAccount(accountId: string, workspaceId: string | undefined, offset: number, limit: number) {
    const where: Record<string, string> = workspaceId === undefined ? { accountId } : { accountId, workspaceId }
    const page = await storage.list<GuardrailRecord>(GUARDRAILS, { where, offset, limit })
    return { guardrails: page.items.map((item) => item.data), totalCount: page.totalCount }
  },

  /** The guardrail assigned to a key, if any. */
  async assignmentOf(keyHash: string): Promise<GuardrailKeyAssignment | null> {
    return (await storage.get<GuardrailKeyAssignment>(GUARDRAIL_KEY_ASSIGNMENTS, keyHash))?.data ?? null
  },

  /**
   * Assigns a key to a guardrail, replacing the key's earlier assignment (a key holds at most one guardrail).
   * Resolves `true` when the key was not on this guardrail before.
   */
  assignKey(fields: Pick<GuardrailKeyAssignment, 'keyHash' | 'guardrailId' | 'accountId' | 'assignedBy'> & { id: string }): Promise<boolean> {
    return retryLostRaces(async () => {
      const createdAt = now().toISOString()
      const assignment: GuardrailKeyAssignment = { ...fields, createdAt, sortKey: creationSortKey(createdAt) }
      const current = await storage.get<GuardrailKeyAssignment>(GUARDRAIL_KEY_ASSIGNMENTS, fields.keyHash)
      if (current) {
        if (current.data.guardrailId === fields.guardrailId) return false
        await storage.update(GUARDRAIL_KEY_ASSIGNMENTS, fields.keyHash, current.version, toAssignmentInput(assignment))
        return true
      }
      try {
        await storage.create(GUARDRAIL_KEY_ASSIGNMENTS, toAssignmentInput(assignment))
        return true
      } catch (error) {
        // Another request assigned the key meanwhile: read it again and decide over its assignment.
        if (isUniqueConflict(error)) throw new StorageConflictError('version')
        throw error
      }
    })
  },

  /** Removes the key's assignment when it is to `guardrailId`; resolves whether it was. */
  unassignKey(keyHash: string, guardrailId: string): Promise<boolean> {
    return retryLostRaces(async () => {
      const current = await storage.get<GuardrailKeyAssignment>(GUARDRAIL_KEY_ASSIGNMENTS, keyHash)
      if (!current || current.data.guardrailId !== guardrailId) return false
      return storage.delete(GUARDRAIL_KEY_ASSIGNMENTS, keyHash, current.version)
    })
  },

  /** Forgets a deleted key's assignment, whatever guardrail it was to. */
  async forgetKey(keyHash: string): Promise<void> {
    await storage.delete(GUARDRAIL_KEY_ASSIGNMENTS, keyHash)
  },

  async listAssignments(filter: { accountId: string; guardrailId?: string }, offset: number, limit: number) {
    const where: Record<string, string> = filter.guardrailId === undefined ? { accountId: filter.accountId } : { ...filter, guardrailId: filter.guardrailId }
    const page = await storage.list<GuardrailKeyAssignment>(GUARDRAIL_KEY_ASSIGNMENTS, { where, offset, limit })
    return { assignments: page.items.map((item) => item.data), totalCount: page.totalCount }
  },
})

export type GuardrailsRepository = ReturnType<typeof createGuardrailsRepository>
