import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { sha256Hex } from '../../../src/core/crypto'
import { createGateway } from '../../../src/gateway/gateway'
import { silentLogger } from '../../../src/core/logger'
import { createSecretBox, generateMasterKey } from '../../../src/core/secrets'
import { BYOK_CREDENTIALS, type ByokRecord } from '../../../src/repositories/byok-credentials'
import { revealByokKey } from '../../../src/services/byok'
import type { StorageDriver } from '../../../src/storage/contract'
import { memoryStorage } from '../../../src/storage/memory'
import { createRecordingLogger } from '../../helpers/logger'
import { BASE, TEST_ENCRYPTION_KEY, createTestGateway, readJson, type TestGateway } from '../../helpers/gateway'

type Credential = Record<string, unknown> & { id: string; label: string; sort_order: number; provider: string }

const FIELDS = [
  'id', 'name', 'provider', 'label', 'workspace_id', 'created_at', 'sort_order', 'disabled', 'is_fallback',
  'is_byok_only', 'is_required', 'allowed_api_key_hashes', 'allowed_models', 'allowed_user_ids', 'declared_zdr',
].sort()
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const NO_KEY_MESSAGE =
  'BYOK is disabled on this gateway: no encryption key is configured. The operator enables it by setting MODELGATE_ENCRYPTION_KEYS (or the encryptionKeys option)'
const SLUG_RULE = 'must be a lowercase provider slug (letters, digits, hyphens, optionally one "/" segment)'
const AZURE_KEY_MESSAGE =
  'body.key: an Azure key must be a JSON array of {api_key, resource_name, resource_type} or {model_slug, endpoint_url, api_key, model_id}'

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
/** A fresh random key, so one test's key can never be found by accident in another's output. */
const randomSecret = (length: number, prefix = '') =>
  prefix + Array.from(crypto.getRandomValues(new Uint8Array(length)), (byte) => ALPHANUMERIC[byte % ALPHANUMERIC.length]).join('')
const openaiKey = () => randomSecret(48, 'sk-proj-')
const azureKey = (apiKey = randomSecret(32)) => JSON.stringify([{ api_key: apiKey, resource_name: 'my-resource', resource_type: 'openai' }])

/** Every 8-character window of the part of `secret` that a label may never show (after `shownPrefix`, before the last four). */
const middleSlices = (secret: string, shownPrefix: number) => {
  const middle = secret.slice(shownPrefix, -4)
  return Array.from({ length: Math.max(0, middle.length - 7) }, (_, index) => middle.slice(index, index + 8))
}

/** Asserts that `text` holds neither `secret` nor any 8-character slice of its middle. */
const expectNoTrace = (text: string, secret: string, shownPrefix = 0) => {
  expect(text.includes(secret), 'the whole secret leaked').toBe(false)
  expect(middleSlices(secret, shownPrefix).filter((slice) => text.includes(slice))).toEqual([])
}

/** A memory store that remembers every collection written to and every value ever written (including overwritten ones). */
const tracedStorage = () => {
  const inner = memoryStorage()
  const collections = new Set<string>()
  const writes: string[] = []
  const storage = new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        if (property === 'create' || property === 'update') collections.add(args[0] as string)
        if (property === 'create' || property === 'update' || property === 'increment') writes.push(JSON.stringify(args))
        return (value as (...inner: unknown[]) => unknown).apply(target, args)
      }
    },
  }) as StorageDriver
  /** Every record of every collection, plus the write history, as one string. */
  const dump = async () => {
    const records = []
    for (const collection of collections) records.push({ collection, ...(await inner.list(collection)) })
    return JSON.stringify({ records, writes })
  }
  return { storage, collections, dump }
}

const storedRecord = async (t: TestGateway, id: string) => {
  const stored = await t.gateway.storage.get<ByokRecord>(BYOK_CREDENTIALS, id)
  if (!stored) throw new Error(`no stored credential ${id}`)
  return stored
}

/** Creates a credential and returns its wire form, asserting 200. */
const create = async (t: TestGateway, json: Record<string, unknown>, key?: string): Promise<Credential> => {
  const response = await t.call('POST', '/byok', { json: { key: openaiKey(), provider: 'openai', ...json }, key })
  const body = await readJson(response)
  expect(response.status, JSON.stringify(body)).toBe(200)
  return body.data
}

const expectError = async (response: Response, code: number, message: string) => {
  expect({ status: response.status, body: await readJson(response) }).toEqual({ status: code, body: { error: { code, message } } })
}

/** Pages through GET /byok as a client pager does: next offset = offset + data.length while the page is full. */
const pageThrough = async (t: TestGateway, limit: number, filter = '') => {
  const ids: string[] = []
  const totals = new Set<number>()
  let requests = 0
  for (let offset = 0; ; ) {
    expect(++requests, 'the pager never stops').toBeLessThan(200)
    const response = await t.call('GET', `/byok?offset=${offset}&limit=${limit}${filter}`)
    expect(response.status).toBe(200)
    const page = await readJson(response)
    expect(page.data.length).toBeLessThanOrEqual(limit)
    totals.add(page.total_count)
    ids.push(...page.data.map((credential: Credential) => credential.id))
    if (page.data.length < limit) break
    offset += page.data.length
  }
  return { ids, totals: [...totals], requests }
}

const hashesOfNewKeys = async (t: TestGateway, count: number) => {
  const hashes: string[] = []
  for (let index = 0; index < count; index++) hashes.push((await t.gateway.admin.createKey({ kind: 'regular', name: `k${index}` })).record.hash)
  return hashes
}

