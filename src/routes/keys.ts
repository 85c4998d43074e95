/**
 * The API keys area, served as its public counterpart does (`/keys`, management keys only).
 * Keys are addressed by their SHA-256 hash; the raw key appears once, in the create response.
 */

import { InvalidRequestError, NotFoundError } from '../core/errors'
import { toNano } from '../core/money'
import { NO_STORE, defineRoute, json } from '../pipeline/route'
import type { ApiKeyRecord } from '../repositories/api-keys'
import type { Repositories } from '../repositories'
import { assertNotLastManagementKey, issueApiKey } from '../services/api-keys'
import { keyTargetId } from '../services/audit-log'
import { CreateKeyBodySchema, KeyParamsSchema, ListKeysQuerySchema, UpdateKeyBodySchema } from './keys.schemas'
import { toApiKeyWire } from './keys.wire'
import { cacheSettingFromWire } from './response-cache.schemas'

/** The key as `/keys` answers show it, with what it spent in the periods holding `at`. */
const keyWire = async (repositories: Repositories, key: ApiKeyRecord, at: Date) => toApiKeyWire(key, await repositories.spend.keySpend(key.hash, at))

// Another account's key reads as absent: its existence is not revealed.
const requireOwnKey = async (repositories: Repositories, accountId: string, hash: string) => {
  const key = await repositories.apiKeys.get(hash)
  if (!key || key.accountId !== accountId) throw new NotFoundError('API key not found')
  return key
}

export const listKeys = defineRoute({
  method: 'GET',
  path: '/keys',
  auth: 'management',
  query: ListKeysQuerySchema,
  async handle({ query, caller, repositories, now }) {
    const filter = { ...(query.include_disabled ? {} : { disabled: false }), workspaceId: query.workspace_id }
    const page = await repositories.apiKeys.listForAccount(caller.account.id, filter, query.offset, query.limit)
    const at = now()
    return json({ data: await Promise.all(page.keys.map((key) => keyWire(repositories, key, at))), total_count: page.totalCount })
  },
})

export const createKey = defineRoute({
  method: 'POST',
  path: '/keys',
  auth: 'management',
  audit: 'key.create',
  body: CreateKeyBodySchema,
  async handle({ body, caller, repositories, now, audit }) {
    const at = now()
    if (body.expires_at && Date.parse(body.expires_at) <= at.getTime()) throw new InvalidRequestError('body.expires_at: must be in the future')
    const { rawKey, record } = await issueApiKey(repositories, caller.account, {
      kind: body.kind,
      name: body.name,
      workspaceId: body.workspace_id,
      creatorUserId: body.creator_user_id ?? undefined,
      limitNano: body.limit === undefined || body.limit === null ? null : toNano(body.limit),
      limitReset: body.limit_reset ?? null,
      includeByokInLimit: body.include_byok_in_limit ?? false,
      expiresAt: body.expires_at ?? null,
      cache: cacheSettingFromWire(body.cache),
    })
    await audit({
      target: { type: 'key', id: keyTargetId(record.hash) },
      workspaceId: record.workspaceId,
      changes: { ...body, workspace_id: record.workspaceId, creator_user_id: record.creatorUserId },
    })
    // The raw key is in this answer only: no cache on the way may keep a copy.
    return json({ data: await keyWire(repositories, record, at), key: rawKey }, 201, NO_STORE)
  },
})

export const getKey = defineRoute({
  method: 'GET',
  path: '/keys/:hash',
  auth: 'management',
  params: KeyParamsSchema,
  async handle({ params, caller, repositories, now }) {
    return json({ data: await keyWire(repositories, await requireOwnKey(repositories, caller.account.id, params.hash), now()) })
  },
})

export const updateKey = defineRoute({
  method: 'PATCH',
  path: '/keys/:hash',
  auth: 'management',
  audit: 'key.update',
  params: KeyParamsSchema,
  body: UpdateKeyBodySchema,
  async handle({ params, body, caller, repositories, now, audit }) {
    const key = await requireOwnKey(repositories, caller.account.id, params.hash)
    if (body.disabled === true) await assertNotLastManagementKey(repositories, key)
    const updated = await repositories.apiKeys.update(key.hash, {
      name: body.name,
      disabled: body.disabled,
      limitNano: body.limit === undefined ? undefined : body.limit === null ? null : toNano(body.limit),
      limitReset: body.limit_reset,
      includeByokInLimit: body.include_byok_in_limit,
      cache: cacheSettingFromWire(body.cache),
    })
    if (!updated) throw new NotFoundError('API key not found')
    await audit({ target: { type: 'key', id: keyTargetId(key.hash) }, workspaceId: key.workspaceId, changes: body })
    return json({ data: await keyWire(repositories, updated, now()) })
  },
})

export const deleteKey = defineRoute({
  method: 'DELETE',
  path: '/keys/:hash',
  auth: 'management',
  audit: 'key.delete',
  params: KeyParamsSchema,
  async handle({ params, caller, repositories, audit }) {
    const key = await requireOwnKey(repositories, caller.account.id, params.hash)
    await assertNotLastManagementKey(repositories, key)
    if (!(await repositories.apiKeys.delete(key.hash))) throw new NotFoundError('API key not found')
    // A deleted key holds no guardrail: its assignment would otherwise linger in the assignment lists.
    await repositories.guardrails.forgetKey(key.hash)
    await audit({ target: { type: 'key', id: keyTargetId(key.hash) }, workspaceId: key.workspaceId, changes: { kind: key.kind, name: key.name } })
    return json({ deleted: true })
  },
})
