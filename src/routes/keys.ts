/**
 * The API keys area, served as its public counterpart does (`/keys`, management keys only).
 * Keys are addressed by their SHA-256 hash; the raw key appears once, in the create response.
 */

import { NotFoundError } from '../core/errors'
import { NO_STORE, defineRoute, json } from '../pipeline/route'
import type { ApiKeyRecord } from '../repositories/api-keys'
import type { Repositories } from '../repositories'
import { assertNotLastManagementKey, issueApiKey } from '../services/api-keys'
import { CreateKeyBodySchema, KeyParamsSchema, ListKeysQuerySchema, UpdateKeyBodySchema } from './keys.schemas'

/** The public form of a key: never the raw key, which is returned only by create. */
export const toApiKeyWire = (key: ApiKeyRecord) => ({
  hash: key.hash,
  name: key.name,
  label: key.label,
  kind: key.kind,
  disabled: key.disabled,
  workspace_id: key.workspaceId,
  creator_user_id: key.creatorUserId,
  created_at: key.createdAt,
  updated_at: key.updatedAt,
})

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
  async handle({ query, caller, repositories }) {
    const filter = query.include_disabled ? {} : { disabled: false }
    const page = await repositories.apiKeys.listForAccount(caller.account.id, filter, query.offset, query.limit)
    return json({ data: page.keys.map(toApiKeyWire), total_count: page.totalCount })
  },
})

export const createKey = defineRoute({
  method: 'POST',
  path: '/keys',
  auth: 'management',
  body: CreateKeyBodySchema,
  async handle({ body, caller, repositories }) {
    const { rawKey, record } = await issueApiKey(repositories, caller.account, {
      kind: body.kind,
      name: body.name,
      workspaceId: body.workspace_id,
      creatorUserId: body.creator_user_id,
    })
    // The raw key is in this answer only: no cache on the way may keep a copy.
    return json({ data: toApiKeyWire(record), key: rawKey }, 201, NO_STORE)
  },
})

export const getKey = defineRoute({
  method: 'GET',
  path: '/keys/:hash',
  auth: 'management',
  params: KeyParamsSchema,
  async handle({ params, caller, repositories }) {
    return json({ data: toApiKeyWire(await requireOwnKey(repositories, caller.account.id, params.hash)) })
  },
})

export const updateKey = defineRoute({
  method: 'PATCH',
  path: '/keys/:hash',
  auth: 'management',
  params: KeyParamsSchema,
  body: UpdateKeyBodySchema,
  async handle({ params, body, caller, repositories }) {
    const key = await requireOwnKey(repositories, caller.account.id, params.hash)
    if (body.disabled === true) await assertNotLastManagementKey(repositories, key)
    const updated = await repositories.apiKeys.update(key.hash, body)
    if (!updated) throw new NotFoundError('API key not found')
    return json({ data: toApiKeyWire(updated) })
  },
})

export const deleteKey = defineRoute({
  method: 'DELETE',
  path: '/keys/:hash',
  auth: 'management',
  params: KeyParamsSchema,
  async handle({ params, caller, repositories }) {
    const key = await requireOwnKey(repositories, caller.account.id, params.hash)
    await assertNotLastManagementKey(repositories, key)
    if (!(await repositories.apiKeys.delete(key.hash))) throw new NotFoundError('API key not found')
    return json({ deleted: true })
  },
})
