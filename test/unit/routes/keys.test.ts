import { beforeEach, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../../src/core/crypto'
import { API_KEYS } from '../../../src/repositories/api-keys'
import { createTestGateway, readJson, type TestGateway } from '../../helpers/gateway'

const KEY_FIELDS = [
  'hash',
  'name',
  'label',
  'kind',
  'disabled',
  'workspace_id',
  'creator_user_id',
  'external_user',
  'limit',
  'limit_remaining',
  'limit_reset',
  'include_byok_in_limit',
  'usage',
  'usage_daily',
  'usage_weekly',
  'usage_monthly',
  'byok_usage',
  'byok_usage_daily',
  'byok_usage_weekly',
  'byok_usage_monthly',
  'expires_at',
  'cache',
  'created_at',
  'updated_at',
].sort()

describe('/keys', () => {
  let t: TestGateway
  beforeEach(async () => {
    t = await createTestGateway()
  })

  describe('POST /keys', () => {
    it('creates a regular key, returns the raw key once (201) and stores only its hash', async () => {
      const response = await t.call('POST', '/keys', { json: { name: 'Production' } })
      expect(response.status).toBe(201)
      const body = await readJson(response)
      expect(Object.keys(body).sort()).toEqual(['data', 'key'])
      expect(body.key).toMatch(/^mg-v1-[0-9a-f]{64}$/)
      expect(Object.keys(body.data).sort()).toEqual(KEY_FIELDS)
      expect(body.data).toMatchObject({
        hash: await sha256Hex(body.key),
        name: 'Production',
        kind: 'regular',
        disabled: false,
        workspace_id: t.defaultWorkspaceId,
        updated_at: null,
      })
      expect(body.data.label).toBe(`mg-v1-${body.key.slice(6, 9)}...${body.key.slice(-4)}`)

      // The store holds no trace of the raw key.
      const stored = await t.gateway.storage.get(API_KEYS, body.data.hash)
      expect(JSON.stringify(stored)).not.toContain(body.key.slice(6))

      // The new key authenticates; as a regular key it cannot manage keys.
      const denied = await t.call('GET', '/keys', { key: body.key })
      expect(denied.status).toBe(403)
    })

    it('marks the answer carrying the raw key Cache-Control: no-store, and only that one', async () => {
      const created = await t.call('POST', '/keys', { json: { name: 'Cached?' } })
      expect(created.status).toBe(201)
      expect(created.headers.get('cache-control')).toBe('no-store')
      const { data } = await readJson(created)
      // Reads carry no raw key and need no such header.
      expect((await t.call('GET', `/keys/${data.hash}`)).headers.get('cache-control')).toBeNull()
    })

    it("mints a key for a named user (creator_user_id), the account owner's by default", async () => {
      const owner = (await t.gateway.admin.ensureDefaultAccount()).ownerUserId
      const byDefault = await readJson(await t.call('POST', '/keys', { json: { name: 'Mine' } }))
      expect(byDefault.data.creator_user_id).toBe(owner)
      const forAlice = await readJson(await t.call('POST', '/keys', { json: { name: "Alice's", creator_user_id: 'alice@example.com' } }))
      expect(forAlice.data.creator_user_id).toBe('alice@example.com')
      expect((await readJson(await t.call('GET', `/keys/${forAlice.data.hash}`))).data.creator_user_id).toBe('alice@example.com')
      const { record } = await t.gateway.admin.createKey({ creatorUserId: 'bob' })
      expect(record.creatorUserId).toBe('bob')
      await expect(t.gateway.admin.createKey({ creatorUserId: '' })).rejects.toThrow('input.creatorUserId: must not be empty')
      for (const [creator_user_id, message] of [
        ['', 'body.creator_user_id: must not be empty'],
        ['u'.repeat(257), 'body.creator_user_id: must be at most 256 characters'],
        [7, 'body.creator_user_id: expected string'],
      ] as const) {
        const response = await t.call('POST', '/keys', { json: { name: 'x', creator_user_id } })
        expect(await readJson(response)).toEqual({ error: { code: 400, message } })
      }
    })

    it('creates a management key that can manage', async () => {
      const body = await readJson(await t.call('POST', '/keys', { json: { name: 'Ops', kind: 'management' } }))
      expect(body.data.kind).toBe('management')
      expect((await t.call('GET', '/keys', { key: body.key })).status).toBe(200)
    })

    it('places the key in a given workspace, by id or slug', async () => {
      const workspace = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
      for (const workspace_id of [workspace.id, 'lab']) {
        const body = await readJson(await t.call('POST', '/keys', { json: { name: 'Lab key', workspace_id } }))
        expect(body.data.workspace_id).toBe(workspace.id)
      }
    })

    it("answers 404 for another account's workspace and 400 once the default workspace is gone", async () => {
      const other = await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
      const foreign = await t.call('POST', '/keys', { json: { name: 'x', workspace_id: other.workspace.id } })
      expect(foreign.status).toBe(404)
      expect(await readJson(foreign)).toEqual({ error: { code: 404, message: 'Workspace not found' } })

      await t.call('DELETE', `/keys/${t.regularKeyHash}`)
      await t.gateway.admin.deleteWorkspace(undefined, 'default')
      const orphan = await t.call('POST', '/keys', { json: { name: 'x' } })
      expect(orphan.status).toBe(400)
      expect(await readJson(orphan)).toEqual({
        error: { code: 400, message: 'The default workspace was deleted; pass workspace_id' },
      })
    })

    it('validates the body and names the field', async () => {
      const cases: Array<[unknown, string]> = [
        [{}, 'body.name: is required'],
        [{ name: '' }, 'body.name: must not be empty'],
        [{ name: '   ' }, 'body.name: must not be empty'],
        [{ name: 'x'.repeat(256) }, 'body.name: must be at most 255 characters'],
        [{ name: 7 }, 'body.name: expected string'],
        [{ name: 'ok', kind: 'root' }, 'body.kind: must be "regular" or "management"'],
        [[], 'body: must be a JSON object'],
        [null, 'body: must be a JSON object'],
        ['name', 'body: must be a JSON object'],
      ]
      for (const [json, message] of cases) {
        const response = await t.call('POST', '/keys', { json })
        expect(response.status, message).toBe(400)
        expect(await readJson(response)).toEqual({ error: { code: 400, message } })
      }
      // Exactly at the bound is fine.
      expect((await t.call('POST', '/keys', { json: { name: 'x'.repeat(255) } })).status).toBe(201)
    })

    it('validates limits and expiry, and refuses fields it does not act on by name', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ limit: -1 }, 'body.limit: must be at least 0'],
        [{ limit: 1_000_001 }, 'body.limit: must be at most 1000000'],
        [{ limit: '5' }, 'body.limit: '],
        [{ limit_reset: 'yearly' }, 'body.limit_reset: must be "daily", "weekly", "monthly" or null'],
        [{ include_byok_in_limit: 'yes' }, 'body.include_byok_in_limit: '],
        [{ expires_at: '2099-01-01T00:00Z' }, 'body.expires_at: must be an ISO 8601 date-time with seconds and a time zone'],
        [{ expires_at: '2099-01-01T00:00:00' }, 'body.expires_at: must be an ISO 8601 date-time with seconds and a time zone'],
        [{ expires_at: '2099-02-30T00:00:00Z' }, 'body.expires_at: must be a valid date-time'],
        [{ expires_at: '2001-01-01T00:00:00Z' }, 'body.expires_at: must be in the future'],
        [{ external: { user: 'partner-user' } }, 'body.external: unknown field'],
      ]
      for (const [fields, message] of cases) {
        const response = await t.call('POST', '/keys', { json: { name: 'Bad', ...fields } })
        expect(response.status, JSON.stringify(fields)).toBe(400)
        expect((await readJson(response)).error.message).toContain(message)
      }
      const created = await readJson(await t.call('POST', '/keys', { json: { name: 'Ok', limit: 2.5, limit_reset: 'weekly', expires_at: '2099-01-01T01:00:00.5+01:00', creator_user_id: null } }))
      expect(created.data).toMatchObject({ limit: 2.5, limit_reset: 'weekly', expires_at: '2099-01-01T00:00:00.500Z' })
      const patched = await t.call('PATCH', `/keys/${created.data.hash}`, { json: { expires_at: '2100-01-01T00:00:00Z' } })
      expect(patched.status).toBe(400)
      expect((await readJson(patched)).error.message).toBe('body.expires_at: unknown field')
    })

    it('answers 401 and 403 before reading the body', async () => {
      expect((await t.call('POST', '/keys', { key: null, json: { name: 'x' } })).status).toBe(401)
      const response = await t.call('POST', '/keys', { key: t.regularKey, json: { name: 'x' } })
      expect(response.status).toBe(403)
      expect(await readJson(response)).toEqual({ error: { code: 403, message: 'Only management keys can perform this operation' } })
    })

    it('tolerates a trailing slash, as client examples post to /keys/', async () => {
      expect((await t.call('POST', '/keys/', { json: { name: 'slash' } })).status).toBe(201)
    })
  })

  describe('GET /keys', () => {
    it('lists keys of the account in creation order with offset/limit and total_count', async () => {
      for (let index = 0; index < 5; index++) await t.call('POST', '/keys', { json: { name: `key ${index}` } })
      const all = await readJson(await t.call('GET', '/keys'))
      expect(all.total_count).toBe(7)
      expect(all.data.map((key: { name: string }) => key.name)).toEqual([
        'test management', 'test regular', 'key 0', 'key 1', 'key 2', 'key 3', 'key 4',
      ])
      for (const key of all.data) expect(Object.keys(key).sort()).toEqual(KEY_FIELDS)

      const page = await readJson(await t.call('GET', '/keys?offset=2&limit=2'))
      expect(page.total_count).toBe(7)
      expect(page.data.map((key: { name: string }) => key.name)).toEqual(['key 0', 'key 1'])
      const past = await readJson(await t.call('GET', '/keys?offset=50'))
      expect(past).toEqual({ data: [], total_count: 7 })
    })

    it('hides disabled keys unless include_disabled=true', async () => {
      const created = await readJson(await t.call('POST', '/keys', { json: { name: 'gone' } }))
      await t.call('PATCH', `/keys/${created.data.hash}`, { json: { disabled: true } })
      const visible = await readJson(await t.call('GET', '/keys'))
      expect(visible.data.map((key: { hash: string }) => key.hash)).not.toContain(created.data.hash)
      const everything = await readJson(await t.call('GET', '/keys?include_disabled=true'))
      expect(everything.data.map((key: { hash: string }) => key.hash)).toContain(created.data.hash)
    })

    it("never lists another account's keys", async () => {
      await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
      const foreign = await t.gateway.admin.createKey({ accountId: 'other', name: 'foreign' })
      const body = await readJson(await t.call('GET', '/keys?include_disabled=true'))
      expect(body.data.map((key: { hash: string }) => key.hash)).not.toContain(foreign.record.hash)
    })

    it('validates paging parameters at and past their bounds', async () => {
      expect((await t.call('GET', '/keys?limit=1')).status).toBe(200)
      expect((await t.call('GET', '/keys?limit=100')).status).toBe(200)
      expect((await t.call('GET', '/keys?offset=0')).status).toBe(200)
      const cases: Array<[string, string]> = [
        ['limit=0', 'query.limit: must be at least 1'],
        ['limit=101', 'query.limit: must be at most 100'],
        ['offset=-1', 'query.offset: must be a whole number'],
        ['offset=1.5', 'query.offset: must be a whole number'],
        ['limit=abc', 'query.limit: must be a whole number'],
        ['include_disabled=yes', 'query.include_disabled: must be true or false'],
      ]
      for (const [query, message] of cases) {
        const response = await t.call('GET', `/keys?${query}`)
        expect(response.status, query).toBe(400)
        expect(await readJson(response)).toEqual({ error: { code: 400, message } })
      }
    })
  })

  describe('GET, PATCH and DELETE /keys/{hash}', () => {
    it('reads one key by hash', async () => {
      const created = await readJson(await t.call('POST', '/keys', { json: { name: 'one' } }))
      const body = await readJson(await t.call('GET', `/keys/${created.data.hash}`))
      expect(body).toEqual({ data: created.data })
    })

    it('renames and disables a key; omitted fields stay unchanged', async () => {
      const created = await readJson(await t.call('POST', '/keys', { json: { name: 'before' } }))
      const renamed = await readJson(await t.call('PATCH', `/keys/${created.data.hash}`, { json: { name: 'after' } }))
      expect(renamed.data).toMatchObject({ name: 'after', disabled: false })
      expect(renamed.data.updated_at).not.toBeNull()
      const disabled = await readJson(await t.call('PATCH', `/keys/${created.data.hash}`, { json: { disabled: true } }))
      expect(disabled.data).toMatchObject({ name: 'after', disabled: true })
      const use = await t.call('GET', '/workspaces/default', { key: created.key })
      expect(use.status).toBe(401)
      const enabled = await readJson(await t.call('PATCH', `/keys/${created.data.hash}`, { json: { disabled: false } }))
      expect(enabled.data.disabled).toBe(false)
      expect((await t.call('GET', '/keys', { key: created.key })).status).toBe(403)
    })

    it('validates the update body', async () => {
      const created = await readJson(await t.call('POST', '/keys', { json: { name: 'v' } }))
      const response = await t.call('PATCH', `/keys/${created.data.hash}`, { json: { disabled: 'yes' } })
      expect(response.status).toBe(400)
      expect(await readJson(response)).toEqual({
        error: { code: 400, message: 'body.disabled: expected boolean' },
      })
    })

    it('deletes a key so it no longer authenticates', async () => {
      const created = await readJson(await t.call('POST', '/keys', { json: { name: 'doomed', kind: 'management' } }))
      const response = await t.call('DELETE', `/keys/${created.data.hash}`)
      expect(response.status).toBe(200)
      expect(await readJson(response)).toEqual({ deleted: true })
      expect((await t.call('GET', '/keys', { key: created.key })).status).toBe(401)
      expect((await t.call('GET', `/keys/${created.data.hash}`)).status).toBe(404)
      expect((await t.call('DELETE', `/keys/${created.data.hash}`)).status).toBe(404)
    })

    it('refuses to disable or delete the last enabled management key', async () => {
      const hash = await sha256Hex(t.managementKey)
      for (const [method, json] of [['PATCH', { disabled: true }], ['DELETE', undefined]] as const) {
        const response = await t.call(method, `/keys/${hash}`, { json })
        expect(response.status).toBe(409)
        expect(await readJson(response)).toEqual({
          error: { code: 409, message: 'This is the last enabled management key of the account; create another one first' },
        })
      }
      // With a second management key, the first can go.
      await t.call('POST', '/keys', { json: { name: 'backup', kind: 'management' } })
      expect((await t.call('DELETE', `/keys/${hash}`)).status).toBe(200)
    })

    it("answers 404 for another account's key and 400 for a malformed hash", async () => {
      await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
      const foreign = await t.gateway.admin.createKey({ accountId: 'other' })
      for (const method of ['GET', 'PATCH', 'DELETE']) {
        const response = await t.call(method, `/keys/${foreign.record.hash}`, method === 'PATCH' ? { json: { name: 'x' } } : {})
        expect(response.status, method).toBe(404)
        expect(await readJson(response)).toEqual({ error: { code: 404, message: 'API key not found' } })
      }
      const malformed = await t.call('GET', '/keys/not-a-hash')
      expect(malformed.status).toBe(400)
      expect(await readJson(malformed)).toEqual({
        error: { code: 400, message: 'params.hash: must be the key hash: 64 lowercase hex characters' },
      })
    })

    it('answers 405 with Allow on /keys/{hash} and /keys', async () => {
      const put = await t.call('PUT', `/keys/${'a'.repeat(64)}`)
      expect(put.status).toBe(405)
      expect(put.headers.get('allow')).toBe('GET, PATCH, DELETE')
      const del = await t.call('DELETE', '/keys')
      expect(del.status).toBe(405)
      expect(del.headers.get('allow')).toBe('GET, POST')
    })
  })
})
