/**
 * The guardrails area, served as its public counterpart does (`/guardrails`, management keys only; paths,
 * methods and statuses as `@openrouter/sdk` calls them). Their assignments are in guardrail-assignments.ts
 * (docs/decisions.md, Guardrails).
 */

import { ConflictError, InvalidRequestError, NotFoundError } from '../core/errors'
import { randomId } from '../core/crypto'
import { derivedGuardrailId } from '../repositories/workspaces'
import { defineRoute, json, type RouteContext } from '../pipeline/route'
import type { Repositories } from '../repositories'
import { NO_RULES } from '../repositories/guardrails'
import { GUARDRAIL_NOT_FOUND, materializeGuardrail, requireGuardrail, workspaceDefaultingTo } from '../services/guardrails'
import {
  CreateGuardrailBodySchema,
  GuardrailParamsSchema,
  ListGuardrailsQuerySchema,
  UpdateGuardrailBodySchema,
  type UpdateGuardrailBody,
} from './guardrails.schemas'
import { applyGuardrailBody, toGuardrailWire } from './guardrails.wire'


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
  audit: 'guardrail.create',
  body: CreateGuardrailBodySchema,
  isIdempotent: true,
  async handle({ body, caller, repositories, runtime, audit }) {
    checkModels(runtime, body)
    const workspaceId = body.workspace_id ?? caller.account.defaultWorkspaceId
    // As POST /byok: without a default workspace, the caller must say where the guardrail goes.
    if (!workspaceId) throw new InvalidRequestError('body.workspace_id: is required: the account has no default workspace')
    const workspace = await repositories.workspaces.findForAccount(caller.account.id, workspaceId)
    if (!workspace) throw new InvalidRequestError(`body.workspace_id: no workspace of this account has this id`)
    const rules = applyGuardrailBody({ ...NO_RULES, name: body.name, description: null }, body)
    const created = await repositories.guardrails.create({ ...rules, id: randomId(), accountId: caller.account.id, workspaceId: workspace.id })
    await audit({ target: { type: 'guardrail', id: created.id }, workspaceId: workspace.id, changes: { ...body, workspace_id: workspace.id } })
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

export const updateGuardrail = defineRoute({
  method: 'PATCH',
  path: '/guardrails/:id',
  auth: 'management',
  audit: 'guardrail.update',
  params: GuardrailParamsSchema,
  body: UpdateGuardrailBodySchema,
  async handle({ params, body, caller, repositories, runtime, audit }) {
    checkModels(runtime, body)
    const found = await requireGuardrail(repositories, caller.account, params.id)
    // Checked once up front, so the compare-and-set below cannot throw halfway through.
    applyGuardrailBody(found.record, body)
    if (!found.isStored) await materializeGuardrail(repositories, found.record)
    const updated = await repositories.guardrails.update(params.id, (current) => applyGuardrailBody(current, body))
    if (!updated) throw new NotFoundError(GUARDRAIL_NOT_FOUND)
    await audit({ target: { type: 'guardrail', id: params.id }, workspaceId: updated.workspaceId, changes: body })
    return json({ data: toGuardrailWire(updated) })
  },
})

export const deleteGuardrail = defineRoute({
  method: 'DELETE',
  path: '/guardrails/:id',
  auth: 'management',
  audit: 'guardrail.delete',
  params: GuardrailParamsSchema,
  async handle({ params, caller, repositories, audit }) {
    const found = await requireGuardrail(repositories, caller.account, params.id)
    if (!found.isStored) throw new ConflictError('The guardrail is an unconfigured workspace default; there is nothing to delete')
    const workspace = await workspaceDefaultingTo(repositories, caller.account.id, params.id)
    // A workspace's own default guardrail, deleted, is its unconfigured default again; another guardrail made a
    // workspace's default would leave that workspace naming nothing.
    if (workspace && (await derivedGuardrailId(workspace.id)) !== params.id) {
      throw new ConflictError(`The guardrail is the default guardrail of workspace "${workspace.slug}"; set another default_guardrail_id on the workspace first`)
    }
    if (!(await repositories.guardrails.delete(params.id))) throw new NotFoundError(GUARDRAIL_NOT_FOUND)
    await audit({ target: { type: 'guardrail', id: params.id }, workspaceId: found.record.workspaceId, changes: { name: found.record.name } })
    return json({ deleted: true })
  },
})
