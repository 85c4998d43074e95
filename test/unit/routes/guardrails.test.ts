/**
 * The guardrails area: CRUD, key assignments and the workspace default guardrail, the answers checked against the
 * zod schemas `@openrouter/sdk` validates them with, and every refusal with its full error body.
 */

import {
  CreateGuardrailResponse$inboundSchema,
  ListGuardrailsResponse$inboundSchema,
  ListKeyAssignmentsResponse$inboundSchema,
  ListMemberAssignmentsResponse$inboundSchema,
} from '@openrouter/sdk/models'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createTestGateway, scriptedProvider, type TestGateway } from '../../../src/testing'

let t: TestGateway
beforeEach(async () => {
  t = await createTestGateway({ providers: { alpha: scriptedProvider({ reply: 'Hi' }) } })
})
afterEach(() => t.close())

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

const send = async (method: string, path: string, json?: unknown, key?: string) => {
  const response = await t.call(method, path, { ...(json === undefined ? {} : { json }), ...(key ? { key } : {}) })
  return { status: response.status, body: await response.json() }
}

const create = async (json: Record<string, unknown>) => {
  const { status, body } = await send('POST', '/guardrails', json)
  expect(status, JSON.stringify(body)).toBe(201)
  return body.data
}

const refused = (status: number, message: string) => ({ status, body: { error: { code: status, message } } })

describe('POST /guardrails', () => {
  it('creates a guardrail with every field the SDK reads, in the default workspace', async () => {
    const { status, body } = await send('POST', '/guardrails', {
      name: '  Production  ',
      description: 'For prod keys',
      allowed_models: ['test/model'],
      ignored_providers: ['beta'],
      enforce_zdr_openai: true,
      enable_paid_model_training: false,
      limit_usd: 12.5,
      reset_interval: 'weekly',
      include_byok_in_budgets: true,
      content_filters: [{ pattern: '(?i)secret-\\d+', action: 'redact', label: '[CODE]' }],
      content_filter_builtins: [{ slug: 'email', action: 'flag' }, { slug: 'regex-prompt-injection', action: 'block', scan_scope: 'all_messages', label: 'injection' }],
    })
    expect(status).toBe(201)
    expect(() => CreateGuardrailResponse$inboundSchema.parse(body)).not.toThrow()
    expect(body.data).toEqual({
      id: expect.stringMatching(UUID),
      name: 'Production',
      description: 'For prod keys',
      workspace_id: t.defaultWorkspaceId,
      allowed_models: ['test/model'],
      ignored_models: null,
      allowed_providers: null,
      ignored_providers: ['beta'],
      allowed_data_regions: null,
      enforce_zdr: null,
      enforce_zdr_anthropic: null,
      enforce_zdr_openai: true,
      enforce_zdr_google: null,
      enforce_zdr_xai: null,
      enforce_zdr_other: null,
      enable_free_model_training: null,
      enable_paid_model_training: false,
      enable_free_model_publication: null,
      limit_usd: 12.5,
      reset_interval: 'weekly',
      include_byok_in_budgets: true,
      content_filters: [{ pattern: '(?i)secret-\\d+', action: 'redact', label: '[CODE]' }],
      content_filter_builtins: [
        { slug: 'email', action: 'flag' },
        { slug: 'regex-prompt-injection', action: 'block', label: 'injection', scan_scope: 'all_messages' },
      ],
      created_at: expect.stringMatching(ISO),
      updated_at: null,
    })
  })

  it('copies the deprecated enforce_zdr into the families not named', async () => {
    const created = await create({ name: 'zdr', enforce_zdr: true, enforce_zdr_google: false })
    expect(created).toMatchObject({ enforce_zdr: null, enforce_zdr_anthropic: true, enforce_zdr_openai: true, enforce_zdr_google: false, enforce_zdr_xai: true, enforce_zdr_other: true })
    expect((await create({ name: 'all', enforce_zdr: true })).enforce_zdr).toBe(true)
  })

  it('refuses what it cannot enforce, naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, 'body.name: is required'],
      [{ name: 'x', content_filters: [{ pattern: '(?<=a)b', action: 'block' }] }, 'body.content_filters.0.pattern: is not a pattern RE2 can run: invalid named capture'],
      [{ name: 'x', content_filters: [{ pattern: '(a)\\1', action: 'block' }] }, 'body.content_filters.0.pattern: is not a pattern RE2 can run: invalid escape sequence'],
      [{ name: 'x', content_filters: [{ pattern: 'a', action: 'erase' }] }, 'body.content_filters.0.action: must be one of block, redact, flag'],
      [{ name: 'x', content_filter_builtins: [{ slug: 'dna', action: 'block' }] }, expect.stringMatching(/^body\.content_filter_builtins\.0\.slug: must be one of email, phone/) as unknown as string],
      [{ name: 'x', content_filter_builtins: [{ slug: 'email', action: 'block' }, { slug: 'email', action: 'flag' }] }, 'body.content_filter_builtins: must name each builtin once'],
      [{ name: 'x', limit_usd: 5 }, 'body.reset_interval: is required with limit_usd'],
      [{ name: 'x', reset_interval: 'daily' }, 'body.limit_usd: is required with reset_interval'],
      [{ name: 'x', limit_usd: 5, reset_interval: null }, 'body.reset_interval: must be null exactly when limit_usd is (a budget needs both, clearing it clears both)'],
      [{ name: 'x', allowed_data_regions: ['europe'] }, 'body.allowed_data_regions: is not supported: this gateway has no OpenRouter data regions; leave it out or send null'],
      [{ name: 'x', enable_free_model_publication: false }, 'body.enable_free_model_publication: cannot be false: no endpoint of this gateway is known to publish prompts, so there is nothing to exclude; leave it out'],
      [{ name: 'x', allowed_models: ['nobody/nothing'] }, 'body.allowed_models.0: no model "nobody/nothing" in this gateway\'s catalog (GET /models lists them)'],
      [{ name: 'x', allowed_providers: ['Bad Provider'] }, 'body.allowed_providers.0: must be a provider slug'],
      [{ name: 'x', colour: 'red' }, expect.stringMatching(/^body\.colour: /) as unknown as string],
      [{ name: 'x', workspace_id: '00000000-0000-4000-8000-000000000000' }, 'body.workspace_id: no workspace of this account has this id'],
    ]
    for (const [json, message] of cases) {
      const { status, body } = await send('POST', '/guardrails', json)
      expect({ status, body }, JSON.stringify(json)).toEqual(refused(400, message))
    }
  })

  it('is for management keys only', async () => {
    expect((await send('POST', '/guardrails', { name: 'x' }, t.regularKey)).status).toBe(403)
    expect((await send('GET', '/guardrails', undefined, t.regularKey)).status).toBe(403)
  })
})

