/**
 * The guardrails area, served as its public counterpart does (`/guardrails`, management keys only; paths,
 * methods and statuses as `@openrouter/sdk` calls them): guardrails and their assignments to API keys and to
 * members, the users the account's keys act for (docs/decisions.md, Guardrails).
 */

import { ConflictError, InvalidRequestError, NotFoundError } from '../core/errors'
import { randomId } from '../core/crypto'
import { derivedGuardrailId } from '../repositories/workspaces'
import { defineRoute, json, type RouteContext } from '../pipeline/route'
import type { Repositories } from '../repositories'
import { NO_RULES, type GuardrailRecord } from '../repositories/guardrails'
import { isUniqueConflict } from '../repositories/mutate'
import type { AccountRecord } from '../repositories/accounts'
import { findGuardrail, workspaceDefaultingTo } from '../services/guardrails'
import {
  BulkKeysBodySchema,
  BulkMembersBodySchema,
  CreateGuardrailBodySchema,
  GuardrailParamsSchema,
  ListAssignmentsQuerySchema,
  ListGuardrailsQuerySchema,
  UpdateGuardrailBodySchema,
  type UpdateGuardrailBody,
} from './guardrails.schemas'
import { applyGuardrailBody, toGuardrailWire, toKeyAssignmentWire, toMemberAssignmentWire } from './guardrails.wire'

const NOT_FOUND = 'Guardrail not found'

const requireGuardrail = async (repositories: Repositories, account: AccountRecord, id: string) => {
  const found = await findGuardrail(repositories, account, id)
  if (!found) throw new NotFoundError(NOT_FOUND)
  return found
}

type Runtime = RouteContext<unknown, unknown, unknown>['runtime']

/** Model lists must name models of the catalog: a misspelt one would silently allow nothing or ignore nothing. */
const checkModels = (runtime: Runtime, body: UpdateGuardrailBody) => {
  for (const field of ['allowed_models', 'ignored_models'] as const) {
    body[field]?.forEach((slug, index) => {
      if (!runtime.inference.models.find(slug)) throw new InvalidRequestError(`body.${field}.${index}: no model "${slug}" in this gateway's catalog (GET /models lists them)`)
    })
  }
}

export const listGuardrails = defineRoute({
  method: 'GET',
  path: '/guardrails',
  auth: 'management',
  query: ListGuardrailsQuerySchema,
  async handle({ query, caller, repositories }) {
    const page = await repositories.guardrails.listForAccount(caller.account.id, query.workspace_id, query.offset, query.limit)
    return json({ data: page.guardrails.map(toGuardrailWire), total_count: page.totalCount })
  },
})

export const createGuardrail = defineRoute({
  method: 'POST',
  path: '/guardrails',
  auth: 'management',
  body: CreateGuardrailBodySchema,
  isIdempotent: true,
  async handle({ body, caller, repositories, runtime }) {
    checkModels(runtime, body)
    const workspaceId = body.workspace_id ?? caller.account.defaultWorkspaceId
    // As POST /byok: without a default workspace, the caller must say where the guardrail goes.
    if (!workspaceId) throw new InvalidRequestError('body.workspace_id: is required: the account has no default workspace')
    const workspace = await repositories.workspaces.findForAccount(caller.account.id, workspaceId)
    if (!workspace) throw new InvalidRequestError(`body.workspace_id: no workspace of this account has this id`)
    const rules = applyGuardrailBody({ ...NO_RULES, name: body.name, description: null }, body)
    const created = await repositories.guardrails.create({ ...rules, id: randomId(), accountId: caller.account.id, workspaceId: workspace.id })
    return json({ data: toGuardrailWire(created) }, 201)
  },
})

export const getGuardrail = defineRoute({
  method: 'GET',
  path: '/guardrails/:id',
  auth: 'management',
  params: GuardrailParamsSchema,
  async handle({ params, caller, repositories }) {
    return json({ data: toGuardrailWire((await requireGuardrail(repositories, caller.account, params.id)).record) })
  },
})

/** Stores a workspace's default guardrail the first time it is changed; another request may be doing the same. */
const materialize = async (repositories: Repositories, record: GuardrailRecord): Promise<void> => {
  try {
    const { createdAt: _createdAt, updatedAt: _updatedAt, sortKey: _sortKey, ...fields } = record
    await repositories.guardrails.create(fields)
  } catch (error) {
    if (!isUniqueConflict(error)) throw error
  }
}

export const updateGuardrail = defineRoute({
  method: 'PATCH',
  path: '/guardrails/:id',
  auth: 'management',
  params: GuardrailParamsSchema,
  body: UpdateGuardrailBodySchema,
  async handle({ params, body, caller, repositories, runtime }) {
    checkModels(runtime, body)
    const found = await requireGuardrail(repositories, caller.account, params.id)
    // Checked once up front, so the compare-and-set below cannot throw halfway through.
    applyGuardrailBody(found.record, body)
    if (!found.isStored) await materialize(repositories, found.record)
    const updated = await repositories.guardrails.update(params.id, (current) => applyGuardrailBody(current, body))
    if (!updated) throw new NotFoundError(NOT_FOUND)
    return json({ data: toGuardrailWire(updated) })
  },
})

export const deleteGuardrail = defineRoute({
  method: 'DELETE',
  path: '/guardrails/:id',
  auth: 'management',
  params: GuardrailParamsSchema,
  async handle({ params, caller, repositories }) {
    const found = await requireGuardrail(repositories, caller.account, params.id)
    if (!found.isStored) throw new ConflictError('The guardrail is an unconfigured workspace default; there is nothing to delete')
    const workspace = await workspaceDefaultingTo(repositories, caller.account.id, params.id)
    // A workspace's own default guardrail, deleted, is its unconfigured default again; another guardrail made a
    // workspace's default would leave that workspace naming nothing.
    if (workspace && (await derivedGuardrailId(workspace.id)) !== params.id) {
      throw new ConflictError(`The guardrail is the default guardrail of workspace "${workspace.slug}"; set another default_guardrail_id on the workspace first`)
    }
    if (!(await repositories.guardrails.delete(params.id))) throw new NotFoundError(NOT_FOUND)
    return json({ deleted: true })
  },
})

// ---- key assignments ----

/** The account's keys named by `hashes`, or a 400 naming the first that is not one. */
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
    if (!found.isStored) await materialize(repositories, found.record)
    let assigned = 0
    for (const hash of hashes) {
      const isNew = await repositories.guardrails.assignKey({
        id: randomId(),
        keyHash: hash,
        guardrailId: params.id,
        accountId: caller.account.id,
        assignedBy: caller.key.creatorUserId,
      })
      if (isNew) assigned++
    }
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
    let unassigned = 0
    for (const hash of hashes) if (await repositories.guardrails.unassignKey(hash, params.id)) unassigned++
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

// ---- member assignments ----

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
    if (!found.isStored) await materialize(repositories, found.record)
    let assigned = 0
    for (const userId of userIds) {
      const isNew = await repositories.guardrails.assignMember({
        id: randomId(),
        userId,
        guardrailId: params.id,
        accountId: caller.account.id,
        assignedBy: caller.key.creatorUserId,
      })
      if (isNew) assigned++
    }
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
    let unassigned = 0
    for (const userId of new Set(body.member_user_ids)) if (await repositories.guardrails.unassignMember(caller.account.id, userId, params.id)) unassigned++
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
