import { beforeEach, describe, expect, it } from 'vitest'
import { createTestGateway, readJson, type TestGateway } from '../../helpers/gateway'

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

describe('GET /workspaces/{id}', () => {
  let t: TestGateway
  beforeEach(async () => {
    t = await createTestGateway()
  })

  it('returns the default workspace by slug with every field of the spec', async () => {
    const response = await t.call('GET', '/workspaces/default')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/json')
    const body = await readJson(response)
    expect(Object.keys(body)).toEqual(['data'])
    const workspace = body.data
    expect(Object.keys(workspace).sort()).toEqual(
      [
        'id', 'name', 'slug', 'description', 'created_by', 'created_at', 'updated_at', 'default_guardrail_id',
        'default_image_model', 'default_text_model', 'default_provider_sort', 'disabled_server_tools',
        'io_logging_api_key_ids', 'io_logging_sampling_rate', 'include_byok_in_budgets',
        'is_data_discount_logging_enabled', 'is_observability_broadcast_enabled', 'is_observability_io_logging_enabled',
        // The gateway's own (docs/decisions.md, Stored responses; Response cache).
        'is_response_storage_enabled', 'cache',
      ].sort(),
    )
    expect(workspace).toMatchObject({
      id: t.defaultWorkspaceId,
      name: 'Default',
      slug: 'default',
      description: 'Default workspace',
      default_provider_sort: 'price',
      disabled_server_tools: null,
      io_logging_api_key_ids: null,
      io_logging_sampling_rate: 1,
      include_byok_in_budgets: false,
      is_data_discount_logging_enabled: false,
      is_observability_broadcast_enabled: false,
      is_observability_io_logging_enabled: false,
      is_response_storage_enabled: true,
    })
    expect(workspace.id).toMatch(UUID)
    expect(workspace.default_guardrail_id).toMatch(UUID)
    expect(workspace.created_at).toMatch(ISO)
    expect(workspace.updated_at).toMatch(ISO)
    expect(workspace.created_by).toMatch(/^user_[0-9a-f]{32}$/)
    expect(workspace.default_text_model).toMatch(/^[^/]+\/[^/]+$/)
    expect(workspace.default_image_model).toMatch(/^[^/]+\/[^/]+$/)
  })

  it('returns the same workspace by UUID', async () => {
    const bySlug = await readJson(await t.call('GET', '/workspaces/default'))
    const byId = await readJson(await t.call('GET', `/workspaces/${t.defaultWorkspaceId}`))
    expect(byId).toEqual(bySlug)
  })

  it('derives a stable guardrail id from the workspace id', async () => {
    const first = await readJson(await t.call('GET', '/workspaces/default'))
    const second = await readJson(await t.call('GET', '/workspaces/default'))
    expect(first.data.default_guardrail_id).toBe(second.data.default_guardrail_id)
    expect(first.data.default_guardrail_id).not.toBe(first.data.id)
  })

  it('finds workspaces created through the admin API, with their settings', async () => {
    const created = await t.gateway.admin.createWorkspace(undefined, {
      name: 'Research',
      slug: 'research',
      description: 'Lab work',
      defaultTextModel: 'anthropic/claude-sonnet-4.5',
      disabledServerTools: ['web_search'],
      ioLoggingApiKeyIds: [1, 2],
    })
    const body = await readJson(await t.call('GET', '/workspaces/research'))
    expect(body.data).toMatchObject({
      id: created.id,
      slug: 'research',
      name: 'Research',
      description: 'Lab work',
      default_text_model: 'anthropic/claude-sonnet-4.5',
      disabled_server_tools: ['web_search'],
      io_logging_api_key_ids: [1, 2],
    })
  })

  it('answers 404 for an unknown id or slug', async () => {
    for (const id of ['nope', '00000000-0000-4000-8000-000000000000']) {
      const response = await t.call('GET', `/workspaces/${id}`)
      expect(response.status).toBe(404)
      expect(await readJson(response)).toEqual({ error: { code: 404, message: 'Workspace not found' } })
    }
  })

  it("never reveals another account's workspace, by slug or by id", async () => {
    const other = await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
    await t.gateway.admin.createWorkspace('other', { name: 'Secret', slug: 'secret' })
    for (const id of ['secret', other.workspace.id]) {
      const response = await t.call('GET', `/workspaces/${id}`)
      expect(response.status).toBe(404)
      expect(await readJson(response)).toEqual({ error: { code: 404, message: 'Workspace not found' } })
    }
    // The other account's own management key sees its own default workspace under the same slug.
    const otherKey = await t.gateway.admin.createKey({ accountId: 'other', kind: 'management' })
    const own = await readJson(await t.call('GET', '/workspaces/default', { key: otherKey.key }))
    expect(own.data.id).toBe(other.workspace.id)
  })

  it('answers 401 without a key, with a malformed header, with an unknown or disabled key', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{}, 'Missing API key: send it as Authorization: Bearer <key>'],
      [{ authorization: 'Basic abc' }, 'Malformed Authorization header: expected Bearer <key>'],
      [{ authorization: 'Bearer mg-v1-unknown' }, 'Invalid API key'],
    ]
    for (const [headers, message] of cases) {
      const response = await t.call('GET', '/workspaces/default', { key: null, headers })
      expect(response.status).toBe(401)
      expect(await readJson(response)).toEqual({ error: { code: 401, message } })
    }
    const extra = await t.gateway.admin.createKey({ kind: 'management', name: 'to disable' })
    await t.call('PATCH', `/keys/${extra.record.hash}`, { json: { disabled: true } })
    const response = await t.call('GET', '/workspaces/default', { key: extra.key })
    expect(response.status).toBe(401)
    expect(await readJson(response)).toEqual({ error: { code: 401, message: 'API key is disabled' } })
  })

  it('accepts the bearer scheme in any case', async () => {
    const response = await t.call('GET', '/workspaces/default', { key: null, headers: { authorization: `bearer ${t.managementKey}` } })
    expect(response.status).toBe(200)
  })

  it('answers 403 for a regular key, with the spec message', async () => {
    const response = await t.call('GET', '/workspaces/default', { key: t.regularKey })
    expect(response.status).toBe(403)
    expect(await readJson(response)).toEqual({ error: { code: 403, message: 'Only management keys can perform this operation' } })
  })

  it('answers 405 with Allow for a wrong method', async () => {
    const response = await t.call('PUT', '/workspaces/default')
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('GET, PATCH, DELETE')
    expect(await readJson(response)).toEqual({
      error: { code: 405, message: 'Method PUT is not allowed here; use GET, PATCH, DELETE' },
    })
    const onList = await t.call('PATCH', '/workspaces')
    expect(onList.status).toBe(405)
    expect(onList.headers.get('allow')).toBe('GET, POST')
  })

  it('reflects workspace updates and deletion', async () => {
    await t.gateway.admin.createWorkspace(undefined, { name: 'Temp', slug: 'temp' })
    const updated = await t.gateway.admin.updateWorkspace(undefined, 'temp', { slug: 'renamed', ioLoggingSamplingRate: 0.5 })
    expect(updated.slug).toBe('renamed')
    expect((await t.call('GET', '/workspaces/temp')).status).toBe(404)
    const body = await readJson(await t.call('GET', '/workspaces/renamed'))
    expect(body.data.io_logging_sampling_rate).toBe(0.5)
    expect(await t.gateway.admin.deleteWorkspace(undefined, 'renamed')).toBe(true)
    expect((await t.call('GET', '/workspaces/renamed')).status).toBe(404)
  })
})