describe('GET, PATCH, DELETE /guardrails/{id}', () => {
  it('lists with a total, pages and filters by workspace', async () => {
    for (const name of ['a', 'b', 'c']) await create({ name })
    const { body } = await send('GET', '/guardrails?limit=2&offset=1')
    expect(() => ListGuardrailsResponse$inboundSchema.parse(body)).not.toThrow()
    expect(body.total_count).toBe(3)
    expect(body.data.map((guardrail: { name: string }) => guardrail.name)).toEqual(['b', 'c'])
    const other = await send('GET', '/guardrails?workspace_id=00000000-0000-4000-8000-000000000000')
    expect(other.body).toEqual({ data: [], total_count: 0 })
    expect(await send('GET', '/guardrails?limit=101')).toEqual(refused(400, 'query.limit: must be at most 100'))
  })

  it('updates with replace semantics: omitted stays, null clears, lists are replaced whole', async () => {
    const created = await create({ name: 'x', allowed_providers: ['alpha', 'beta'], limit_usd: 1, reset_interval: 'daily', description: 'keep' })
    const { status, body } = await send('PATCH', `/guardrails/${created.id}`, { allowed_providers: ['alpha'], limit_usd: null, reset_interval: null })
    expect(status).toBe(200)
    expect(body.data).toMatchObject({ name: 'x', description: 'keep', allowed_providers: ['alpha'], limit_usd: null, reset_interval: null })
    expect(body.data.updated_at).toMatch(ISO)
    expect((await send('GET', `/guardrails/${created.id}`)).body).toEqual(body)
  })

  it('updates one half of a budget and keeps the stored other; refuses a half the stored budget cannot complete', async () => {
    const budgeted = await create({ name: 'budget', limit_usd: 1, reset_interval: 'daily' })
    expect((await send('PATCH', `/guardrails/${budgeted.id}`, { limit_usd: 3 })).body.data).toMatchObject({ limit_usd: 3, reset_interval: 'daily' })
    expect((await send('PATCH', `/guardrails/${budgeted.id}`, { reset_interval: 'weekly' })).body.data).toMatchObject({ limit_usd: 3, reset_interval: 'weekly' })
    expect(await send('PATCH', `/guardrails/${budgeted.id}`, { reset_interval: null })).toEqual(refused(400, 'body.reset_interval: must be null exactly when limit_usd is (a budget needs both, clearing it clears both)'))
    expect((await send('PATCH', `/guardrails/${budgeted.id}`, { limit_usd: null })).body.data).toMatchObject({ limit_usd: null, reset_interval: null })
    expect(await send('PATCH', `/guardrails/${budgeted.id}`, { limit_usd: 2 })).toEqual(refused(400, 'body.reset_interval: is required with limit_usd'))
    expect(await send('PATCH', `/guardrails/${budgeted.id}`, { reset_interval: 'daily' })).toEqual(refused(400, 'body.limit_usd: is required with reset_interval'))
  })

  it('answers 404 for an unknown or another account\'s guardrail and a 400 for an id that is no UUID', async () => {
    expect(await send('GET', '/guardrails/00000000-0000-4000-8000-000000000000')).toEqual(refused(404, 'Guardrail not found'))
    expect(await send('PATCH', '/guardrails/00000000-0000-4000-8000-000000000000', { name: 'y' })).toEqual(refused(404, 'Guardrail not found'))
    expect(await send('DELETE', '/guardrails/00000000-0000-4000-8000-000000000000')).toEqual(refused(404, 'Guardrail not found'))
    expect(await send('GET', '/guardrails/nope')).toEqual(refused(400, 'params.id: must be a guardrail id (a UUID)'))
    const other = await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
    const otherKey = await t.gateway.admin.createKey({ kind: 'management', name: 'other', accountId: other.account.id })
    const created = await create({ name: 'mine' })
    expect(await send('GET', `/guardrails/${created.id}`, undefined, otherKey.key)).toEqual(refused(404, 'Guardrail not found'))
  })

  it('deletes a guardrail together with its key assignments', async () => {
    const created = await create({ name: 'x' })
    await send('POST', `/guardrails/${created.id}/assignments/keys`, { key_hashes: [t.regularKeyHash] })
    expect(await send('DELETE', `/guardrails/${created.id}`)).toEqual({ status: 200, body: { deleted: true } })
    expect((await send('GET', '/guardrails/assignments/keys')).body).toEqual({ data: [], total_count: 0 })
    expect((await send('GET', `/guardrails/${created.id}`)).status).toBe(404)
  })
})

