/**
 * Guardrail assignments, served as OpenRouter serves them (management keys only): to API keys, by their hash, and
 * to members, the users the account's keys act for. Each holds one guardrail at most; assigning another
 * replaces it (docs/decisions.md, Guardrails).
 */

import { InvalidRequestError } from '../core/errors'
import { randomId } from '../core/crypto'
import { defineRoute, json } from '../pipeline/route'
import type { Repositories } from '../repositories'
import type { AccountRecord } from '../repositories/accounts'
import { materializeGuardrail, requireGuardrail } from '../services/guardrails'
import { BulkKeysBodySchema, BulkMembersBodySchema, GuardrailParamsSchema, ListAssignmentsQuerySchema } from './guardrails.schemas'
import { toKeyAssignmentWire, toMemberAssignmentWire } from './guardrails.wire'

/** The account's keys named by `hashes`, or a 400 naming the first that is not one. */
/**
 * How many of `items` `change` changed (a new assignment, one removed). Each item is its own record, so they change
 * at the same time: one store round trip's wait, not one per item.
 */
const countChanged = async <T>(items: Iterable<T>, change: (item: T) => Promise<boolean>): Promise<number> =>
  (await Promise.all(Array.from(items, change))).filter(Boolean).length

const requireOwnKeys = async (repositories: Repositories, accountId: string, hashes: string[]) => {
  const keys = await Promise.all(hashes.map((hash) => repositories.apiKeys.get(hash)))
  keys.forEach((key, index) => {
    if (!key || key.accountId !== accountId) throw new InvalidRequestError(`body.key_hashes.${index}: no API key of this account has this hash`)
  })
  return keys
}

/** As `requireOwnKeys`, and each one a key that runs models: a management key never does, so a guardrail on it would govern nothing. */
const requireGovernableKeys = async (repositories: Repositories, accountId: string, hashes: string[]) => {
  const keys = await requireOwnKeys(repositories, accountId, hashes)
  keys.forEach((key, index) => {
    if (key?.kind === 'management') throw new InvalidRequestError(`body.key_hashes.${index}: is a management key, which runs no model requests; a guardrail would govern nothing`)
  })
}

export const bulkAssignKeys = defineRoute({
  method: 'POST',
  path: '/guardrails/:id/assignments/keys',
  auth: 'management',
  params: GuardrailParamsSchema,
  body: BulkKeysBodySchema,
  async handle({ params, body, caller, repositories }) {
    const found = await requireGuardrail(repositories, caller.account, params.id)
    const hashes = [...new Set(body.key_hashes)]
    await requireGovernableKeys(repositories, caller.account.id, hashes)
    if (!found.isStored) await materializeGuardrail(repositories, found.record)
    const assigned = await countChanged(hashes, (hash) =>
      repositories.guardrails.assignKey({ id: randomId(), keyHash: hash, guardrailId: params.id, accountId: caller.account.id, assignedBy: caller.key.creatorUserId }),
    )
    return json({ assigned_count: assigned })
  },
})

export const bulkUnassignKeys = defineRoute({
  method: 'POST',
  path: '/guardrails/:id/assignments/keys/remove',
  auth: 'management',
  params: GuardrailParamsSchema,
  body: BulkKeysBodySchema,
  async handle({ params, body, caller, repositories }) {
    await requireGuardrail(repositories, caller.account, params.id)
    const hashes = [...new Set(body.key_hashes)]
    await requireOwnKeys(repositories, caller.account.id, hashes)
    const unassigned = await countChanged(hashes, (hash) => repositories.guardrails.unassignKey(hash, params.id))
    return json({ unassigned_count: unassigned })
  },
})

const assignmentsPage = async (repositories: Repositories, filter: { accountId: string; guardrailId?: string }, offset: number, limit: number) => {
  const page = await repositories.guardrails.listAssignments(filter, offset, limit)
  const keys = await Promise.all(page.assignments.map((assignment) => repositories.apiKeys.get(assignment.keyHash)))
  return json({ data: page.assignments.map((assignment, index) => toKeyAssignmentWire(assignment, keys[index] ?? null)), total_count: page.totalCount })
}

export const listGuardrailKeyAssignments = defineRoute({
  method: 'GET',
  path: '/guardrails/:id/assignments/keys',
  auth: 'management',
  params: GuardrailParamsSchema,
  query: ListAssignmentsQuerySchema,
  async handle({ params, query, caller, repositories }) {
    await requireGuardrail(repositories, caller.account, params.id)
    return assignmentsPage(repositories, { accountId: caller.account.id, guardrailId: params.id }, query.offset, query.limit)
  },
})

export const listKeyAssignments = defineRoute({
  method: 'GET',
  path: '/guardrails/assignments/keys',
  auth: 'management',
  query: ListAssignmentsQuerySchema,
  async handle({ query, caller, repositories }) {
    return assignmentsPage(repositories, { accountId: caller.account.id }, query.offset, query.limit)
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

const requireMembers = async (repositories: Repositories, account: AccountRecord, userIds: string[]) => {
  const members = await membersOf(repositories, account)
  userIds.forEach((userId, index) => {
    if (!members.has(userId)) throw new InvalidRequestError(`body.member_user_ids.${index}: no API key of this account acts for this user`)
  })
}

export const bulkAssignMembers = defineRoute({
  method: 'POST',
  path: '/guardrails/:id/assignments/members',
  auth: 'management',
  params: GuardrailParamsSchema,
  body: BulkMembersBodySchema,
  async handle({ params, body, caller, repositories }) {
    const found = await requireGuardrail(repositories, caller.account, params.id)
    const userIds = [...new Set(body.member_user_ids)]
    await requireMembers(repositories, caller.account, userIds)
    if (!found.isStored) await materializeGuardrail(repositories, found.record)
    const assigned = await countChanged(userIds, (userId) =>
      repositories.guardrails.assignMember({ id: randomId(), userId, guardrailId: params.id, accountId: caller.account.id, assignedBy: caller.key.creatorUserId }),
    )
    return json({ assigned_count: assigned })
  },
})

export const bulkUnassignMembers = defineRoute({
  method: 'POST',
  path: '/guardrails/:id/assignments/members/remove',
  auth: 'management',
  params: GuardrailParamsSchema,
  body: BulkMembersBodySchema,
  async handle({ params, body, caller, repositories }) {
    await requireGuardrail(repositories, caller.account, params.id)
    const unassigned = await countChanged(new Set(body.member_user_ids), (userId) => repositories.guardrails.unassignMember(caller.account.id, userId, params.id))
    return json({ unassigned_count: unassigned })
  },
})

export const listGuardrailMemberAssignments = defineRoute({
  method: 'GET',
  path: '/guardrails/:id/assignments/members',
  auth: 'management',
  params: GuardrailParamsSchema,
  query: ListAssignmentsQuerySchema,
  async handle({ params, query, caller, repositories }) {
    await requireGuardrail(repositories, caller.account, params.id)
    const page = await repositories.guardrails.listMemberAssignments({ accountId: caller.account.id, guardrailId: params.id }, query.offset, query.limit)
    return json({ data: page.assignments.map(toMemberAssignmentWire), total_count: page.totalCount })
  },
})

export const listMemberAssignments = defineRoute({
  method: 'GET',
  path: '/guardrails/assignments/members',
  auth: 'management',
  query: ListAssignmentsQuerySchema,
  async handle({ query, caller, repositories }) {
    const page = await repositories.guardrails.listMemberAssignments({ accountId: caller.account.id }, query.offset, query.limit)
    return json({ data: page.assignments.map(toMemberAssignmentWire), total_count: page.totalCount })
  },
})
