/**
 * Guardrail assignments, served as OpenRouter serves them (management keys only): to API keys, by their hash, and
 * to members, the users the account's keys act for. Each holds one guardrail at most; assigning another
 * replaces it (docs/decisions.md, Guardrails).
 */

import type * as v from 'valibot'
import { InvalidRequestError } from '../core/errors'
import { randomId } from '../core/crypto'
import { defineRoute, json } from '../pipeline/route'
import type { Repositories } from '../repositories'
import type { AccountRecord } from '../repositories/accounts'
import { materializeGuardrail, requireGuardrail } from '../services/guardrails'
import { BulkKeysBodySchema, BulkMembersBodySchema, GuardrailParamsSchema, ListAssignmentsQuerySchema } from './guardrails.schemas'
import { toKeyAssignmentWire, toMemberAssignmentWire } from './guardrails.wire'

/**
 * How many of `items` `change` changed (a new assignment, one removed). Each item is its own record, so they change
 * at the same time: one store round trip's wait, not one per item.
 */
const countChanged = async <T>(items: Iterable<T>, change: (item: T) => Promise<boolean>): Promise<number> =>
  (await Promise.all(Array.from(items, change))).filter(Boolean).length

type AssignmentFilter = { accountId: string; guardrailId?: string }

/** What a guardrail may be assigned to (API keys, members): the four routes of each differ only in these. */
interface Holders<Body extends v.GenericSchema<unknown, { [field: string]: string[] }>> {
  /** The path segment after `assignments/`. */
  segment: 'keys' | 'members'
  /** The bulk routes' body, one list of holder ids under `field`. */
  body: Body
  field: string
  /** Throws 400 naming the first id that cannot hold a guardrail of the account. */
  requireAssignable(repositories: Repositories, account: AccountRecord, ids: string[]): Promise<void>
  /** Throws 400 naming the first id a removal may not name (none is refused when omitted). */
  requireRemovable?(repositories: Repositories, account: AccountRecord, ids: string[]): Promise<void>
  /** Whether a new assignment was made. */
  assign(repositories: Repositories, fields: { id: string; holderId: string; guardrailId: string; accountId: string; assignedBy: string }): Promise<boolean>
  /** Whether an assignment was removed. */
  unassign(repositories: Repositories, accountId: string, holderId: string, guardrailId: string): Promise<boolean>
  /** One page of the account's assignments (of one guardrail when the filter names it), as the wire lists them. */
  page(repositories: Repositories, filter: AssignmentFilter, offset: number, limit: number): Promise<{ data: unknown[]; total_count: number }>
}

/** Bulk assign and remove on one guardrail, and its assignments and the account's, for one kind of holder. */
const assignmentRoutes = <Body extends v.GenericSchema<unknown, { [field: string]: string[] }>>(holders: Holders<Body>) => ({
  listAll: defineRoute({
    method: 'GET',
    path: `/guardrails/assignments/${holders.segment}`,
    auth: 'management',
    query: ListAssignmentsQuerySchema,
    handle: async ({ query, caller, repositories }) => json(await holders.page(repositories, { accountId: caller.account.id }, query.offset, query.limit)),
  }),
  listForGuardrail: defineRoute({
    method: 'GET',
    path: `/guardrails/:id/assignments/${holders.segment}`,
    auth: 'management',
    params: GuardrailParamsSchema,
    query: ListAssignmentsQuerySchema,
    async handle({ params, query, caller, repositories }) {
      await requireGuardrail(repositories, caller.account, params.id)
      return json(await holders.page(repositories, { accountId: caller.account.id, guardrailId: params.id }, query.offset, query.limit))
    },
  }),
  bulkAssign: defineRoute({
    method: 'POST',
    path: `/guardrails/:id/assignments/${holders.segment}`,
    auth: 'management',
    audit: `guardrail.assign_${holders.segment}`,
    params: GuardrailParamsSchema,
    body: holders.body,
    async handle({ params, body, caller, repositories, audit }) {
      const found = await requireGuardrail(repositories, caller.account, params.id)
      const ids = [...new Set(body[holders.field]!)]
      await holders.requireAssignable(repositories, caller.account, ids)
      if (!found.isStored) await materializeGuardrail(repositories, found.record)
      const assigned = await countChanged(ids, (holderId) =>
        holders.assign(repositories, { id: randomId(), holderId, guardrailId: params.id, accountId: caller.account.id, assignedBy: caller.key.creatorUserId }),
      )
      // The ids sent, not only those newly assigned: each now holds this guardrail. Key hashes are kept as prefixes.
      await audit({ target: { type: 'guardrail', id: params.id }, workspaceId: found.record.workspaceId, changes: { [holders.field]: ids, assigned_count: assigned } })
      return json({ assigned_count: assigned })
    },
  }),
  bulkUnassign: defineRoute({
    method: 'POST',
    path: `/guardrails/:id/assignments/${holders.segment}/remove`,
    auth: 'management',
    audit: `guardrail.unassign_${holders.segment}`,
    params: GuardrailParamsSchema,
    body: holders.body,
    async handle({ params, body, caller, repositories, audit }) {
      const found = await requireGuardrail(repositories, caller.account, params.id)
      const ids = [...new Set(body[holders.field]!)]
      await holders.requireRemovable?.(repositories, caller.account, ids)
      const unassigned = await countChanged(ids, (holderId) => holders.unassign(repositories, caller.account.id, holderId, params.id))
      await audit({ target: { type: 'guardrail', id: params.id }, workspaceId: found.record.workspaceId, changes: { [holders.field]: ids, unassigned_count: unassigned } })
      return json({ unassigned_count: unassigned })
    },
  }),
})