describe('key assignments', () => {
  it('assigns, lists and unassigns keys; a key holds one guardrail, assigning another replaces it', async () => {
    const first = await create({ name: 'first' })
    const second = await create({ name: 'second' })
    expect(await send('POST', `/guardrails/${first.id}/assignments/keys`, { key_hashes: [t.regularKeyHash, t.regularKeyHash] })).toEqual({ status: 200, body: { assigned_count: 1 } })
    // Assigning it again changes nothing.
    expect((await send('POST', `/guardrails/${first.id}/assignments/keys`, { key_hashes: [t.regularKeyHash] })).body).toEqual({ assigned_count: 0 })

    const listed = await send('GET', `/guardrails/${first.id}/assignments/keys`)
    expect(() => ListKeyAssignmentsResponse$inboundSchema.parse(listed.body)).not.toThrow()
    expect(listed.body).toEqual({
      data: [
        {
          id: expect.stringMatching(UUID),
          key_hash: t.regularKeyHash,
          guardrail_id: first.id,
          key_name: 'test regular',
          key_label: expect.stringMatching(/^mg-v1-[0-9a-f]{3}\.\.\.[0-9a-f]{4}$/),
          assigned_by: expect.any(String),
          created_at: expect.stringMatching(ISO),
        },
      ],
      total_count: 1,
    })

    expect((await send('POST', `/guardrails/${second.id}/assignments/keys`, { key_hashes: [t.regularKeyHash] })).body).toEqual({ assigned_count: 1 })
    expect((await send('GET', `/guardrails/${first.id}/assignments/keys`)).body).toEqual({ data: [], total_count: 0 })
    const all = await send('GET', '/guardrails/assignments/keys')
    expect(all.body.data.map((assignment: { guardrail_id: string }) => assignment.guardrail_id)).toEqual([second.id])

    // Unassigning from the guardrail the key no longer holds does nothing.
    expect((await send('POST', `/guardrails/${first.id}/assignments/keys/remove`, { key_hashes: [t.regularKeyHash] })).body).toEqual({ unassigned_count: 0 })
    expect((await send('POST', `/guardrails/${second.id}/assignments/keys/remove`, { key_hashes: [t.regularKeyHash] })).body).toEqual({ unassigned_count: 1 })
    expect((await send('GET', '/guardrails/assignments/keys')).body).toEqual({ data: [], total_count: 0 })
  })

  it('refuses hashes that are not the account\'s keys, naming the entry', async () => {
    const created = await create({ name: 'x' })
    const unknown = 'f'.repeat(64)
    expect(await send('POST', `/guardrails/${created.id}/assignments/keys`, { key_hashes: [t.regularKeyHash, unknown] })).toEqual(
      refused(400, 'body.key_hashes.1: no API key of this account has this hash'),
    )
    expect(await send('POST', `/guardrails/${created.id}/assignments/keys`, { key_hashes: [] })).toEqual(refused(400, 'body.key_hashes: must name at least one key'))
    const managementHash = (await send('GET', '/keys')).body.data.find((key: { kind: string }) => key.kind === 'management').hash
    expect(await send('POST', `/guardrails/${created.id}/assignments/keys`, { key_hashes: [managementHash] })).toEqual(
      refused(400, 'body.key_hashes.0: is a management key, which runs no model requests; a guardrail would govern nothing'),
    )
    expect(await send('POST', `/guardrails/${created.id}/assignments/keys`, { key_hashes: ['abc'] })).toEqual(
      refused(400, 'body.key_hashes.0: must be a key hash: 64 lowercase hex characters'),
    )
    // Nothing was assigned by the refused call.
    expect((await send('GET', '/guardrails/assignments/keys')).body.total_count).toBe(0)
  })

  it('forgets the assignment of a deleted key', async () => {
    const created = await create({ name: 'x' })
    const key = await send('POST', '/keys', { name: 'short-lived' })
    await send('POST', `/guardrails/${created.id}/assignments/keys`, { key_hashes: [key.body.data.hash] })
    await send('DELETE', `/keys/${key.body.data.hash}`)
    expect((await send('GET', '/guardrails/assignments/keys')).body).toEqual({ data: [], total_count: 0 })
  })
})