describe('workspace management routes', () => {
  let t: TestGateway
  beforeEach(async () => {
    t = await createTestGateway()
  })

  it('creates a workspace (201) with defaults and given settings', async () => {
    const response = await t.call('POST', '/workspaces', {
      json: { name: 'Research', slug: 'research', description: 'Lab', default_provider_sort: 'latency', io_logging_sampling_rate: 0.25 },
    })
    expect(response.status).toBe(201)
    const body = await readJson(response)
    expect(body.data).toMatchObject({
      name: 'Research',
      slug: 'research',
      description: 'Lab',
      default_provider_sort: 'latency',
      io_logging_sampling_rate: 0.25,
      disabled_server_tools: null,
      include_byok_in_budgets: false,
    })
    expect(body.data.id).toMatch(UUID)
    expect(await readJson(await t.call('GET', `/workspaces/${body.data.id}`))).toEqual(body)
  })

  it('refuses a taken slug with 409 and validates fields by name', async () => {
    const taken = await t.call('POST', '/workspaces', { json: { name: 'Again', slug: 'default' } })
    expect(taken.status).toBe(409)
    expect(await readJson(taken)).toEqual({ error: { code: 409, message: 'Workspace slug "default" is already taken' } })
    const cases: Array<[unknown, string]> = [
      [{ slug: 'x' }, 'body.name: is required'],
      [{ name: 'x' }, 'body.slug: is required'],
      [{ name: 'x', slug: 'Bad Slug' }, 'body.slug: must be 1 to 64 lowercase letters, digits or inner hyphens'],
      [{ name: 'x', slug: '0df9e665-d932-4740-b2c7-b52af166bc11' }, 'body.slug: must not look like a UUID'],
      [{ name: 'x', slug: 'ok', default_text_model: 'gpt-4o' }, 'body.default_text_model: must be a model slug <author>/<name>'],
      [{ name: 'x', slug: 'ok', io_logging_sampling_rate: 1.5 }, 'body.io_logging_sampling_rate: must be at most 1'],
      [{ name: 'x', slug: 'ok', io_logging_api_key_ids: [1.5] }, 'body.io_logging_api_key_ids.0: must be an integer'],
      [{ name: 'x', slug: 'ok', default_provider_sort: 'random' }, 'body.default_provider_sort: must be one of price, throughput, latency, exacto'],
    ]
    for (const [json, message] of cases) {
      const response = await t.call('POST', '/workspaces', { json })
      expect(response.status, message).toBe(400)
      expect(await readJson(response)).toEqual({ error: { code: 400, message } })
    }
  })

  it('lists workspaces of the account with paging and total_count', async () => {
    for (const slug of ['a', 'b', 'c']) await t.call('POST', '/workspaces', { json: { name: slug, slug } })
    const page = await readJson(await t.call('GET', '/workspaces?offset=1&limit=2'))
    expect(page.total_count).toBe(4)
    expect(page.data.map((workspace: { slug: string }) => workspace.slug)).toEqual(['a', 'b'])
    await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
    const all = await readJson(await t.call('GET', '/workspaces'))
    expect(all.data.map((workspace: { slug: string }) => workspace.slug)).toEqual(['default', 'a', 'b', 'c'])
    expect((await t.call('GET', '/workspaces?limit=101')).status).toBe(400)
  })

  it('updates only the given fields; null clears nullable lists', async () => {
    await t.call('POST', '/workspaces', { json: { name: 'W', slug: 'w', disabled_server_tools: ['web_search'] } })
    const renamed = await readJson(await t.call('PATCH', '/workspaces/w', { json: { slug: 'w2', disabled_server_tools: null } }))
    expect(renamed.data).toMatchObject({ name: 'W', slug: 'w2', disabled_server_tools: null })
    const clash = await t.call('PATCH', '/workspaces/w2', { json: { slug: 'default' } })
    expect(clash.status).toBe(409)
    expect((await readJson(await t.call('GET', '/workspaces/w2'))).data.slug).toBe('w2')
    expect((await t.call('PATCH', '/workspaces/nope', { json: { name: 'x' } })).status).toBe(404)
  })

  it("null clears a description, default model or sort back to a new workspace's value, on create and update", async () => {
    const fresh = (await readJson(await t.call('POST', '/workspaces', { json: { name: 'Fresh', slug: 'fresh' } }))).data
    const set = { description: 'Lab', default_text_model: 'openai/gpt-4.1', default_image_model: 'openai/gpt-image-1', default_provider_sort: 'latency' }
    const cleared = { description: null, default_text_model: null, default_image_model: null, default_provider_sort: null }
    const configured = (await readJson(await t.call('POST', '/workspaces', { json: { name: 'W', slug: 'w', ...set } }))).data
    expect(configured).toMatchObject(set)
    const patched = await t.call('PATCH', '/workspaces/w', { json: cleared })
    expect(patched.status).toBe(200)
    const defaults = {
      description: fresh.description,
      default_text_model: fresh.default_text_model,
      default_image_model: fresh.default_image_model,
      default_provider_sort: fresh.default_provider_sort,
    }
    expect((await readJson(patched)).data).toMatchObject(defaults)
    expect((await readJson(await t.call('GET', '/workspaces/w'))).data).toMatchObject(defaults)
    const createdCleared = await t.call('POST', '/workspaces', { json: { name: 'C', slug: 'c', ...cleared } })
    expect(createdCleared.status).toBe(201)
    expect((await readJson(createdCleared)).data).toMatchObject(defaults)
  })

  it('deletes a workspace; deleting the default one makes defaults ask for workspace_id', async () => {
    await t.call('POST', '/workspaces', { json: { name: 'W', slug: 'w' } })
    const deleted = await t.call('DELETE', '/workspaces/w')
    expect(deleted.status).toBe(200)
    expect(await readJson(deleted)).toEqual({ deleted: true })
    expect((await t.call('GET', '/workspaces/w')).status).toBe(404)
    expect((await t.call('DELETE', '/workspaces/w')).status).toBe(404)

    // The default workspace goes once no regular key is bound to it; the management key is account-wide.
    expect((await t.call('DELETE', `/keys/${t.regularKeyHash}`)).status).toBe(200)
    // OpenRouter's confirmation is required for the default workspace, and a refusal deletes nothing.
    const unconfirmed = await t.call('DELETE', '/workspaces/default')
    expect(unconfirmed.status).toBe(400)
    expect((await readJson(unconfirmed)).error.message).toBe(
      'query.confirm_default_workspace_deletion: must be true to delete the default workspace; routes that fall back to it answer 400 afterwards',
    )
    expect((await t.call('GET', '/workspaces/default')).status).toBe(200)
    expect((await t.call('DELETE', '/workspaces/default?confirm_default_workspace_deletion=false')).status).toBe(400)
    expect((await t.call('DELETE', '/workspaces/default?confirm_default_workspace_deletion=true')).status).toBe(200)
    const key = await t.call('POST', '/keys', { json: { name: 'x' } })
    expect(key.status).toBe(400)
    // The default workspace is not resurrected by later reads.
    expect((await t.call('GET', '/workspaces/default')).status).toBe(404)
  })

  it('refuses to delete a workspace while regular keys are bound to it, disabled ones included (409)', async () => {
    const lab = await readJson(await t.call('POST', '/workspaces', { json: { name: 'Lab', slug: 'lab' } }))
    const first = await readJson(await t.call('POST', '/keys', { json: { name: 'one', workspace_id: 'lab' } }))
    const second = await readJson(await t.call('POST', '/keys', { json: { name: 'two', workspace_id: lab.data.id } }))
    await t.call('PATCH', `/keys/${second.data.hash}`, { json: { disabled: true } })
    // Management keys bound to it do not count: they act for the whole account.
    await t.gateway.admin.createKey({ kind: 'management', workspaceId: 'lab' })
    const message =
      'The workspace still has 2 API key(s) bound to it, disabled ones included; delete them first (GET /keys?include_disabled=true lists them with their workspace_id)'

    const refused = await t.call('DELETE', '/workspaces/lab')
    expect(refused.status).toBe(409)
    expect(await readJson(refused)).toEqual({ error: { code: 409, message } })
    await expect(t.gateway.admin.deleteWorkspace(undefined, 'lab')).rejects.toThrow(message)
    // Nothing went with the refusal: the workspace and its keys still work.
    expect((await t.call('GET', '/workspaces/lab')).status).toBe(200)
    expect((await t.call('GET', `/keys/${first.data.hash}`)).status).toBe(200)

    await t.call('DELETE', `/keys/${first.data.hash}`)
    expect((await t.call('DELETE', '/workspaces/lab')).status).toBe(409)
    await t.call('DELETE', `/keys/${second.data.hash}`)
    expect((await t.call('DELETE', '/workspaces/lab')).status).toBe(200)
  })

  it("answers 401 to a regular key whose workspace is gone anyway (a key created while it was deleted), and keeps management keys working", async () => {
    const lab = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
    const { key: regular } = await t.gateway.admin.createKey({ workspaceId: lab.id })
    const { key: management } = await t.gateway.admin.createKey({ kind: 'management', workspaceId: lab.id })
    // The race: the key was written after the delete counted the workspace's keys.
    await t.gateway.storage.delete('workspaces', lab.id)

    const response = await t.call('POST', '/responses', { key: regular, json: { model: 'openai/gpt-4.1', input: 'hi' } })
    expect(response.status).toBe(401)
    expect(await readJson(response)).toEqual({ error: { code: 401, message: "The API key's workspace was deleted; create a new key" } })
    // An operator cannot lock themselves out: management keys act for the account, not their workspace.
    expect((await t.call('GET', '/workspaces', { key: management })).status).toBe(200)
    expect((await t.call('POST', '/keys', { key: management, json: { name: 'replacement' } })).status).toBe(201)
  })

  it('is for management keys of the owning account only', async () => {
    expect((await t.call('POST', '/workspaces', { key: t.regularKey, json: { name: 'x', slug: 'x' } })).status).toBe(403)
    expect((await t.call('GET', '/workspaces', { key: null })).status).toBe(401)
    const other = await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
    expect((await t.call('DELETE', `/workspaces/${other.workspace.id}`)).status).toBe(404)
    expect((await t.call('PATCH', `/workspaces/${other.workspace.id}`, { json: { name: 'pwned' } })).status).toBe(404)
  })
})