describe('/byok', () => {
  let t: TestGateway
  beforeEach(async () => {
    t = await createTestGateway()
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  describe('POST /byok', () => {
    it('creates a credential (200) with the spec fields and their defaults, never returning the key', async () => {
      const key = openaiKey()
      const response = await t.call('POST', '/byok', { json: { key, provider: 'openai' } })
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toBe('application/json')
      const body = await readJson(response)
      expect(Object.keys(body)).toEqual(['data'])
      expect(Object.keys(body.data).sort()).toEqual(FIELDS)
      expect(body.data).toEqual({
        id: expect.stringMatching(UUID),
        name: 'OpenAI key',
        provider: 'openai',
        label: `sk-proj-...${key.slice(-4)}`,
        workspace_id: t.defaultWorkspaceId,
        created_at: expect.stringMatching(ISO),
        sort_order: 0,
        disabled: false,
        is_fallback: false,
        is_byok_only: false,
        is_required: false,
        allowed_api_key_hashes: null,
        allowed_models: null,
        allowed_user_ids: null,
        declared_zdr: null,
      })
    })

    it('stores every optional field as given', async () => {
      const hash = await sha256Hex(t.regularKey)
      const data = await create(t, {
        name: 'Team OpenAI',
        disabled: true,
        is_fallback: true,
        is_required: true,
        allowed_api_key_hashes: [hash],
        allowed_models: ['openai/gpt-4.1', 'openai/gpt-4.1-mini:free'],
        allowed_user_ids: ['user-1', 'user-2'],
        declared_zdr: true,
      })
      expect(data).toMatchObject({
        name: 'Team OpenAI',
        disabled: true,
        is_fallback: true,
        is_byok_only: false,
        is_required: true,
        allowed_api_key_hashes: [hash],
        allowed_models: ['openai/gpt-4.1', 'openai/gpt-4.1-mini:free'],
        allowed_user_ids: ['user-1', 'user-2'],
        declared_zdr: true,
      })
      expect(await readJson(await t.call('GET', `/byok/${data.id}`))).toEqual({ data })
    })

    it('names a credential after its provider by default, endpoint variants included', async () => {
      const cases: Array<[string, string, string]> = [
        ['openai', openaiKey(), 'OpenAI key'],
        ['anthropic', randomSecret(90, 'sk-ant-api03-'), 'Anthropic key'],
        ['deepinfra/turbo', randomSecret(40), 'DeepInfra key'],
        ['azure', azureKey(), 'Azure OpenAI key'],
      ]
      for (const [provider, key, name] of cases) {
        expect(await create(t, { provider, key }), provider).toMatchObject({ provider, name })
      }
    })

    it('masks the key in label: recognisable prefix and last four, **** for short keys', async () => {
      const anthropic = randomSecret(90, 'sk-ant-api03-')
      const groq = randomSecret(52, 'gsk_')
      const openai = openaiKey()
      const plain = randomSecret(40)
      const cases: Array<[string, string, string]> = [
        [openai, `sk-proj-...${openai.slice(-4)}`, 'sk-proj-'],
        [anthropic, `sk-ant-...${anthropic.slice(-4)}`, 'sk-ant-'],
        [groq, `gsk_...${groq.slice(-4)}`, 'gsk_'],
        [plain, `...${plain.slice(-4)}`, ''],
        // The prefix shows only with at least 16 characters after it; the last four only from 16 characters on.
        ['sk-abcdefghijklmnop', 'sk-...mnop', 'sk-'],
        ['sk-abcdefghijklmno', '...lmno', ''],
        ['abcdefghijklmnop', '...mnop', ''],
        ['abcdefghijklmno', '****', ''],
        ['abcdefghijkl', '****', ''],
        ['abcdefghijk', '****', ''],
        ['a', '****', ''],
      ]
      for (const [key, label, shownPrefix] of cases) {
        const data = await create(t, { key })
        expect(data.label, key).toBe(label)
        expectNoTrace(data.label, key, shownPrefix.length)
      }
    })

    it('takes an Azure key only as JSON (docs/decisions.md, BYOK) and masks its api_key', async () => {
      const apiKey = randomSecret(32)
      const resource = await create(t, { provider: 'azure', key: azureKey(apiKey) })
      expect(resource.label).toBe(`...${apiKey.slice(-4)}`)
      const endpoint_url = 'https://my-resource.openai.azure.com/openai/deployments/gpt4o'
      const legacy = JSON.stringify([{ model_slug: 'openai/gpt-4o', endpoint_url, api_key: apiKey, model_id: 'gpt-4o' }])
      expect((await create(t, { provider: 'azure', key: legacy })).label).toBe(`...${apiKey.slice(-4)}`)

      const invalid = [
        apiKey,
        '{"api_key": "x"',
        JSON.stringify({ api_key: apiKey, resource_name: 'my-resource', resource_type: 'openai' }),
        '[]',
        JSON.stringify([{ api_key: apiKey, resource_name: 'my-resource', resource_type: 'cognitive' }]),
        JSON.stringify([{ api_key: '', resource_name: 'my-resource', resource_type: 'openai' }]),
      ]
      for (const key of invalid) await expectError(await t.call('POST', '/byok', { json: { key, provider: 'azure' } }), 400, AZURE_KEY_MESSAGE)
    })

    it('numbers sort_order per workspace and provider: 0, 1, 2…', async () => {
      const lab = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
      const orders = []
      for (const [provider, workspace_id] of [
        ['openai', undefined], ['openai', undefined], ['anthropic', undefined], ['openai', lab.id], ['openai', undefined], ['anthropic', undefined],
      ] as const) {
        orders.push((await create(t, { provider, workspace_id })).sort_order)
      }
      expect(orders).toEqual([0, 1, 0, 0, 2, 1])
    })

    it('validates the body and names the field', async () => {
      const key = openaiKey()
      await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
      const foreignHash = (await t.gateway.admin.createKey({ accountId: 'other' })).record.hash
      const ownHash = await sha256Hex(t.managementKey)
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ provider: 'openai' }, 'body.key: is required'],
        [{ key: '', provider: 'openai' }, 'body.key: must not be empty'],
        [{ key: 'x'.repeat(16_385), provider: 'openai' }, 'body.key: must be at most 16384 characters'],
        [{ key: ['x'], provider: 'openai' }, 'body.key: must be a string'],
        [{ key }, 'body.provider: is required'],
        [{ key, provider: 'acme' }, 'body.provider: must be a provider this gateway routes to (GET /providers lists them)'],
        [{ key, provider: 'acme/turbo' }, 'body.provider: must be a provider this gateway routes to (GET /providers lists them)'],
        [{ key, provider: 'OpenAI' }, `body.provider: ${SLUG_RULE}`],
        [{ key, provider: 'deepinfra/turbo/x' }, `body.provider: ${SLUG_RULE}`],
        [{ key, provider: 'openai', name: 'x'.repeat(256) }, 'body.name: must be at most 255 characters'],
        [{ key, provider: 'openai', name: 7 }, 'body.name: expected string'],
        [{ key, provider: 'openai', workspace_id: 'default' }, 'body.workspace_id: must be a UUID'],
        [{ key, provider: 'openai', disabled: 'yes' }, 'body.disabled: expected boolean'],
        [{ key, provider: 'openai', is_required: 1 }, 'body.is_required: expected boolean'],
        [{ key, provider: 'openai', declared_zdr: 'no' }, 'body.declared_zdr: expected boolean'],
        [{ key, provider: 'openai', is_fallback: true, is_byok_only: true }, 'body: is_fallback and is_byok_only cannot both be true'],
        [{ key, provider: 'openai', allowed_api_key_hashes: [] }, 'body.allowed_api_key_hashes: must have at least 1 item'],
        [{ key, provider: 'openai', allowed_api_key_hashes: Array(101).fill(ownHash) }, 'body.allowed_api_key_hashes: at most 100 items'],
        [{ key, provider: 'openai', allowed_api_key_hashes: [ownHash.toUpperCase()] }, 'body.allowed_api_key_hashes.0: must match ^[a-f0-9]{64}$'],
        [{ key, provider: 'openai', allowed_api_key_hashes: [ownHash.slice(1)] }, 'body.allowed_api_key_hashes.0: must match ^[a-f0-9]{64}$'],
        [{ key, provider: 'openai', allowed_api_key_hashes: [ownHash, foreignHash] }, 'body.allowed_api_key_hashes.1: not the hash of an API key of this account'],
        [{ key, provider: 'openai', allowed_api_key_hashes: ['0'.repeat(64)] }, 'body.allowed_api_key_hashes.0: not the hash of an API key of this account'],
        [{ key, provider: 'openai', allowed_models: Array(101).fill('openai/gpt-4.1') }, 'body.allowed_models: at most 100 items'],
        [{ key, provider: 'openai', allowed_models: ['gpt-4.1'] }, 'body.allowed_models.0: must be a model slug <author>/<name>'],
        [{ key, provider: 'openai', allowed_user_ids: Array(101).fill('user') }, 'body.allowed_user_ids: at most 100 items'],
        [{ key, provider: 'openai', allowed_user_ids: [''] }, 'body.allowed_user_ids.0: must not be empty'],
      ]
      for (const [json, message] of cases) await expectError(await t.call('POST', '/byok', { json }), 400, message)
      for (const [json, message] of [
        [[], 'body: must be a JSON object'],
        [null, 'body: must be a JSON object'],
        ['key', 'body: must be a JSON object'],
      ] as const) {
        await expectError(await t.call('POST', '/byok', { json }), 400, message)
      }
      await expectError(
        await t.call('POST', '/byok', { body: '{"provider": "openai",', headers: { 'content-type': 'application/json' } }),
        400,
        'Malformed JSON in request body: unexpected end of input, expected a double-quoted property name',
      )
      // Nothing was stored by any of the refused requests.
      expect((await t.gateway.storage.list(BYOK_CREDENTIALS)).totalCount).toBe(0)
    })

    it('accepts every limit exactly at its bound', async () => {
      const hashes = [await sha256Hex(t.managementKey), await sha256Hex(t.regularKey), ...(await hashesOfNewKeys(t, 98))]
      const models = Array.from({ length: 100 }, (_, index) => `openai/model-${index}`)
      const users = Array.from({ length: 100 }, (_, index) => `user-${index}`)
      const data = await create(t, {
        key: 'x'.repeat(16_384),
        name: 'n'.repeat(255),
        allowed_api_key_hashes: hashes,
        allowed_models: models,
        allowed_user_ids: users,
      })
      expect(data).toMatchObject({ name: 'n'.repeat(255), allowed_api_key_hashes: hashes, allowed_models: models, allowed_user_ids: users })
      expect((await create(t, { key: 'k', allowed_api_key_hashes: [hashes[0]] })).allowed_api_key_hashes).toEqual([hashes[0]])
    })

    it('places the credential in a workspace of the account; 404 for a foreign or unknown one', async () => {
      const lab = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
      expect((await create(t, { workspace_id: lab.id })).workspace_id).toBe(lab.id)

      const other = await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
      for (const workspace_id of [other.workspace.id, crypto.randomUUID()]) {
        await expectError(await t.call('POST', '/byok', { json: { key: openaiKey(), provider: 'openai', workspace_id } }), 404, 'Workspace not found')
      }
    })

    it('answers 400 once the default workspace is deleted, unless workspace_id is passed', async () => {
      const lab = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
      await t.call('DELETE', `/keys/${t.regularKeyHash}`)
      await t.gateway.admin.deleteWorkspace(undefined, 'default')
      await expectError(
        await t.call('POST', '/byok', { json: { key: openaiKey(), provider: 'openai' } }),
        400,
        'The default workspace was deleted; pass workspace_id',
      )
      expect((await create(t, { workspace_id: lab.id })).workspace_id).toBe(lab.id)
    })
  })

  describe('GET /byok', () => {
    it('lists the default workspace in sort_order, then created_at order, with total_count', async () => {
      vi.useFakeTimers({ toFake: ['Date'] })
      const created: Credential[] = []
      const providers = ['openai', 'anthropic', 'groq', 'mistral', 'openai', 'anthropic', 'groq', 'mistral', 'openai']
      for (const [second, provider] of providers.entries()) {
        vi.setSystemTime(new Date(Date.UTC(2025, 0, 1, 0, 0, second)))
        created.push(await create(t, { provider }))
      }
      expect(created.map((credential) => credential.sort_order)).toEqual([0, 0, 0, 0, 1, 1, 1, 1, 2])
      expect(created[3]!.created_at).toBe('2025-01-01T00:00:03.000Z')

      const response = await t.call('GET', '/byok')
      expect(response.status).toBe(200)
      const body = await readJson(response)
      expect(Object.keys(body).sort()).toEqual(['data', 'total_count'])
      expect(body.total_count).toBe(9)
      // Sort order first (0s before 1s before 2), creation time among equals.
      expect(body.data).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8].map((index) => created[index]))
      for (const credential of body.data) expect(Object.keys(credential).sort()).toEqual(FIELDS)
    })

    it('pages with offset and limit: default 50, bounds 1 and 100', async () => {
      const ids = []
      for (let index = 0; index < 51; index++) ids.push((await create(t, { key: `key-${index}` })).id)
      const first = await readJson(await t.call('GET', '/byok'))
      expect(first.data.map((credential: Credential) => credential.id)).toEqual(ids.slice(0, 50))
      expect(first.total_count).toBe(51)

      const cases: Array<[string, string[]]> = [
        ['limit=1', ids.slice(0, 1)],
        ['limit=100', ids],
        ['offset=0&limit=2', ids.slice(0, 2)],
        ['offset=50', ids.slice(50)],
        ['offset=49&limit=100', ids.slice(49)],
        ['offset=51', []],
        ['offset=1000', []],
      ]
      for (const [query, expected] of cases) {
        const page = await readJson(await t.call('GET', `/byok?${query}`))
        expect({ query, ids: page.data.map((credential: Credential) => credential.id), total: page.total_count }).toEqual({
          query,
          ids: expected,
          total: 51,
        })
      }
    })

    it('lets a client pager see every credential exactly once with a constant total_count', async () => {
      const ids = []
      const providers = ['openai', 'anthropic', 'openai', 'groq', 'openai', 'anthropic', 'openai']
      for (const provider of providers) ids.push((await create(t, { provider })).id)
      // Other workspaces and accounts must not leak into the pages.
      const lab = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
      await create(t, { workspace_id: lab.id })
      await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
      await create(t, {}, (await t.gateway.admin.createKey({ accountId: 'other', kind: 'management' })).key)

      for (const limit of [1, 2, 3, 6, 7, 8, 100]) {
        const result = await pageThrough(t, limit)
        expect(result.totals, `limit ${limit}`).toEqual([7])
        expect(result.ids.length, `limit ${limit}`).toBe(7)
        expect(new Set(result.ids), `limit ${limit}`).toEqual(new Set(ids))
        expect(result.requests, `limit ${limit}`).toBe(Math.floor(7 / limit) + 1)
      }
      const openai = await pageThrough(t, 2, '&provider=openai')
      expect(openai.totals).toEqual([4])
      expect(new Set(openai.ids)).toEqual(new Set([ids[0], ids[2], ids[4], ids[6]]))
    })

    it('filters by workspace_id and by exact provider slug', async () => {
      const lab = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
      const openai = await create(t, { provider: 'openai' })
      const anthropic = await create(t, { provider: 'anthropic' })
      const turbo = await create(t, { provider: 'deepinfra/turbo' })
      const deepinfra = await create(t, { provider: 'deepinfra' })
      const labOpenai = await create(t, { provider: 'openai', workspace_id: lab.id })
      const labGroq = await create(t, { provider: 'groq', workspace_id: lab.id })

      const cases: Array<[string, Credential[]]> = [
        ['', [openai, anthropic, turbo, deepinfra]],
        [`workspace_id=${t.defaultWorkspaceId}`, [openai, anthropic, turbo, deepinfra]],
        [`workspace_id=${lab.id}`, [labOpenai, labGroq]],
        ['provider=openai', [openai]],
        ['provider=deepinfra', [deepinfra]],
        ['provider=deepinfra/turbo', [turbo]],
        ['provider=groq', []],
        [`provider=groq&workspace_id=${lab.id}`, [labGroq]],
        [`provider=anthropic&workspace_id=${lab.id}`, []],
      ]
      for (const [query, expected] of cases) {
        const body = await readJson(await t.call('GET', `/byok?${query}`))
        const sortById = (credentials: Credential[]) => credentials.map((credential) => credential.id).sort()
        expect({ query, ids: sortById(body.data), total: body.total_count }).toEqual({ query, ids: sortById(expected), total: expected.length })
      }
    })

    it('validates the query at and past its bounds', async () => {
      for (const query of ['limit=1', 'limit=100', 'offset=0', 'provider=deepinfra/turbo']) {
        expect((await t.call('GET', `/byok?${query}`)).status, query).toBe(200)
      }
      const cases: Array<[string, string]> = [
        ['limit=0', 'query.limit: must be at least 1'],
        ['limit=101', 'query.limit: must be at most 100'],
        ['limit=abc', 'query.limit: must be a whole number'],
        ['limit=', 'query.limit: must be a whole number'],
        ['offset=-1', 'query.offset: must be a whole number'],
        ['offset=1.5', 'query.offset: must be a whole number'],
        ['workspace_id=default', 'query.workspace_id: must be a UUID'],
        ['provider=acme', 'query.provider: must be a provider this gateway routes to (GET /providers lists them)'],
        ['provider=OpenAI', `query.provider: ${SLUG_RULE}`],
      ]
      for (const [query, message] of cases) await expectError(await t.call('GET', `/byok?${query}`), 400, message)
    })

    it("answers 404 for another account's workspace and 400 once the default workspace is deleted", async () => {
      const other = await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
      for (const workspace_id of [other.workspace.id, crypto.randomUUID()]) {
        await expectError(await t.call('GET', `/byok?workspace_id=${workspace_id}`), 404, 'Workspace not found')
      }
      const lab = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
      await t.call('DELETE', `/keys/${t.regularKeyHash}`)
      await t.gateway.admin.deleteWorkspace(undefined, 'default')
      await expectError(await t.call('GET', '/byok'), 400, 'The default workspace was deleted; pass workspace_id')
      expect(await readJson(await t.call('GET', `/byok?workspace_id=${lab.id}`))).toEqual({ data: [], total_count: 0 })
    })
  })

  describe('GET and DELETE /byok/{id}', () => {
    it('reads one credential', async () => {
      const created = await create(t, { name: 'one' })
      const response = await t.call('GET', `/byok/${created.id}`)
      expect(response.status).toBe(200)
      expect(await readJson(response)).toEqual({ data: created })
    })

    it('deletes a credential together with its sealed key', async () => {
      const created = await create(t, {})
      const kept = await create(t, {})
      const response = await t.call('DELETE', `/byok/${created.id}`)
      expect(response.status).toBe(200)
      expect(await readJson(response)).toEqual({ deleted: true })
      expect(await t.gateway.storage.get(BYOK_CREDENTIALS, created.id)).toBeNull()
      for (const method of ['GET', 'PATCH', 'DELETE']) {
        const again = await t.call(method, `/byok/${created.id}`, method === 'PATCH' ? { json: { name: 'x' } } : {})
        await expectError(again, 404, 'BYOK credential not found')
      }
      expect(await readJson(await t.call('GET', '/byok'))).toEqual({ data: [kept], total_count: 1 })
    })
  })

  describe('PATCH /byok/{id}', () => {
    it('changes only the fields given; null clears the lists and declared_zdr', async () => {
      const ownHash = await sha256Hex(t.regularKey)
      const created = await create(t, {
        name: 'Before',
        is_fallback: true,
        allowed_api_key_hashes: [ownHash],
        allowed_models: ['openai/gpt-4.1'],
        allowed_user_ids: ['user-1'],
        declared_zdr: true,
      })
      let expected: Credential = created
      const steps: Array<Record<string, unknown>> = [
        {},
        { name: 'After' },
        { disabled: true },
        { is_required: true },
        { is_fallback: false, is_byok_only: true },
        { declared_zdr: false },
        { allowed_models: ['openai/gpt-4.1', 'anthropic/claude-sonnet-4'] },
        { allowed_user_ids: ['user-2'] },
        { allowed_api_key_hashes: [ownHash, await sha256Hex(t.managementKey)] },
        { allowed_api_key_hashes: null },
        { allowed_models: null },
        { allowed_user_ids: null },
        { declared_zdr: null },
        { disabled: false, is_required: false, is_byok_only: false, name: '' },
      ]
      for (const json of steps) {
        const response = await t.call('PATCH', `/byok/${created.id}`, { json })
        expected = { ...expected, ...json }
        expect({ step: json, status: response.status, body: await readJson(response) }).toEqual({
          step: json,
          status: 200,
          body: { data: expected },
        })
      }
      expect(await readJson(await t.call('GET', `/byok/${created.id}`))).toEqual({ data: expected })
      expect(expected).toMatchObject({ label: created.label, sort_order: 0, created_at: created.created_at, workspace_id: t.defaultWorkspaceId })
    })

    it('refuses a change whose merged record is both fallback and BYOK-only, and leaves it unchanged', async () => {
      const fallback = await create(t, { is_fallback: true })
      const byokOnly = await create(t, { is_byok_only: true })
      const cases: Array<[Credential, Record<string, unknown>]> = [
        [fallback, { is_byok_only: true }],
        [byokOnly, { is_fallback: true }],
        [fallback, { is_fallback: true, is_byok_only: true, key: openaiKey() }],
      ]
      for (const [credential, json] of cases) {
        await expectError(await t.call('PATCH', `/byok/${credential.id}`, { json }), 400, 'body: is_fallback and is_byok_only cannot both be true')
        expect(await readJson(await t.call('GET', `/byok/${credential.id}`))).toEqual({ data: credential })
      }
      // Swapping both in one request is fine.
      const swapped = await readJson(await t.call('PATCH', `/byok/${fallback.id}`, { json: { is_fallback: false, is_byok_only: true } }))
      expect(swapped.data).toMatchObject({ is_fallback: false, is_byok_only: true })
    })

    it('rotates the key in place: same id, new label and ciphertext, same master key id', async () => {
      const oldKey = openaiKey()
      const created = await create(t, { key: oldKey, name: 'Rotating', allowed_models: ['openai/gpt-4.1'] })
      const before = await storedRecord(t, created.id)
      const secrets = createSecretBox([TEST_ENCRYPTION_KEY])
      expect(await revealByokKey(secrets, before.data)).toBe(oldKey)

      const newKey = openaiKey()
      const response = await t.call('PATCH', `/byok/${created.id}`, { json: { key: newKey } })
      expect(response.status).toBe(200)
      const { data } = await readJson(response)
      expect(data).toEqual({ ...created, label: `sk-proj-...${newKey.slice(-4)}` })
      expect(data.label).not.toBe(created.label)

      const after = await storedRecord(t, created.id)
      expect(after.data.secret.kid).toBe(before.data.secret.kid)
      expect(after.data.secret.ct).not.toBe(before.data.secret.ct)
      expect(after.data.secret.iv).not.toBe(before.data.secret.iv)
      expect(await revealByokKey(secrets, after.data)).toBe(newKey)
      expect((await t.gateway.storage.list(BYOK_CREDENTIALS)).totalCount).toBe(1)
    })

    it('rotates an Azure key only to another Azure JSON key', async () => {
      const created = await create(t, { provider: 'azure', key: azureKey() })
      await expectError(await t.call('PATCH', `/byok/${created.id}`, { json: { key: openaiKey() } }), 400, AZURE_KEY_MESSAGE)
      expect(await readJson(await t.call('GET', `/byok/${created.id}`))).toEqual({ data: created })
      const apiKey = randomSecret(32)
      const rotated = await readJson(await t.call('PATCH', `/byok/${created.id}`, { json: { key: azureKey(apiKey) } }))
      expect(rotated.data.label).toBe(`...${apiKey.slice(-4)}`)
    })

    it('validates the body at and past its bounds and names the field', async () => {
      const created = await create(t, {})
      const ownHash = await sha256Hex(t.managementKey)
      await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
      const foreignHash = (await t.gateway.admin.createKey({ accountId: 'other' })).record.hash
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ key: '' }, 'body.key: must not be empty'],
        [{ key: 12345 }, 'body.key: must be a string'],
        [{ name: 'x'.repeat(256) }, 'body.name: must be at most 255 characters'],
        [{ disabled: null }, 'body.disabled: expected boolean'],
        [{ is_fallback: null }, 'body.is_fallback: expected boolean'],
        [{ allowed_api_key_hashes: [] }, 'body.allowed_api_key_hashes: must have at least 1 item'],
        [{ allowed_api_key_hashes: Array(101).fill(ownHash) }, 'body.allowed_api_key_hashes: at most 100 items'],
        [{ allowed_api_key_hashes: ['g'.repeat(64)] }, 'body.allowed_api_key_hashes.0: must match ^[a-f0-9]{64}$'],
        [{ allowed_api_key_hashes: [foreignHash] }, 'body.allowed_api_key_hashes.0: not the hash of an API key of this account'],
        [{ allowed_models: Array(101).fill('openai/gpt-4.1') }, 'body.allowed_models: at most 100 items'],
        [{ allowed_user_ids: Array(101).fill('user') }, 'body.allowed_user_ids: at most 100 items'],
        [{ declared_zdr: 'true' }, 'body.declared_zdr: expected boolean'],
      ]
      for (const [json, message] of cases) await expectError(await t.call('PATCH', `/byok/${created.id}`, { json }), 400, message)
      await expectError(await t.call('PATCH', `/byok/${created.id}`, { json: [] }), 400, 'body: must be a JSON object')
      expect(await readJson(await t.call('GET', `/byok/${created.id}`))).toEqual({ data: created })

      const hashes = [ownHash, await sha256Hex(t.regularKey), ...(await hashesOfNewKeys(t, 98))]
      const atBounds = {
        name: 'n'.repeat(255),
        allowed_api_key_hashes: hashes,
        allowed_models: Array.from({ length: 100 }, (_, index) => `openai/model-${index}`),
        allowed_user_ids: Array.from({ length: 100 }, (_, index) => `user-${index}`),
      }
      expect(await readJson(await t.call('PATCH', `/byok/${created.id}`, { json: atBounds }))).toEqual({ data: { ...created, ...atBounds } })
      const single = await readJson(await t.call('PATCH', `/byok/${created.id}`, { json: { allowed_api_key_hashes: [ownHash] } }))
      expect(single.data.allowed_api_key_hashes).toEqual([ownHash])
    })
  })

  describe('errors common to every route', () => {
    const routesFor = (id: string): Array<[string, string, Record<string, unknown> | undefined]> => [
      ['POST', '/byok', { key: openaiKey(), provider: 'openai' }],
      ['GET', '/byok', undefined],
      ['GET', `/byok/${id}`, undefined],
      ['PATCH', `/byok/${id}`, { name: 'x' }],
      ['DELETE', `/byok/${id}`, undefined],
    ]

    it('answers 401 without a valid key and 403 for a regular key, before reading the body', async () => {
      const created = await create(t, {})
      for (const [method, path, json] of routesFor(created.id)) {
        const route = `${method} ${path}`
        await expectError(await t.call(method, path, { key: null, json }), 401, 'Missing API key: send it as Authorization: Bearer <key>')
        await expectError(await t.call(method, path, { key: 'mg-v1-not-a-key', json }), 401, 'Invalid API key')
        await expectError(
          await t.call(method, path, { key: null, json, headers: { authorization: 'Basic abc' } }),
          401,
          'Malformed Authorization header: expected Bearer <key>',
        )
        const denied = await t.call(method, path, { key: t.regularKey, json })
        expect(denied.status, route).toBe(403)
        expect(await readJson(denied)).toEqual({ error: { code: 403, message: 'Only management keys can perform this operation' } })
        const deniedInvalid = await t.call(method, path, { key: t.regularKey, json: json && { ...json, name: 9 } })
        expect(deniedInvalid.status, route).toBe(403)
      }
      expect(await readJson(await t.call('GET', '/byok'))).toEqual({ data: [created], total_count: 1 })
    })

    it('answers 400 for a malformed id on every /byok/{id} route', async () => {
      for (const method of ['GET', 'PATCH', 'DELETE']) {
        for (const id of ['abc', '123', `${crypto.randomUUID()}x`]) {
          await expectError(await t.call(method, `/byok/${id}`, method === 'PATCH' ? { json: {} } : {}), 400, 'params.id: must be a UUID')
        }
      }
    })

    it("answers 404 for another account's or an unknown credential on every /byok/{id} route", async () => {
      await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
      const otherKey = (await t.gateway.admin.createKey({ accountId: 'other', kind: 'management' })).key
      const foreign = await create(t, {}, otherKey)
      for (const id of [foreign.id, crypto.randomUUID()]) {
        for (const [method, path, json] of routesFor(id).slice(2)) {
          await expectError(await t.call(method, path, { json }), 404, 'BYOK credential not found')
        }
      }
      // The foreign credential is untouched and invisible.
      expect(await readJson(await t.call('GET', `/byok/${foreign.id}`, { key: otherKey }))).toEqual({ data: foreign })
      expect(await readJson(await t.call('GET', '/byok'))).toEqual({ data: [], total_count: 0 })
    })

    it('answers 405 with Allow on /byok and /byok/{id}', async () => {
      const cases: Array<[string, string, string]> = [
        ['DELETE', '/byok', 'GET, POST'],
        ['PUT', '/byok', 'GET, POST'],
        ['PATCH', '/byok', 'GET, POST'],
        ['PUT', `/byok/${crypto.randomUUID()}`, 'GET, PATCH, DELETE'],
        ['POST', `/byok/${crypto.randomUUID()}`, 'GET, PATCH, DELETE'],
      ]
      for (const [method, path, allow] of cases) {
        const response = await t.call(method, path, { key: null })
        expect(response.headers.get('allow'), `${method} ${path}`).toBe(allow)
        await expectError(response, 405, `Method ${method} is not allowed here; use ${allow}`)
      }
    })
  })

  describe('secrecy of the raw key', () => {
    it('never shows the raw key in any response, error or header', async () => {
      const texts: string[] = []
      const send = async (method: string, path: string, init: Parameters<TestGateway['call']>[2] = {}) => {
        const response = await t.call(method, path, init)
        texts.push(`${response.status} ${JSON.stringify([...response.headers])} ${await response.text()}`)
        return response.status
      }
      const stored = openaiKey()
      const refused = openaiKey()
      const rotated = openaiKey()
      const azureApiKey = randomSecret(32)
      const numeric = 987_654_321_012_345
      await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
      const foreignHash = (await t.gateway.admin.createKey({ accountId: 'other' })).record.hash
      const otherWorkspace = (await t.gateway.admin.getWorkspace('other', 'default')).id
      const json = { 'content-type': 'application/json' }

      expect(await send('POST', '/byok', { json: { key: stored, provider: 'openai' } })).toBe(200)
      const id = JSON.parse(texts[0]!.slice(texts[0]!.indexOf('{"data"'))).data.id as string
      const refusals: Array<[number, Parameters<TestGateway['call']>[2]]> = [
        [400, { json: { key: refused, provider: 'openai', name: 'x'.repeat(256) } }],
        [400, { json: { key: refused, provider: 'openai', is_fallback: true, is_byok_only: true } }],
        [400, { json: { key: refused, provider: 'openai', allowed_api_key_hashes: [foreignHash] } }],
        [400, { json: { key: refused, provider: 'acme' } }],
        [400, { json: { key: refused, provider: 'Open AI' } }],
        [400, { json: { key: refused, provider: 'openai', declared_zdr: 'maybe' } }],
        [400, { json: { key: [refused], provider: 'openai' } }],
        [400, { json: { key: { value: refused }, provider: 'openai' } }],
        [400, { json: { key: numeric, provider: 'openai' } }],
        [400, { json: { key: JSON.stringify([{ api_key: azureApiKey, resource_name: 'r', resource_type: 'bogus' }]), provider: 'azure' } }],
        [400, { json: { key: azureApiKey, provider: 'azure' } }],
        [404, { json: { key: refused, provider: 'openai', workspace_id: otherWorkspace } }],
        [400, { body: `{"key": "${refused}", "provider": }`, headers: json }],
        [400, { body: `{"key": "${refused}`, headers: json }],
        [400, { body: `{"key": "${refused}" "provider": "openai"}`, headers: json }],
        [400, { body: `["${refused}"]`, headers: json }],
        [415, { body: `{"key": "${refused}", "provider": "openai"}`, headers: { 'content-type': 'text/plain' } }],
        [403, { key: t.regularKey, json: { key: refused, provider: 'openai' } }],
        [401, { key: refused, json: { key: refused, provider: 'openai' } }],
      ]
      for (const [status, init] of refusals) expect(await send('POST', '/byok', init), JSON.stringify(init)).toBe(status)

      expect(await send('GET', '/byok')).toBe(200)
      expect(await send('GET', `/byok/${id}`)).toBe(200)
      expect(await send('PATCH', `/byok/${id}`, { json: { key: refused, name: 'x'.repeat(256) } })).toBe(400)
      expect(await send('PATCH', `/byok/${id}`, { json: { key: refused, is_byok_only: true, is_fallback: true } })).toBe(400)
      expect(await send('PATCH', `/byok/${id}`, { body: `{"key": "${refused}",}`, headers: json })).toBe(400)
      expect(await send('PATCH', `/byok/${crypto.randomUUID()}`, { json: { key: refused } })).toBe(404)
      expect(await send('PATCH', `/byok/${refused}`, { json: { key: refused } })).toBe(400)
      expect(await send('PATCH', `/byok/${id}`, { json: { key: rotated } })).toBe(200)
      expect(await send('GET', '/byok')).toBe(200)
      expect(await send('DELETE', `/byok/${id}`)).toBe(200)

      const everything = texts.join('\n')
      expectNoTrace(everything, stored, 'sk-proj-'.length)
      expectNoTrace(everything, refused, 'sk-proj-'.length)
      expectNoTrace(everything, rotated, 'sk-proj-'.length)
      expectNoTrace(everything, azureApiKey)
      expect(everything).not.toContain(String(numeric))
    })

    it('leaves no trace of raw keys in any record of any collection, nor in any write', async () => {
      const traced = tracedStorage()
      t = await createTestGateway({ storage: traced.storage })
      const openai = openaiKey()
      const rotated = openaiKey()
      const refused = openaiKey()
      const azureApiKey = randomSecret(32)
      const created = await create(t, { key: openai })
      await create(t, { provider: 'azure', key: azureKey(azureApiKey) })
      await t.call('POST', '/byok', { json: { key: refused, provider: 'openai', is_fallback: true, is_byok_only: true } })
      await t.call('PATCH', `/byok/${created.id}`, { json: { name: 'renamed' } })
      expect((await t.call('PATCH', `/byok/${created.id}`, { json: { key: rotated } })).status).toBe(200)

      expect([...traced.collections]).toContain(BYOK_CREDENTIALS)
      const dump = await traced.dump()
      expect(dump).toContain(created.id)
      expectNoTrace(dump, openai, 'sk-proj-'.length)
      expectNoTrace(dump, rotated, 'sk-proj-'.length)
      expectNoTrace(dump, refused, 'sk-proj-'.length)
      expectNoTrace(dump, azureApiKey)
      // The sealed form is opaque: version, key id, nonce, ciphertext.
      const record = await storedRecord(t, created.id)
      expect(Object.keys(record.data.secret).sort()).toEqual(['ct', 'iv', 'kid', 'v'])
    })
  })

  describe('encryption at rest', () => {
    it('keeps serving across a master-key rotation and re-encrypts onto the new key', async () => {
      const OLD = TEST_ENCRYPTION_KEY
      const NEW = generateMasterKey()
      const oldKid = await createSecretBox([OLD]).primaryKeyId()
      const newKid = await createSecretBox([NEW]).primaryKeyId()
      expect(newKid).not.toBe(oldKid)

      const storage = memoryStorage()
      const before = await createTestGateway({ storage, encryptionKeys: [OLD] })
      const raw = [openaiKey(), openaiKey(), openaiKey()]
      const credentials = []
      for (const key of raw) credentials.push(await create(before, { key }))
      for (const credential of credentials) expect((await storedRecord(before, credential.id)).data.secret.kid).toBe(oldKid)

      // A gateway with [NEW, OLD] still serves and updates what OLD sealed, and seals new writes with NEW.
      const during = await createTestGateway({ storage, encryptionKeys: [NEW, OLD] })
      expect((await readJson(await during.call('GET', '/byok'))).total_count).toBe(3)
      const renamed = await readJson(await during.call('PATCH', `/byok/${credentials[0]!.id}`, { json: { name: 'renamed' } }))
      expect(renamed.data.name).toBe('renamed')
      const both = createSecretBox([NEW, OLD])
      for (const [index, credential] of credentials.entries()) {
        expect(await revealByokKey(both, (await storedRecord(during, credential.id)).data)).toBe(raw[index])
      }
      raw[1] = openaiKey()
      expect((await during.call('PATCH', `/byok/${credentials[1]!.id}`, { json: { key: raw[1] } })).status).toBe(200)
      expect((await storedRecord(during, credentials[1]!.id)).data.secret.kid).toBe(newKid)
      const fresh = await create(during, {})
      expect((await storedRecord(during, fresh.id)).data.secret.kid).toBe(newKid)

      // Before re-encryption, NEW alone cannot open what OLD sealed.
      await expect(revealByokKey(createSecretBox([NEW]), (await storedRecord(during, credentials[0]!.id)).data)).rejects.toThrow(
        `A stored secret was sealed with encryption key ${oldKid}, which is not configured`,
      )

      expect(await during.gateway.admin.reencryptSecrets()).toEqual({ scanned: 4, moved: 2 })
      expect(await during.gateway.admin.reencryptSecrets()).toEqual({ scanned: 4, moved: 0 })
      for (const credential of credentials) {
        const stored = await storedRecord(during, credential.id)
        expect(stored.data.secret.kid).toBe(newKid)
        expect(stored.data.label).toBe((await readJson(await during.call('GET', `/byok/${credential.id}`))).data.label)
      }

      // Afterwards OLD can go: a gateway with only NEW decrypts and rotates everything.
      const after = await createTestGateway({ storage, encryptionKeys: [NEW] })
      const onlyNew = createSecretBox([NEW])
      for (const [index, credential] of credentials.entries()) {
        expect(await revealByokKey(onlyNew, (await storedRecord(after, credential.id)).data)).toBe(raw[index])
      }
      const last = openaiKey()
      expect((await after.call('PATCH', `/byok/${credentials[2]!.id}`, { json: { key: last } })).status).toBe(200)
      expect(await revealByokKey(onlyNew, (await storedRecord(after, credentials[2]!.id)).data)).toBe(last)
      await expect(revealByokKey(createSecretBox([OLD]), (await storedRecord(after, credentials[0]!.id)).data)).rejects.toThrow(
        `A stored secret was sealed with encryption key ${newKid}, which is not configured`,
      )
    })

    it('answers 403 (not a retryable 5xx) on writing a key without an encryption key configured, and still lists', async () => {
      const storage = memoryStorage()
      const seeded = await createTestGateway({ storage })
      const existing = await create(seeded, {})
      const { logger, entries } = createRecordingLogger()
      const gateway = createGateway({ storage, logger })
      const call = (method: string, path: string, json?: unknown) =>
        gateway.fetch(
          new Request(`${BASE}${path}`, {
            method,
            headers: { authorization: `Bearer ${seeded.managementKey}`, 'content-type': 'application/json' },
            body: json === undefined ? undefined : JSON.stringify(json),
          }),
        )

      const key = openaiKey()
      const refused = await call('POST', '/byok', { key, provider: 'openai' })
      const text = await refused.clone().text()
      await expectError(refused, 403, NO_KEY_MESSAGE)
      expectNoTrace(text, key, 'sk-proj-'.length)
      await expectError(await call('PATCH', `/byok/${existing.id}`, { key: openaiKey() }), 403, NO_KEY_MESSAGE)
      // Validation still comes first.
      await expectError(await call('POST', '/byok', { key, provider: 'acme' }), 400, 'body.provider: must be a provider this gateway routes to (GET /providers lists them)')

      expect(await readJson(await call('GET', '/byok'))).toEqual({ data: [existing], total_count: 1 })
      expect(await readJson(await call('GET', `/byok/${existing.id}`))).toEqual({ data: existing })
      expect((await readJson(await call('PATCH', `/byok/${existing.id}`, { name: 'still editable' }))).data.name).toBe('still editable')
      expect((await storage.list(BYOK_CREDENTIALS)).totalCount).toBe(1)
      // A refusal the operator expects, not a fault: nothing logged as an error, no stack.
      expect(entries.filter((entry) => entry.level === 'error')).toEqual([])
    })

    it('binds a ciphertext to its record: a secret copied or moved elsewhere fails to open', async () => {
      const secrets = createSecretBox([TEST_ENCRYPTION_KEY])
      const firstKey = openaiKey()
      const first = await create(t, { key: firstKey })
      const second = await create(t, {})
      const source = await storedRecord(t, first.id)
      const target = await storedRecord(t, second.id)
      expect(await revealByokKey(secrets, source.data)).toBe(firstKey)

      const copied = { ...target.data, secret: source.data.secret }
      await t.gateway.storage.update(BYOK_CREDENTIALS, second.id, target.version, { ...target, data: copied })
      const tampered = await storedRecord(t, second.id)
      expect(tampered.data.secret).toEqual(source.data.secret)
      await expect(revealByokKey(secrets, tampered.data)).rejects.toThrow('A stored secret failed its integrity check')

      // Moving a record to another workspace breaks it too, as does a changed ciphertext.
      const lab = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
      await expect(revealByokKey(secrets, { ...source.data, workspaceId: lab.id })).rejects.toThrow('A stored secret failed its integrity check')
      const flipped = source.data.secret.ct.startsWith('A') ? `B${source.data.secret.ct.slice(1)}` : `A${source.data.secret.ct.slice(1)}`
      await expect(revealByokKey(secrets, { ...source.data, secret: { ...source.data.secret, ct: flipped } })).rejects.toThrow(
        'A stored secret failed its integrity check',
      )
      // The original still opens.
      expect(await revealByokKey(secrets, (await storedRecord(t, first.id)).data)).toBe(firstKey)
    })
  })
})

describe('BYOK credentials and their workspace', () => {
  it('are deleted with their workspace, key material included', async () => {
    const t = await createTestGateway()
    const workspace = await t.gateway.admin.createWorkspace(undefined, { name: 'Temp', slug: 'temp' })
    const created = await t.call('POST', '/byok', { json: { provider: 'openai', key: 'sk-temp-0123456789abcdefghij', workspace_id: workspace.id } })
    const { data } = await readJson(created)
    expect((await t.call('DELETE', `/workspaces/${workspace.id}`)).status).toBe(200)
    expect((await t.call('GET', `/byok/${data.id}`)).status).toBe(404)
    expect((await t.gateway.storage.list('byok_credentials')).totalCount).toBe(0)
  })

  it('refuses is_fallback with is_byok_only before anything else, even without an encryption key', async () => {
    const t = await createTestGateway({ encryptionKeys: [] })
    const response = await t.call('POST', '/byok', { json: { provider: 'openai', key: 'sk-x-0123456789abcdefghij', is_fallback: true, is_byok_only: true } })
    expect(response.status).toBe(400)
    expect(await readJson(response)).toEqual({ error: { code: 400, message: 'body: is_fallback and is_byok_only cannot both be true' } })
  })
})