describe('member assignments', () => {
  it('assigns the users the account\'s keys act for, one guardrail each, and lists them as the SDK reads them', async () => {
    const first = await create({ name: 'first' })
    const second = await create({ name: 'second' })
    await send('POST', '/keys', { name: 'alice key', creator_user_id: 'user_alice' })
    expect(await send('POST', `/guardrails/${first.id}/assignments/members`, { member_user_ids: ['user_alice'] })).toEqual({ status: 200, body: { assigned_count: 1 } })
    const listed = await send('GET', `/guardrails/${first.id}/assignments/members`)
    expect(() => ListMemberAssignmentsResponse$inboundSchema.parse(listed.body)).not.toThrow()
    expect(listed.body).toEqual({
      data: [
        {
          id: expect.stringMatching(UUID),
          user_id: 'user_alice',
          organization_id: t.accountId,
          guardrail_id: first.id,
          assigned_by: expect.any(String),
          created_at: expect.stringMatching(ISO),
        },
      ],
      total_count: 1,
    })
    expect((await send('POST', `/guardrails/${second.id}/assignments/members`, { member_user_ids: ['user_alice'] })).body).toEqual({ assigned_count: 1 })
    expect((await send('GET', `/guardrails/${first.id}/assignments/members`)).body.total_count).toBe(0)
    expect((await send('GET', '/guardrails/assignments/members')).body.data.map((assignment: { guardrail_id: string }) => assignment.guardrail_id)).toEqual([second.id])
    expect((await send('POST', `/guardrails/${second.id}/assignments/members/remove`, { member_user_ids: ['user_alice'] })).body).toEqual({ unassigned_count: 1 })
    expect((await send('GET', '/guardrails/assignments/members')).body).toEqual({ data: [], total_count: 0 })
  })

  it('refuses a user no key of the account acts for, naming the entry', async () => {
    const created = await create({ name: 'x' })
    expect(await send('POST', `/guardrails/${created.id}/assignments/members`, { member_user_ids: ['user_nobody'] })).toEqual(
      refused(400, 'body.member_user_ids.0: no API key of this account acts for this user'),
    )
  })

  it('are deleted with their guardrail', async () => {
    const created = await create({ name: 'x' })
    await send('POST', '/keys', { name: 'bob key', creator_user_id: 'user_bob' })
    await send('POST', `/guardrails/${created.id}/assignments/members`, { member_user_ids: ['user_bob'] })
    await send('DELETE', `/guardrails/${created.id}`)
    expect((await send('GET', '/guardrails/assignments/members')).body).toEqual({ data: [], total_count: 0 })
  })
})