/** The account's keys named by `hashes`, or a 400 naming the first that is not one. */
const requireOwnKeys = async (repositories: Repositories, account: AccountRecord, hashes: string[]) => {
  const keys = await Promise.all(hashes.map((hash) => repositories.apiKeys.get(hash)))
  keys.forEach((key, index) => {
    if (!key || key.accountId !== account.id) throw new InvalidRequestError(`body.key_hashes.${index}: no API key of this account has this hash`)
  })
  return keys
}

export const keyAssignments = assignmentRoutes({
  segment: 'keys',
  body: BulkKeysBodySchema,
  field: 'key_hashes',
  // Each one a key that runs models: a management key never does, so a guardrail on it would govern nothing.
  async requireAssignable(repositories, account, hashes) {
    const keys = await requireOwnKeys(repositories, account, hashes)
    keys.forEach((key, index) => {
      if (key?.kind === 'management') throw new InvalidRequestError(`body.key_hashes.${index}: is a management key, which runs no model requests; a guardrail would govern nothing`)
    })
  },
  requireRemovable: async (repositories, account, hashes) => void (await requireOwnKeys(repositories, account, hashes)),
  assign: (repositories, { holderId, ...fields }) => repositories.guardrails.assignKey({ ...fields, keyHash: holderId }),
  unassign: (repositories, _accountId, hash, guardrailId) => repositories.guardrails.unassignKey(hash, guardrailId),
  async page(repositories, filter, offset, limit) {
    const page = await repositories.guardrails.listAssignments(filter, offset, limit)
    const keys = await Promise.all(page.assignments.map((assignment) => repositories.apiKeys.get(assignment.keyHash)))
    return { data: page.assignments.map((assignment, index) => toKeyAssignmentWire(assignment, keys[index] ?? null)), total_count: page.totalCount }
  },
})

const KEYS_PAGE = 500

/**
 * The account's members: its owner and every user its keys act for (`creator_user_id`). modelgate has no user
 * directory, so a member is someone a key exists for; a guardrail for anyone else would govern nothing.
 */
const membersOf = async (repositories: Repositories, account: AccountRecord): Promise<Set<string>> => {
  const members = new Set([account.ownerUserId])
  for (let offset = 0; ; offset += KEYS_PAGE) {
    const { keys } = await repositories.apiKeys.listForAccount(account.id, {}, offset, KEYS_PAGE)
    for (const key of keys) members.add(key.creatorUserId)
    if (keys.length < KEYS_PAGE) return members
  }
}

export const memberAssignments = assignmentRoutes({
  segment: 'members',
  body: BulkMembersBodySchema,
  field: 'member_user_ids',
  async requireAssignable(repositories, account, userIds) {
    const members = await membersOf(repositories, account)
    userIds.forEach((userId, index) => {
      if (!members.has(userId)) throw new InvalidRequestError(`body.member_user_ids.${index}: no API key of this account acts for this user`)
    })
  },
  assign: (repositories, { holderId, ...fields }) => repositories.guardrails.assignMember({ ...fields, userId: holderId }),
  unassign: (repositories, accountId, userId, guardrailId) => repositories.guardrails.unassignMember(accountId, userId, guardrailId),
  async page(repositories, filter, offset, limit) {
    const page = await repositories.guardrails.listMemberAssignments(filter, offset, limit)
    return { data: page.assignments.map(toMemberAssignmentWire), total_count: page.totalCount }
  },
})
