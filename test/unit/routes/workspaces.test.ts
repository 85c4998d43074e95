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
    const response = await t.call('DELETE', '/workspaces/default')
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('GET')
    expect(await readJson(response)).toEqual({
      error: { code: 405, message: 'Method DELETE is not allowed here; use GET' },
    })
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