describe('the workspace default guardrail', () => {
  const workspaceDefault = async () => (await send('GET', `/workspaces/${t.defaultWorkspaceId}`)).body.data.default_guardrail_id as string

  it('exists unconfigured, becomes a stored guardrail when first updated, and is listed from then on', async () => {
    const id = await workspaceDefault()
    const unconfigured = await send('GET', `/guardrails/${id}`)
    expect(unconfigured.status).toBe(200)
    expect(unconfigured.body.data).toMatchObject({ id, name: 'Default guardrail of workspace "Default"', workspace_id: t.defaultWorkspaceId, content_filters: null, limit_usd: null })
    expect((await send('GET', '/guardrails')).body.total_count).toBe(0)
    expect(await send('DELETE', `/guardrails/${id}`)).toEqual(refused(409, 'The guardrail is an unconfigured workspace default; there is nothing to delete'))

    const updated = await send('PATCH', `/guardrails/${id}`, { content_filter_builtins: [{ slug: 'ssn', action: 'block' }] })
    expect(updated.status).toBe(200)
    expect(updated.body.data).toMatchObject({ id, content_filter_builtins: [{ slug: 'ssn', action: 'block' }] })
    expect((await send('GET', '/guardrails')).body.data.map((guardrail: { id: string }) => guardrail.id)).toEqual([id])

    // Deleted, it is the unconfigured default again.
    expect((await send('DELETE', `/guardrails/${id}`)).status).toBe(200)
    expect((await send('GET', `/guardrails/${id}`)).body.data.content_filter_builtins).toBeNull()
  })

  it('can be another guardrail of the account, set through PATCH /workspaces/{id}', async () => {
    const ownDefault = await workspaceDefault()
    const other = await create({ name: 'Company policy' })
    expect(await send('PATCH', `/workspaces/${t.defaultWorkspaceId}`, { default_guardrail_id: '00000000-0000-4000-8000-000000000000' })).toEqual(
      refused(400, 'body.default_guardrail_id: no guardrail of this account has this id'),
    )
    const patched = await send('PATCH', `/workspaces/${t.defaultWorkspaceId}`, { default_guardrail_id: other.id, description: 'governed' })
    expect(patched.status).toBe(200)
    expect(patched.body.data).toMatchObject({ default_guardrail_id: other.id, description: 'governed' })
    expect(await send('DELETE', `/guardrails/${other.id}`)).toEqual(
      refused(409, 'The guardrail is the default guardrail of workspace "default"; set another default_guardrail_id on the workspace first'),
    )
    // null clears it: back to its own default, never configured (no rules).
    expect((await send('PATCH', `/workspaces/${t.defaultWorkspaceId}`, { default_guardrail_id: null })).body.data.default_guardrail_id).toBe(ownDefault)
    await send('PATCH', `/workspaces/${t.defaultWorkspaceId}`, { default_guardrail_id: other.id })
    // Back to its own default, never configured: still there to go back to.
    expect((await send('PATCH', `/workspaces/${t.defaultWorkspaceId}`, { default_guardrail_id: ownDefault })).body.data.default_guardrail_id).toBe(ownDefault)
    expect((await send('GET', `/guardrails/${ownDefault}`)).status).toBe(200)
    expect((await send('DELETE', `/guardrails/${other.id}`)).status).toBe(200)
  })

  it('goes with its workspace, unless another workspace uses it as its default', async () => {
    const workspace = (await send('POST', '/workspaces', { name: 'Team', slug: 'team' })).body.data
    const placed = await create({ name: 'Team policy', workspace_id: workspace.id })
    await send('PATCH', `/workspaces/${t.defaultWorkspaceId}`, { default_guardrail_id: placed.id })
    expect(await send('DELETE', `/workspaces/${workspace.id}`)).toEqual(
      refused(409, 'Workspace "default" uses a guardrail of this workspace as its default_guardrail_id; set another one there first'),
    )
    const ownDefault = (await send('GET', `/workspaces/${t.defaultWorkspaceId}`)).body.data.default_guardrail_id
    expect(ownDefault).toBe(placed.id)
    // Pointed back at a guardrail of its own, the default workspace no longer holds the other one up.
    const mine = await create({ name: 'Mine' })
    await send('PATCH', `/workspaces/${t.defaultWorkspaceId}`, { default_guardrail_id: mine.id })
    expect((await send('DELETE', `/workspaces/${workspace.id}`)).status).toBe(200)
    expect((await send('GET', `/guardrails/${placed.id}`)).status).toBe(404)
  })
})
