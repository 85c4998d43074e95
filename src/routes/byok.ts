/**
 * Provider credentials (spec: BYOK; `POST /byok`, `GET /byok`, `PATCH /byok/{id}`), plus
 * `GET /byok/{id}` and `DELETE /byok/{id}` as the public counterpart has them. Management keys only.
 * The raw `key` is write-only: no response, log or error ever carries it.
 */

import { defineRoute, json } from '../pipeline/route'
import type { GatewayRuntime } from '../pipeline/runtime'
import type { ByokRecord } from '../repositories/byok-credentials'
import { resolveWorkspace } from '../services/accounts'
import {
  createByokCredential,
  requireByokCredential,
  requireKnownProvider,
  updateByokCredential,
  type ByokSettings,
  type ProviderLookup,
} from '../services/byok'
import { ByokParamsSchema, CreateByokBodySchema, ListByokQuerySchema, UpdateByokBodySchema, type UpdateByokBody } from './byok.schemas'

/** Every provider the gateway can route to: built-in ones and those the operator configured, with how its adapter reads a key. */
const routableProviders =
  (runtime: GatewayRuntime): ProviderLookup =>
  (slug) => {
    const provider = runtime.inference.providers.get(slug)
    return provider && { displayName: provider.descriptor.displayName, credential: provider.adapter.credential }
  }

/** The spec's BYOK credential object. */
export const toByokWire = (record: ByokRecord) => ({
  id: record.id,
  name: record.name,
  provider: record.provider,
  label: record.label,
  workspace_id: record.workspaceId,
  created_at: record.createdAt,
  sort_order: record.sortOrder,
  disabled: record.disabled,
  is_fallback: record.isFallback,
  is_byok_only: record.isByokOnly,
  is_required: record.isRequired,
  allowed_api_key_hashes: record.allowedApiKeyHashes,
  allowed_models: record.allowedModels,
  allowed_user_ids: record.allowedUserIds,
  declared_zdr: record.declaredZdr,
})

const fromWire = (body: UpdateByokBody): ByokSettings => ({
  name: body.name,
  disabled: body.disabled,
  isFallback: body.is_fallback,
  isByokOnly: body.is_byok_only,
  isRequired: body.is_required,
  allowedApiKeyHashes: body.allowed_api_key_hashes,
  allowedModels: body.allowed_models,
  allowedUserIds: body.allowed_user_ids,
  declaredZdr: body.declared_zdr,
})

export const createByok = defineRoute({
  method: 'POST',
  path: '/byok',
  auth: 'management',
  audit: 'byok.create',
  body: CreateByokBodySchema,
  async handle({ body, caller, repositories, secrets, now, runtime, audit }) {
    const record = await createByokCredential(
      repositories,
      secrets,
      caller.account,
      { ...fromWire(body), provider: body.provider, key: body.key, workspaceId: body.workspace_id },
      now(),
      runtime.inference.guard,
      routableProviders(runtime),
    )
    // The key itself is recorded only as set (src/services/audit-log.ts redacts it).
    await audit({ target: { type: 'byok_credential', id: record.id }, workspaceId: record.workspaceId, changes: { ...body, workspace_id: record.workspaceId } })
    // spec POST /byok: 200 (not 201).
    return json({ data: toByokWire(record) })
  },
})

export const listByok = defineRoute({
  method: 'GET',
  path: '/byok',
  auth: 'management',
  query: ListByokQuerySchema,
  async handle({ query, caller, repositories, runtime }) {
    if (query.provider !== undefined) requireKnownProvider(routableProviders(runtime), query.provider, 'query.provider')
    const workspace = await resolveWorkspace(repositories, caller.account, query.workspace_id)
    const page = await repositories.byok.list(
      { accountId: caller.account.id, workspaceId: workspace.id, provider: query.provider },
      query.offset,
      query.limit,
    )
    return json({ data: page.credentials.map(toByokWire), total_count: page.totalCount })
  },
})

export const getByok = defineRoute({
  method: 'GET',
  path: '/byok/:id',
  auth: 'management',
  params: ByokParamsSchema,
  async handle({ params, caller, repositories }) {
    return json({ data: toByokWire(await requireByokCredential(repositories, caller.account.id, params.id)) })
  },
})

export const updateByok = defineRoute({
  method: 'PATCH',
  path: '/byok/:id',
  auth: 'management',
  audit: 'byok.update',
  params: ByokParamsSchema,
  body: UpdateByokBodySchema,
  async handle({ params, body, caller, repositories, secrets, runtime, audit }) {
    const record = await updateByokCredential(
      repositories,
      secrets,
      caller.account,
      params.id,
      { ...fromWire(body), key: body.key },
      runtime.inference.guard,
      routableProviders(runtime),
    )
    await audit({ target: { type: 'byok_credential', id: record.id }, workspaceId: record.workspaceId, changes: body })
    return json({ data: toByokWire(record) })
  },
})

export const deleteByok = defineRoute({
  method: 'DELETE',
  path: '/byok/:id',
  auth: 'management',
  audit: 'byok.delete',
  params: ByokParamsSchema,
  async handle({ params, caller, repositories, audit }) {
    const record = await requireByokCredential(repositories, caller.account.id, params.id)
    // A hard delete: the sealed key goes with the record, so no key material is left behind.
    // Of two deletes racing, the one that deleted records it.
    if (await repositories.byok.delete(record.id)) await audit({ target: { type: 'byok_credential', id: record.id }, workspaceId: record.workspaceId, changes: { provider: record.provider, name: record.name } })
    return json({ deleted: true })
  },
})
