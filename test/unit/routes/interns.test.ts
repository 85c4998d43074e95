import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { toNodeListener } from '../../../src/adapters/node'
import { sha256Hex } from '../../../src/core/crypto'
import { silentLogger } from '../../../src/core/logger'
import type { GatewayOptions } from '../../../src/gateway/options'
import type { InternRuntime, InternView } from '../../../src/interns/runtime'
import { createRepositories } from '../../../src/repositories'
import type { StorageDriver } from '../../../src/storage/contract'
import { memoryStorage } from '../../../src/storage/memory'
import { routes as routeTable } from '../../../src/routes'
import { createTestGateway as createKitGateway, type TestCallInit } from '../../../src/testing'
import { createTestGateway, readJson, TEST_ENCRYPTION_KEY, type TestGateway } from '../../helpers/gateway'

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const MISSING_ID = '00000000-0000-4000-8000-000000000000'
const MIB = 1_048_576

/** Every key of the spec's Intern object, in the order of its table. */
const INTERN_KEYS = [
  'id', 'name', 'description', 'instructions', 'model', 'status', 'hostname', 'progress', 'last_failure_message',
  'vault_id', 'attached_vault_id', 'workspace_id', 'created_at', 'updated_at',
]

type Harness = Pick<TestGateway, 'gateway' | 'managementKey' | 'regularKey' | 'accountId' | 'defaultWorkspaceId' | 'call'>

/** The shared helper's gateway, with the default account in the interns programme. */
const member = async (): Promise<Harness> => {
  const t = await createTestGateway()
  await t.gateway.admin.setAccountFlags(undefined, { interns: true })
  return t
}

/** Like `member()`, for gateway options the shared helper does not take (runtime, regional hosts, storage). */
const memberWith = async (options: GatewayOptions): Promise<Harness> => {
  const t = await createKitGateway({ logger: silentLogger, encryptionKeys: [TEST_ENCRYPTION_KEY], ...options })
  await t.gateway.admin.setAccountFlags(undefined, { interns: true })
  return t
}

const internError = (code: number, message: string, reason: string, retryable = false) => ({
  error: { code, message, metadata: { reason, retryable } },
})

const expectInternError = async (response: Response, code: number, message: string, reason: string, retryable = false) => {
  expect(response.status).toBe(code)
  expect(await readJson(response)).toEqual(internError(code, message, reason, retryable))
}

const create = async (t: Harness, json: Record<string, unknown>, init: TestCallInit = {}) => {
  const response = await t.call('POST', '/interns', { ...init, json })
  const body = await readJson(response)
  if (response.status !== 201) throw new Error(`create failed: ${response.status} ${JSON.stringify(body)}`)
  return body
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

/** Polls GET /interns/{id} (bounded) until `until` holds. */
const waitForIntern = async (t: Harness, id: string, until: (intern: any) => boolean) => {
  let last: unknown
  for (let attempt = 0; attempt < 500; attempt++) {
    const response = await t.call('GET', `/interns/${id}`)
    last = await response.json()
    if (response.status === 200 && until(last)) return last as any
    await settle()
  }
  throw new Error(`intern ${id} never reached the expected state; last seen ${JSON.stringify(last)}`)
}

const waitForGone = async (t: Harness, id: string) => {
  for (let attempt = 0; attempt < 500; attempt++) {
    const response = await t.call('GET', `/interns/${id}`)
    await response.body?.cancel()
    if (response.status === 404) return
    await settle()
  }
  throw new Error(`intern ${id} was never deleted`)
}

const gate = () => {
  let open!: () => void
  const promise = new Promise<void>((resolve) => (open = resolve))
  return { promise, open }
}

/** A runtime the test steers: provisioning and destruction can be held at a step or made to fail. */
const controlledRuntime = () => {
  const calls: Array<{ action: 'provision' | 'suspend' | 'destroy'; intern: InternView }> = []
  const state = {
    provisionError: null as string | null,
    destroyError: null as string | null,
    provisionGate: null as ReturnType<typeof gate> | null,
    destroyGate: null as ReturnType<typeof gate> | null,
    /** Settles when the latest provision call returns or throws. */
    provisionSettled: Promise.resolve() as Promise<unknown>,
  }
  const runtime: InternRuntime = {
    provision(intern, report) {
      calls.push({ action: 'provision', intern })
      const held = state.provisionGate
      const work = (async () => {
        await report({ label: 'Allocating a sandbox', number: 1, total: 3 })
        if (held) await held.promise
        if (state.provisionError) throw new Error(state.provisionError)
        await report({ label: 'Mounting the vault', number: 2, total: 3 })
        await report({ label: 'Starting the agent', number: 3, total: 3 })
        return { hostname: `${intern.name}.sandbox.test` }
      })()
      state.provisionSettled = work.catch(() => undefined)
      return work
    },
    async suspend(intern) {
      calls.push({ action: 'suspend', intern })
    },
    async destroy(intern) {
      calls.push({ action: 'destroy', intern })
      if (state.destroyGate) await state.destroyGate.promise
      if (state.destroyError) throw new Error(state.destroyError)
    },
    async chat() {
      throw new Error('chat is not used by these tests')
    },
  }
  return { runtime, calls, state }
}

/** A memory store whose next matching operation waits until the test releases it (or fails). */
const faultyStorage = () => {
  const inner = memoryStorage()
  const faults: Array<{ method: keyof StorageDriver; collection: string; reached: ReturnType<typeof gate>; release?: Promise<void>; error?: Error }> = []
  const wrap =
    (method: 'create' | 'update') =>
    async (collection: string, ...rest: unknown[]) => {
      const index = faults.findIndex((fault) => fault.method === method && fault.collection === collection)
      if (index >= 0) {
        const [fault] = faults.splice(index, 1)
        fault!.reached.open()
        if (fault!.error) throw fault!.error
        await fault!.release
      }
      return (inner[method] as (...args: unknown[]) => Promise<unknown>)(collection, ...rest)
    }
  const storage = { ...inner, name: inner.name, create: wrap('create'), update: wrap('update') } as StorageDriver
  return {
    storage,
    /** The next `method` on `collection` waits for `release`; resolves when it is reached. */
    hold(method: 'create' | 'update', collection: string, release: Promise<void>) {
      const reached = gate()
      faults.push({ method, collection, reached, release })
      return reached.promise
    },
    /** The next `method` on `collection` throws (a crash between two steps). */
    fail(method: 'create' | 'update', collection: string, error: Error) {
      faults.push({ method, collection, reached: gate(), error })
    },
  }
}

afterEach(() => {
  vi.useRealTimers()
})

describe('POST /interns', () => {
  it('creates a stopped intern with its private vault: 201 and the bare Intern with every key', async () => {
    const t = await member()
    const response = await t.call('POST', '/interns', {
      json: { name: 'ada', description: 'Books travel', instructions: 'Be frugal.', model: 'openai/gpt-4o', provision: false },
    })
    expect(response.status).toBe(201)
    expect(response.headers.get('content-type')).toBe('application/json')
    const intern = await readJson(response)
    expect(Object.keys(intern)).toEqual(INTERN_KEYS)
    expect(intern).toMatchObject({
      name: 'ada',
      description: 'Books travel',
      instructions: 'Be frugal.',
      model: 'openai/gpt-4o',
      status: 'stopped',
      hostname: null,
      progress: null,
      last_failure_message: null,
      attached_vault_id: null,
      workspace_id: t.defaultWorkspaceId,
    })
    expect(intern.id).toMatch(UUID)
    expect(intern.vault_id).toMatch(UUID)
    expect(intern.created_at).toMatch(ISO)
    expect(intern.updated_at).toMatch(ISO)
    expect((await t.gateway.storage.get('vaults', intern.vault_id))?.data).toMatchObject({ internId: intern.id, workspaceId: t.defaultWorkspaceId })
    expect(await readJson(await t.call('GET', `/interns/${intern.id}`))).toEqual(intern)
  })

  it('defaults description, instructions and model to null (every key present)', async () => {
    const t = await member()
    const intern = await create(t, { name: 'ada' })
    expect(Object.keys(intern)).toEqual(INTERN_KEYS)
    expect(intern).toMatchObject({ description: null, instructions: null, model: null, status: 'stopped' })
  })

  it('accepts workspace_id equal to the key workspace and refuses any other', async () => {
    const t = await member()
    expect((await create(t, { name: 'ada', workspace_id: t.defaultWorkspaceId })).workspace_id).toBe(t.defaultWorkspaceId)
    const other = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
    for (const workspaceId of [other.id, MISSING_ID]) {
      await expectInternError(
        await t.call('POST', '/interns', { json: { name: 'bob', workspace_id: workspaceId } }),
        400,
        "body.workspace_id: must be the API key's workspace",
        'invalid_body',
      )
    }
    await expectInternError(await t.call('POST', '/interns', { json: { name: 'bob', workspace_id: 'lab' } }), 400, 'body.workspace_id: must be a UUID', 'invalid_body')
    expect((await t.gateway.storage.list('interns')).totalCount).toBe(1)
  })

  it('creates in the workspace of the key (no default-workspace fallback)', async () => {
    const t = await member()
    const lab = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
    const { key } = await t.gateway.admin.createKey({ workspaceId: lab.id })
    const intern = await create(t, { name: 'ada' }, { key })
    expect(intern.workspace_id).toBe(lab.id)
    // Names are unique per workspace: the default workspace may use the same name.
    expect((await create(t, { name: 'ada' })).workspace_id).toBe(t.defaultWorkspaceId)
  })

  it('answers 409 name_taken for a name already used in the workspace', async () => {
    const t = await member()
    await create(t, { name: 'ada' })
    await expectInternError(
      await t.call('POST', '/interns', { json: { name: 'ada', description: 'another' } }),
      409,
      'An intern named "ada" already exists in this workspace',
      'name_taken',
    )
    await expectInternError(
      await t.call('POST', '/interns', { json: { name: 'ada' }, headers: { 'idempotency-key': 'fresh-key' } }),
      409,
      'An intern named "ada" already exists in this workspace',
      'name_taken',
    )
    // The refused creations left nothing behind: the key can be used for another name.
    expect((await t.call('POST', '/interns', { json: { name: 'bob' }, headers: { 'idempotency-key': 'fresh-key' } })).status).toBe(201)
    expect((await t.gateway.storage.list('interns')).totalCount).toBe(2)
    expect((await t.gateway.storage.list('vaults')).totalCount).toBe(2)
  })

  describe('validation', () => {
    it('accepts names at the bounds and in the pattern', async () => {
      const t = await member()
      for (const name of ['ab', 'a0', 'a-b', 'a1-b2-c3', 'abcdefghijklmnopq']) expect((await create(t, { name })).name).toBe(name)
    })

    it.each([
      ['a missing name', {}, 'body.name: is required'],
      ['a null name', { name: null }, 'body.name: expected string'],
      ['a 1-character name', { name: 'a' }, 'body.name: must be 2 to 17 characters'],
      ['an 18-character name', { name: 'abcdefghijklmnopqr' }, 'body.name: must be 2 to 17 characters'],
      ['name Ada', { name: 'Ada' }, 'body.name: must be lowercase letters and digits in hyphen-separated words, starting with a letter'],
      ['name 1ab', { name: '1ab' }, 'body.name: must be lowercase letters and digits in hyphen-separated words, starting with a letter'],
      ['name a--b', { name: 'a--b' }, 'body.name: must be lowercase letters and digits in hyphen-separated words, starting with a letter'],
      ['name ab-', { name: 'ab-' }, 'body.name: must be lowercase letters and digits in hyphen-separated words, starting with a letter'],
      ['name -ab', { name: '-ab' }, 'body.name: must be lowercase letters and digits in hyphen-separated words, starting with a letter'],
      ['name a_b', { name: 'a_b' }, 'body.name: must be lowercase letters and digits in hyphen-separated words, starting with a letter'],
      ['a 2001-character description', { name: 'ada', description: 'x'.repeat(2001) }, 'body.description: must be at most 2000 characters'],
      ['100001-character instructions', { name: 'ada', instructions: 'x'.repeat(100_001) }, 'body.instructions: must be at most 100000 characters'],
      ['an empty model', { name: 'ada', model: '' }, 'body.model: must not be empty'],
      ['model gpt-4o', { name: 'ada', model: 'gpt-4o' }, 'body.model: must be a model slug <author>/<name>, optionally with :variant'],
      ['a model with a space', { name: 'ada', model: 'openai/gpt 4o' }, 'body.model: must be a model slug <author>/<name>, optionally with :variant'],
      ['model a/b/c', { name: 'ada', model: 'a/b/c' }, 'body.model: must be a model slug <author>/<name>, optionally with :variant'],
      ['a 201-character model', { name: 'ada', model: `a/${'b'.repeat(199)}` }, 'body.model: must be at most 200 characters'],
      ['a non-boolean provision', { name: 'ada', provision: 'yes' }, 'body.provision: expected boolean'],
      ['a vault_id that is not a UUID', { name: 'ada', vault_id: 'vault-1' }, 'body.vault_id: must be a UUID'],
    ])('refuses %s with 400 invalid_body', async (_label, json, message) => {
      const t = await member()
      await expectInternError(await t.call('POST', '/interns', { json }), 400, message, 'invalid_body')
      expect((await t.gateway.storage.list('interns')).totalCount).toBe(0)
    })

    it('accepts every field at its limit', async () => {
      const t = await member()
      const intern = await create(t, {
        name: 'abcdefghijklmnopq',
        description: 'd'.repeat(2000),
        instructions: 'i'.repeat(100_000),
        model: `a/${'b'.repeat(198)}`,
      })
      expect(intern.description).toHaveLength(2000)
      expect(intern.instructions).toHaveLength(100_000)
      expect(intern.model).toHaveLength(200)
      expect((await create(t, { name: 'bob', model: 'openai/gpt-4o:beta', description: null, instructions: null })).model).toBe('openai/gpt-4o:beta')
    })

    it('refuses bodies over 1048576 bytes with 413 and accepts exactly 1048576', async () => {
      const t = await member()
      // Padded with JSON whitespace: an unknown padding field would be refused before the size counts.
      const bodyOf = (name: string, size: number) => {
        const head = `{"name":"${name}"`
        return `${head}${' '.repeat(size - head.length - 1)}}`
      }
      expect(new TextEncoder().encode(bodyOf('ada', MIB))).toHaveLength(MIB)
      const headers = { 'content-type': 'application/json' }
      expect((await t.call('POST', '/interns', { body: bodyOf('ada', MIB), headers })).status).toBe(201)
      await expectInternError(
        await t.call('POST', '/interns', { body: bodyOf('bob', MIB + 1), headers }),
        413,
        'Request body exceeds the limit of 1048576 bytes',
        'payload_too_large',
      )
    })

    it('refuses a non-JSON content type with 415, malformed JSON and non-objects with 400', async () => {
      const t = await member()
      await expectInternError(
        await t.call('POST', '/interns', { body: '{"name":"ada"}', headers: { 'content-type': 'text/plain' } }),
        415,
        'Content-Type must be application/json',
        'unsupported_media_type',
      )
      await expectInternError(
        await t.call('POST', '/interns', { body: '{"name":', headers: { 'content-type': 'application/json' } }),
        400,
        'Malformed JSON in request body: unexpected end of input, expected a value',
        'invalid_body',
      )
      await expectInternError(
        await t.call('POST', '/interns', { body: '["ada"]', headers: { 'content-type': 'application/json' } }),
        400,
        'body: must be a JSON object',
        'invalid_body',
      )
      // A charset parameter is still JSON.
      const response = await t.call('POST', '/interns', { body: '{"name":"ada"}', headers: { 'content-type': 'application/json; charset=utf-8' } })
      expect(response.status).toBe(201)
    })
  })

  describe('idempotency', () => {
    it('replays a completed create with 200 and the same Intern (same key and body)', async () => {
      const t = await member()
      const headers = { 'idempotency-key': 'create-research-assistant-2026-09-16' }
      const first = await t.call('POST', '/interns', { json: { name: 'ada', provision: false }, headers })
      expect(first.status).toBe(201)
      const intern = await readJson(first)
      const replay = await t.call('POST', '/interns', { json: { name: 'ada', provision: false }, headers })
      expect(replay.status).toBe(200)
      expect(await readJson(replay)).toEqual(intern)
      expect((await t.gateway.storage.list('interns')).totalCount).toBe(1)
      expect((await t.gateway.storage.list('vaults')).totalCount).toBe(1)
    })

    it('derives the key from the body when the header is absent', async () => {
      const t = await member()
      const intern = await create(t, { name: 'ada', description: 'x' })
      const replay = await t.call('POST', '/interns', { json: { name: 'ada', description: 'x' } })
      expect(replay.status).toBe(200)
      expect(await readJson(replay)).toEqual(intern)
    })

    it('answers 409 idempotency_key_reused for the same key with another body', async () => {
      const t = await member()
      const headers = { 'idempotency-key': 'k-1' }
      await create(t, { name: 'ada' }, { headers })
      for (const json of [{ name: 'bob' }, { name: 'ada', description: 'changed' }, { name: 'ada', provision: true }]) {
        await expectInternError(
          await t.call('POST', '/interns', { json, headers }),
          409,
          'This Idempotency-Key was already used with a different request body',
          'idempotency_key_reused',
        )
      }
      expect((await t.gateway.storage.list('interns')).totalCount).toBe(1)
    })

    it('scopes keys to the workspace: the same key in another workspace creates another intern', async () => {
      const t = await member()
      const lab = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
      const { key } = await t.gateway.admin.createKey({ workspaceId: lab.id })
      const headers = { 'idempotency-key': 'shared' }
      const first = await create(t, { name: 'ada' }, { headers })
      const second = await create(t, { name: 'ada' }, { headers, key })
      expect(second.id).not.toBe(first.id)
    })

    it('takes keys of 1 and 255 characters; an empty or 256-character key is 400', async () => {
      const t = await member()
      expect((await t.call('POST', '/interns', { json: { name: 'ada' }, headers: { 'idempotency-key': 'k' } })).status).toBe(201)
      expect((await t.call('POST', '/interns', { json: { name: 'bob' }, headers: { 'idempotency-key': 'k'.repeat(255) } })).status).toBe(201)
      for (const key of ['', 'k'.repeat(256)]) {
        await expectInternError(
          await t.call('POST', '/interns', { json: { name: 'cy' }, headers: { 'idempotency-key': key } }),
          400,
          'Idempotency-Key header must be 1 to 255 characters',
          'invalid_body',
        )
      }
      expect((await t.gateway.storage.list('interns')).totalCount).toBe(2)
    })

    it('20 concurrent identical creates with one key: one 201, nineteen 200, one intern and one vault', async () => {
      const t = await member()
      const headers = { 'idempotency-key': 'race' }
      const responses = await Promise.all(Array.from({ length: 20 }, () => t.call('POST', '/interns', { json: { name: 'ada' }, headers })))
      const statuses = responses.map((response) => response.status).sort((a, b) => a - b)
      expect(statuses).toEqual([...Array(19).fill(200), 201])
      const bodies = await Promise.all(responses.map(readJson))
      expect(new Set(bodies.map((body) => body.id)).size).toBe(1)
      expect(new Set(bodies.map((body) => body.vault_id)).size).toBe(1)
      expect(bodies.every((body) => UUID.test(body.vault_id))).toBe(true)
      expect((await t.gateway.storage.list('interns')).totalCount).toBe(1)
      expect((await t.gateway.storage.list('vaults')).totalCount).toBe(1)
    })

    it('20 concurrent identical creates without a key converge on one intern too', async () => {
      const t = await member()
      const responses = await Promise.all(Array.from({ length: 20 }, () => t.call('POST', '/interns', { json: { name: 'ada' } })))
      expect(responses.filter((response) => response.status === 201)).toHaveLength(1)
      expect(responses.filter((response) => response.status === 200)).toHaveLength(19)
      expect((await t.gateway.storage.list('interns')).totalCount).toBe(1)
      expect((await t.gateway.storage.list('vaults')).totalCount).toBe(1)
    })

    it('20 concurrent identical creates with provision: true provision once', async () => {
      const { runtime, calls } = controlledRuntime()
      const t = await memberWith({ internRuntime: runtime })
      const headers = { 'idempotency-key': 'race-provision' }
      const responses = await Promise.all(
        Array.from({ length: 20 }, () => t.call('POST', '/interns', { json: { name: 'ada', provision: true }, headers })),
      )
      const bodies = await Promise.all(responses.map(readJson))
      expect(responses.map((response) => response.status).sort((a, b) => a - b), JSON.stringify(bodies.find((body) => body.error))).toEqual([
        ...Array(19).fill(200),
        201,
      ])
      const intern = await waitForIntern(t, bodies[0].id, (current) => current.status === 'running')
      expect(intern.hostname).toBe('ada.sandbox.test')
      expect(calls.filter((call) => call.action === 'provision')).toHaveLength(1)
      expect((await t.gateway.storage.list('vaults')).totalCount).toBe(1)
    })

    it('resumes a create that stopped after the intern record, before its vault: 200 and the vault exists', async () => {
      const t = await member()
      const storage = t.gateway.storage
      const repositories = createRepositories(storage, { textModel: 'openai/gpt-4.1-mini', imageModel: 'google/gemini-2.5-flash-image', providerSort: 'price' }, () => new Date())
      const account = await t.gateway.admin.getAccount(t.accountId)
      const key = 'crashed-create'
      const internId = crypto.randomUUID()
      const vaultId = crypto.randomUUID()
      const timestamp = new Date().toISOString()
      // What the first attempt wrote before it died: the claim and the intern, not the vault.
      await repositories.interns.creations.claim({
        id: await sha256Hex(`${t.accountId}\u0000${t.defaultWorkspaceId}\u0000${key}`),
        accountId: t.accountId,
        fingerprint: await sha256Hex(JSON.stringify({ name: 'ada', provision: false })),
        internId,
        vaultId,
        state: 'started',
        createdAt: timestamp,
      })
      const stored = await repositories.interns.create({
        id: internId,
        accountId: t.accountId,
        workspaceId: t.defaultWorkspaceId,
        creatorUserId: account.ownerUserId,
        name: 'ada',
        description: null,
        instructions: null,
        model: null,
        runningModel: null,
        status: 'stopped',
        hostname: null,
        progress: null,
        lastFailureMessage: null,
        vaultId: null,
        attachedVaultId: null,
        createdAt: timestamp,
        updatedAt: timestamp,
        sortKey: repositories.interns.newSortKey(timestamp),
      })
      expect(stored).not.toBe('name_taken')
      expect((await readJson(await t.call('GET', `/interns/${internId}`))).vault_id).toBeNull()

      const retry = await t.call('POST', '/interns', { json: { name: 'ada' }, headers: { 'idempotency-key': key } })
      expect(retry.status).toBe(200)
      const intern = await readJson(retry)
      expect(intern).toMatchObject({ id: internId, name: 'ada', vault_id: vaultId, status: 'stopped' })
      expect((await storage.get('vaults', vaultId))?.data).toMatchObject({ internId, workspaceId: t.defaultWorkspaceId })
      expect((await storage.list('interns')).totalCount).toBe(1)
      expect((await storage.list('vaults')).totalCount).toBe(1)
      // Completed now: another retry replays it.
      const replay = await t.call('POST', '/interns', { json: { name: 'ada' }, headers: { 'idempotency-key': key } })
      expect(replay.status).toBe(200)
      expect(await readJson(replay)).toEqual(intern)
    })

    it('a create that failed between two steps (500) finishes on retry with the same key', async () => {
      const faulty = faultyStorage()
      const t = await memberWith({ storage: faulty.storage })
      faulty.fail('create', 'vaults', new Error('connection reset'))
      const headers = { 'idempotency-key': 'flaky' }
      await expectInternError(
        await t.call('POST', '/interns', { json: { name: 'ada' }, headers }),
        500,
        'Internal server error',
        'internal_error',
        true,
      )
      const [orphan] = (await faulty.storage.list<any>('interns')).items
      expect(orphan?.data.vaultId).toBeNull()
      const retry = await t.call('POST', '/interns', { json: { name: 'ada' }, headers })
      expect(retry.status).toBe(200)
      const intern = await readJson(retry)
      expect(intern.id).toBe(orphan!.id)
      expect(intern.vault_id).toMatch(UUID)
      expect(await faulty.storage.get('vaults', intern.vault_id)).not.toBeNull()
      expect((await faulty.storage.list('interns')).totalCount).toBe(1)
    })

    it('times out after 10 seconds with 408 (retryable) and the retry returns the finished intern', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
      const faulty = faultyStorage()
      const t = await memberWith({ storage: faulty.storage })
      const slow = gate()
      const reached = faulty.hold('create', 'vaults', slow.promise)
      const headers = { 'idempotency-key': 'slow' }
      const pending = t.call('POST', '/interns', { json: { name: 'ada' }, headers })
      await reached
      await vi.advanceTimersByTimeAsync(10_000)
      await expectInternError(await pending, 408, 'The request timed out after 10 seconds', 'timeout', true)
      slow.open()
      const intern = await waitForIntern(t, (await faulty.storage.list<any>('interns')).items[0]!.id, (current) => current.vault_id !== null)
      const retry = await t.call('POST', '/interns', { json: { name: 'ada' }, headers })
      expect(retry.status).toBe(200)
      expect((await readJson(retry)).id).toBe(intern.id)
    })

    it('creates the same intern again without a key after the first was deleted', async () => {
      const t = await member()
      const first = await create(t, { name: 'ada' })
      expect((await t.call('DELETE', `/interns/${first.id}`)).status).toBe(202)
      await waitForGone(t, first.id)
      const again = await t.call('POST', '/interns', { json: { name: 'ada' } })
      expect(again.status).toBe(201)
      const second = await readJson(again)
      expect(second.id).not.toBe(first.id)
      expect((await t.call('POST', '/interns', { json: { name: 'ada' } })).status).toBe(200)
    })

    it('answers 404 when a key replays a create whose intern was deleted', async () => {
      const t = await member()
      const headers = { 'idempotency-key': 'k' }
      const intern = await create(t, { name: 'ada' }, { headers })
      await t.call('DELETE', `/interns/${intern.id}`)
      await waitForGone(t, intern.id)
      await expectInternError(
        await t.call('POST', '/interns', { json: { name: 'ada' }, headers }),
        404,
        'The intern created with this idempotency key was deleted',
        'not_found',
      )
    })
  })

  describe('vault_id (attach a vault of another intern)', () => {
    it('attaches the vault of another intern of the workspace as attached_vault_id', async () => {
      const t = await member()
      const owner = await create(t, { name: 'ada' })
      const borrower = await create(t, { name: 'bob', vault_id: owner.vault_id })
      expect(borrower.attached_vault_id).toBe(owner.vault_id)
      expect(borrower.vault_id).toMatch(UUID)
      expect(borrower.vault_id).not.toBe(owner.vault_id)
      expect((await create(t, { name: 'cy', vault_id: null })).attached_vault_id).toBeNull()
    })

    it('refuses unknown vaults and vaults of other workspaces or accounts with 409 vault_not_attachable', async () => {
      const t = await member()
      const lab = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
      const { key: labKey } = await t.gateway.admin.createKey({ workspaceId: lab.id })
      const labIntern = await create(t, { name: 'ada' }, { key: labKey })
      const { account } = await t.gateway.admin.createAccount({ name: 'Other', slug: 'other', flags: { interns: true } })
      const { key: otherKey } = await t.gateway.admin.createKey({ accountId: account.id })
      const foreign = await create(t, { name: 'ada' }, { key: otherKey })
      for (const vaultId of [MISSING_ID, labIntern.vault_id, foreign.vault_id]) {
        await expectInternError(
          await t.call('POST', '/interns', { json: { name: 'bob', vault_id: vaultId }, headers: { 'idempotency-key': 'attach' } }),
          409,
          'vault_id must be the vault of another intern in this workspace',
          'vault_not_attachable',
        )
      }
      // The refusal freed the key.
      expect((await t.call('POST', '/interns', { json: { name: 'bob' }, headers: { 'idempotency-key': 'attach' } })).status).toBe(201)
    })

    it("refuses the intern's own vault", async () => {
      const t = await member()
      const repositories = createRepositories(t.gateway.storage, { textModel: 'openai/gpt-4.1-mini', imageModel: 'google/gemini-2.5-flash-image', providerSort: 'price' }, () => new Date())
      const internId = crypto.randomUUID()
      const vaultId = crypto.randomUUID()
      const key = 'own-vault'
      // An unfinished create whose vault already exists, retried with that vault as the one to attach.
      await repositories.interns.creations.claim({
        id: await sha256Hex(`${t.accountId}\u0000${t.defaultWorkspaceId}\u0000${key}`),
        accountId: t.accountId,
        fingerprint: await sha256Hex(JSON.stringify({ name: 'ada', provision: false, vaultId })),
        internId,
        vaultId,
        state: 'started',
        createdAt: new Date().toISOString(),
      })
      await repositories.interns.vaults.create({ id: vaultId, accountId: t.accountId, workspaceId: t.defaultWorkspaceId, internId, createdAt: new Date().toISOString() })
      await expectInternError(
        await t.call('POST', '/interns', { json: { name: 'ada', vault_id: vaultId }, headers: { 'idempotency-key': key } }),
        409,
        'vault_id must be the vault of another intern in this workspace',
        'vault_not_attachable',
      )
      expect((await t.gateway.storage.list('interns')).totalCount).toBe(0)
    })
  })

  describe('provision: true', () => {
    it('answers queued, then provisioning runs in the background to running', async () => {
      const t = await member()
      const intern = await create(t, { name: 'ada', provision: true })
      expect(intern).toMatchObject({ status: 'queued', hostname: null, progress: null })
      const running = await waitForIntern(t, intern.id, (current) => current.status === 'running')
      expect(running.progress).toBeNull()
      expect(running.last_failure_message).toBeNull()
      expect(running.hostname).toMatch(/^ada-[0-9a-f]{6}\.interns\.local$/)
    })

    it('reports the active step as progress while provisioning, then null', async () => {
      const { runtime, calls, state } = controlledRuntime()
      const t = await memberWith({ internRuntime: runtime })
      state.provisionGate = gate()
      const intern = await create(t, { name: 'ada', model: 'openai/gpt-4o', instructions: 'Be brief.', provision: true })
      expect(intern.status).toBe('queued')
      const provisioning = await waitForIntern(t, intern.id, (current) => current.status === 'provisioning')
      expect(provisioning.progress).toEqual({ step_label: 'Allocating a sandbox', step_number: 1, total_steps: 3 })
      expect(provisioning.hostname).toBeNull()
      expect(calls).toHaveLength(1)
      expect(calls[0]!.intern).toEqual({
        id: intern.id,
        name: 'ada',
        workspaceId: t.defaultWorkspaceId,
        instructions: 'Be brief.',
        model: 'openai/gpt-4o',
        vaultId: intern.vault_id,
        attachedVaultId: null,
        hostname: null,
      })
      state.provisionGate.open()
      const running = await waitForIntern(t, intern.id, (current) => current.status === 'running')
      expect(running).toMatchObject({ progress: null, hostname: 'ada.sandbox.test', last_failure_message: null })
    })

    it('provisions with the workspace default model when model is null', async () => {
      const { runtime, calls } = controlledRuntime()
      const t = await memberWith({ internRuntime: runtime, workspaceDefaults: { textModel: 'anthropic/claude-sonnet-4.5' } })
      const intern = await create(t, { name: 'ada', provision: true })
      await waitForIntern(t, intern.id, (current) => current.status === 'running')
      expect(calls[0]!.intern.model).toBe('anthropic/claude-sonnet-4.5')
      expect((await readJson(await t.call('GET', `/interns/${intern.id}`))).model).toBeNull()
    })
  })
})

describe('access to intern routes', () => {
  const routes = (id: string): Array<[string, string]> => [
    ['POST', '/interns'],
    ['GET', '/interns'],
    ['GET', `/interns/${id}`],
    ['PATCH', `/interns/${id}`],
    ['DELETE', `/interns/${id}`],
    ['POST', `/interns/${id}/provision`],
    ['POST', `/interns/${id}/suspend`],
    ['POST', `/interns/${id}/chat`],
  ]

  it('answers 404 not_found on every route outside the programme, even with a malformed body', async () => {
    const t = await createTestGateway()
    const intern = await (async () => {
      await t.gateway.admin.setAccountFlags(undefined, { interns: true })
      const created = await readJson(await t.call('POST', '/interns', { json: { name: 'ada' } }))
      await t.gateway.admin.setAccountFlags(undefined, { interns: false })
      return created
    })()
    for (const key of [t.managementKey, t.regularKey]) {
      for (const [method, path] of [...routes(intern.id), ['GET', '/interns/not-a-uuid'] as [string, string]]) {
        const hasBody = method === 'POST' || method === 'PATCH'
        const response = await t.call(method, path, {
          key,
          ...(hasBody ? { body: '{"name":', headers: { 'content-type': 'application/json' } } : {}),
        })
        expect(response.status, `${method} ${path}`).toBe(404)
        expect(await readJson(response)).toEqual(internError(404, 'Not found', 'not_found'))
      }
    }
  })

  it('answers 401 without metadata for a missing or invalid key', async () => {
    const t = await member()
    for (const [method, path] of routes(MISSING_ID)) {
      const missing = await t.call(method, path, { key: null })
      expect(missing.status).toBe(401)
      expect(await readJson(missing)).toEqual({ error: { code: 401, message: 'Missing API key: send it as Authorization: Bearer <key>' } })
      const invalid = await t.call(method, path, { key: 'sk-mg-not-a-key' })
      expect(invalid.status).toBe(401)
      expect(await readJson(invalid)).toEqual({ error: { code: 401, message: 'Invalid API key' } })
    }
  })

  it('refuses regional hostnames with 403 without metadata, and serves the global one', async () => {
    const t = await memberWith({ regionalHostnames: ['eu.gateway.test'] })
    const intern = await create(t, { name: 'ada' })
    for (const [method, path] of routes(intern.id)) {
      for (const host of ['eu.gateway.test', 'EU.Gateway.Test']) {
        const response = await t.call(method, path, { host, json: method === 'POST' || method === 'PATCH' ? {} : undefined })
        expect(response.status, `${method} ${path} on ${host}`).toBe(403)
        expect(await readJson(response)).toEqual({
          error: { code: 403, message: 'Interns are not available on regional hostnames; use the global endpoint' },
        })
      }
    }
    expect((await t.call('GET', `/interns/${intern.id}`)).status).toBe(200)
  })

  describe('the hostname behind the regional refusal comes from a source the operator trusts', () => {
    const REGIONAL = { regionalHostnames: ['eu.gateway.test'] }
    const listFrom = (t: Harness, host: string, headers: Record<string, string> = {}) => t.call('GET', '/interns', { host, headers })

    it('ignores forwarded headers unless told a proxy sets one: a spoofed header neither bypasses nor triggers it', async () => {
      const t = await memberWith(REGIONAL)
      expect((await listFrom(t, 'eu.gateway.test', { 'x-forwarded-host': 'gateway.test', forwarded: 'host=gateway.test' })).status).toBe(403)
      expect((await listFrom(t, 'gateway.test', { 'x-forwarded-host': 'eu.gateway.test', forwarded: 'host=eu.gateway.test' })).status).toBe(200)
      // The host the server was reached on, however it is spelled.
      expect((await listFrom(t, 'gateway.test', { host: 'EU.Gateway.Test.:8443' })).status).toBe(403)
    })

    it('lets the configured header decide when set, reading the entry its proxy appended last', async () => {
      const t = await memberWith({ ...REGIONAL, trustedHostHeader: 'X-Forwarded-Host' })
      // The proxy reaches the gateway under its own name; the header carries what the client asked for.
      expect((await listFrom(t, 'gateway.internal', { 'x-forwarded-host': 'eu.gateway.test' })).status).toBe(403)
      expect((await listFrom(t, 'gateway.internal', { 'x-forwarded-host': 'gateway.test' })).status).toBe(200)
      expect((await listFrom(t, 'gateway.internal', { 'x-forwarded-host': 'gateway.test, eu.gateway.test' })).status).toBe(403)
      expect((await listFrom(t, 'gateway.internal', { 'x-forwarded-host': 'eu.gateway.test, gateway.test' })).status).toBe(200)
      // Without the header the request did not come through the proxy: the host it reached decides.
      expect((await listFrom(t, 'eu.gateway.test')).status).toBe(403)
      expect((await listFrom(t, 'gateway.test')).status).toBe(200)

      const rfc = await memberWith({ ...REGIONAL, trustedHostHeader: 'forwarded' })
      expect((await listFrom(rfc, 'gateway.internal', { forwarded: 'for=_client;host="eu.gateway.test";proto=https' })).status).toBe(403)
      expect((await listFrom(rfc, 'gateway.internal', { forwarded: 'for=_spoof;host=eu.gateway.test, for=_client;host=gateway.test' })).status).toBe(200)
    })

    it('refuses every host on a deployment declared regional', async () => {
      const t = await memberWith({ isRegionalDeployment: true })
      for (const host of ['gateway.test', 'anything.test']) expect((await listFrom(t, host)).status).toBe(403)
    })

    it('behind the Node adapter with shouldTrustProxy, X-Forwarded-Host still decides nothing unless configured', async () => {
      const t = await memberWith(REGIONAL)
      const server = http.createServer(toNodeListener(t.gateway, { shouldTrustProxy: true }))
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      const { port } = server.address() as AddressInfo
      const statusFor = (host: string, forwardedHost: string) =>
        new Promise<number>((resolve, reject) => {
          const request = http.request({
            host: '127.0.0.1',
            port,
            path: '/api/v1/interns',
            headers: { host, 'x-forwarded-host': forwardedHost, authorization: `Bearer ${t.regularKey}` },
          })
          request.on('error', reject)
          request.on('response', (response) => {
            response.resume()
            response.on('end', () => resolve(response.statusCode ?? 0))
          })
          request.end()
        })
      try {
        expect(await statusFor('eu.gateway.test', 'gateway.test')).toBe(403)
        expect(await statusFor('gateway.test', 'eu.gateway.test')).toBe(200)
      } finally {
        server.closeAllConnections()
        await new Promise<void>((resolve) => server.close(() => resolve()))
      }
    })
  })

  it('serves management and regular keys of a member alike', async () => {
    const t = await member()
    const byManagement = await create(t, { name: 'ada' }, { key: t.managementKey })
    const byRegular = await create(t, { name: 'bob' }, { key: t.regularKey })
    expect(await readJson(await t.call('GET', `/interns/${byManagement.id}`, { key: t.regularKey }))).toEqual(byManagement)
    expect(await readJson(await t.call('GET', `/interns/${byRegular.id}`, { key: t.managementKey }))).toEqual(byRegular)
  })

  it('hides interns of another workspace and of another account (404 not_found on every route)', async () => {
    const t = await member()
    const lab = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
    const { key: labKey } = await t.gateway.admin.createKey({ workspaceId: lab.id })
    const { account } = await t.gateway.admin.createAccount({ name: 'Other', slug: 'other', flags: { interns: true } })
    const { key: otherKey } = await t.gateway.admin.createKey({ accountId: account.id })
    const labIntern = await create(t, { name: 'ada' }, { key: labKey })
    const foreign = await create(t, { name: 'bob' }, { key: otherKey })
    for (const intern of [labIntern, foreign]) {
      for (const [method, path] of routes(intern.id).slice(2)) {
        const isChat = path.endsWith('/chat')
        const json = method === 'PATCH' ? { description: 'mine now' } : isChat ? { input: 'hi' } : undefined
        // Chat runs a model, so it takes a regular key.
        await expectInternError(await t.call(method, path, { json, ...(isChat ? { key: t.regularKey } : {}) }), 404, 'Intern not found', 'not_found')
      }
    }
    const list = await readJson(await t.call('GET', '/interns'))
    expect(list.data).toEqual([])
    // Nothing was changed behind the 404s.
    expect(await readJson(await t.call('GET', `/interns/${labIntern.id}`, { key: labKey }))).toEqual(labIntern)
    expect(await readJson(await t.call('GET', `/interns/${foreign.id}`, { key: otherKey }))).toEqual(foreign)
  })

  it('answers 401 to a regular key whose workspace was deleted, and 404 to a management key bound to it', async () => {
    const t = await member()
    const lab = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
    const { key } = await t.gateway.admin.createKey({ workspaceId: lab.id })
    const { key: managementKey } = await t.gateway.admin.createKey({ kind: 'management', workspaceId: lab.id })
    const intern = await create(t, { name: 'ada' }, { key })
    // A workspace with interns cannot be deleted: they must be destroyed first.
    await expect(t.gateway.admin.deleteWorkspace(undefined, lab.id)).rejects.toThrow('The workspace still has 1 intern(s); delete them first')
    // Simulate a workspace lost another way (a key created while it was deleted, or an operator's hand in the store).
    await t.gateway.storage.delete('workspaces', lab.id)
    for (const [method, path] of routes(intern.id)) {
      const json =
        method === 'PATCH' ? { description: 'x' } : path.endsWith('/chat') ? { input: 'hi' } : path === '/interns' && method === 'POST' ? { name: 'bob' } : undefined
      // spec Errors: intern 401s carry no metadata.
      const response = await t.call(method, path, { key, json })
      expect(response.status, `${method} ${path}`).toBe(401)
      expect(await readJson(response)).toEqual({ error: { code: 401, message: "The API key's workspace was deleted; create a new key" } })
      if (path.endsWith('/chat')) continue
      await expectInternError(await t.call(method, path, { key: managementKey, json }), 404, "The API key's workspace no longer exists", 'not_found')
    }
  })

  it('refuses management keys on chat with 403, as on /responses: every route that runs a model is for regular keys', async () => {
    const t = await member()
    const intern = await create(t, { name: 'ada' })
    const refused = await t.call('POST', `/interns/${intern.id}/chat`, { key: t.managementKey, json: { input: 'hi' } })
    expect(refused.status).toBe(403)
    expect(await readJson(refused)).toEqual({ error: { code: 403, message: 'Management keys cannot be used for inference; use a regular API key' } })
    // The rule lives in the route table: exactly the routes that run a model, and those that read what one stored, take
    // inference keys.
    const inference = routeTable.filter((route) => route.auth === 'inference').map((route) => `${route.method} ${route.path}`)
    expect(inference).toEqual([
      'POST /responses',
      'GET /responses/:id',
      'DELETE /responses/:id',
      'POST /responses/:id/cancel',
      'GET /responses/:id/input_items',
      'POST /chat/completions',
      'POST /messages',
      'POST /embeddings',
      'POST /interns/:internId/chat',
      'POST /interns/:internId/chat/completions',
    ])
    // Outside the programme the answer stays 404 whatever the key: the programme is not revealed.
    await t.gateway.admin.setAccountFlags(undefined, { interns: false })
    await expectInternError(await t.call('POST', `/interns/${intern.id}/chat`, { key: t.managementKey, json: { input: 'hi' } }), 404, 'Not found', 'not_found')
  })

  it('answers 400 invalid_body for an intern id that is not a UUID', async () => {
    const t = await member()
    await expectInternError(await t.call('GET', '/interns/ada'), 400, 'params.internId: must be a UUID', 'invalid_body')
  })
})

describe('GET /interns', () => {
  it('pages with limit and next_cursor, newest first', async () => {
    const t = await member()
    const names = ['ada', 'bob', 'cy', 'dee', 'eve']
    const created = []
    for (const name of names) created.push(await create(t, { name }))
    created.reverse()
    const first = await t.call('GET', '/interns?limit=2')
    expect(first.status).toBe(200)
    const page1 = await readJson(first)
    expect(Object.keys(page1)).toEqual(['data', 'has_more', 'next_cursor'])
    expect(page1.data).toEqual(created.slice(0, 2))
    expect(page1.has_more).toBe(true)
    expect(page1.next_cursor).toEqual(expect.any(String))
    const seen = [...page1.data]
    let cursor = page1.next_cursor
    while (cursor !== undefined) {
      const page = await readJson(await t.call('GET', `/interns?limit=2&cursor=${encodeURIComponent(cursor)}`))
      seen.push(...page.data)
      expect(page.has_more).toBe(page.next_cursor !== undefined)
      cursor = page.next_cursor
    }
    expect(seen.map((intern) => intern.name)).toEqual([...names].reverse())
    expect(await readJson(await t.call('GET', '/interns'))).toEqual({ data: created, has_more: false })
  })

  it('takes the cursor as starting_after too (OpenRouter SDK), and a page is not disturbed by interns created meanwhile', async () => {
    const t = await member()
    const ada = await create(t, { name: 'ada' })
    const bob = await create(t, { name: 'bob' })
    const cy = await create(t, { name: 'cy' })
    const page1 = await readJson(await t.call('GET', '/interns?limit=2'))
    expect(page1.data.map((intern: any) => intern.id)).toEqual([cy.id, bob.id])
    await create(t, { name: 'dee' })
    const page2 = await readJson(await t.call('GET', `/interns?limit=2&starting_after=${page1.next_cursor}`))
    expect(page2).toEqual({ data: [ada], has_more: false })
    const same = await readJson(await t.call('GET', `/interns?limit=2&starting_after=${page1.next_cursor}&cursor=${page1.next_cursor}`))
    expect(same).toEqual(page2)
    await expectInternError(
      await t.call('GET', `/interns?starting_after=${page1.next_cursor}&cursor=abc`),
      400,
      'query.starting_after: differs from query.cursor; send one of them',
      'invalid_body',
    )
  })

  it('filters by status (comma-separated)', async () => {
    const t = await member()
    const ada = await create(t, { name: 'ada', provision: true })
    const bob = await create(t, { name: 'bob' })
    await waitForIntern(t, ada.id, (current) => current.status === 'running')
    const running = await readJson(await t.call('GET', '/interns?status=running'))
    expect(running.data.map((intern: any) => intern.id)).toEqual([ada.id])
    const stopped = await readJson(await t.call('GET', '/interns?status=stopped'))
    expect(stopped.data.map((intern: any) => intern.id)).toEqual([bob.id])
    const both = await readJson(await t.call('GET', '/interns?status=running,stopped&limit=1'))
    expect(both).toMatchObject({ has_more: true })
    expect(both.data.map((intern: any) => intern.id)).toEqual([bob.id])
    const rest = await readJson(await t.call('GET', `/interns?status=running,stopped&limit=1&cursor=${both.next_cursor}`))
    expect(rest).toMatchObject({ has_more: false })
    expect(rest).not.toHaveProperty('next_cursor')
    expect(rest.data.map((intern: any) => intern.id)).toEqual([ada.id])
    expect((await readJson(await t.call('GET', '/interns?status=failed'))).data).toEqual([])
  })

  it('lists only the key workspace; workspace_id must be that workspace', async () => {
    const t = await member()
    const lab = await t.gateway.admin.createWorkspace(undefined, { name: 'Lab', slug: 'lab' })
    const { key } = await t.gateway.admin.createKey({ workspaceId: lab.id })
    const mine = await create(t, { name: 'ada' })
    await create(t, { name: 'bob' }, { key })
    expect((await readJson(await t.call('GET', `/interns?workspace_id=${t.defaultWorkspaceId}`))).data).toEqual([mine])
    await expectInternError(await t.call('GET', `/interns?workspace_id=${lab.id}`), 400, "query.workspace_id: must be the API key's workspace", 'invalid_body')
  })

  it.each([
    ['limit=0', 'query.limit: must be at least 1'],
    ['limit=501', 'query.limit: must be at most 500'],
    ['cursor=abc', 'query.cursor: must be a cursor from next_cursor'],
    [
      'status=running,sleeping',
      'query.status: must be a comma-separated list of awaiting_messaging_install, queued, provisioning, running, failed, stopped, destroying, destroy_failed',
    ],
  ])('refuses %s with 400', async (query, message) => {
    const t = await member()
    await expectInternError(await t.call('GET', `/interns?${query}`), 400, message, 'invalid_body')
  })

  it('takes limit 1 and 500', async () => {
    const t = await member()
    await create(t, { name: 'ada' })
    for (const limit of [1, 500]) expect((await readJson(await t.call('GET', `/interns?limit=${limit}`))).data).toHaveLength(1)
  })
})

describe('PATCH /interns/{internId}', () => {
  it('changes the given fields, leaves omitted ones alone and clears nulls', async () => {
    const t = await member()
    const intern = await create(t, { name: 'ada', description: 'Books travel', instructions: 'Be frugal.', model: 'openai/gpt-4o' })
    const response = await t.call('PATCH', `/interns/${intern.id}`, { json: { description: null, name: 'ada-two' } })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/json')
    const updated = await readJson(response)
    expect(Object.keys(updated)).toEqual(INTERN_KEYS)
    expect(updated).toMatchObject({ ...intern, name: 'ada-two', description: null, updated_at: expect.stringMatching(ISO) })
    expect(updated.updated_at >= intern.updated_at).toBe(true)
    expect(await readJson(await t.call('GET', `/interns/${intern.id}`))).toEqual(updated)
    const cleared = await readJson(await t.call('PATCH', `/interns/${intern.id}`, { json: { instructions: null, model: null } }))
    expect(cleared).toMatchObject({ instructions: null, model: null, name: 'ada-two' })
  })

  it('takes an empty body as no change', async () => {
    const t = await member()
    const intern = await create(t, { name: 'ada' })
    for (const init of [{ json: {} }, { body: '' }]) {
      const response = await t.call('PATCH', `/interns/${intern.id}`, init)
      expect(response.status).toBe(200)
      expect(await readJson(response)).toMatchObject({ ...intern, updated_at: expect.any(String) })
    }
  })

  it('accepts the bounds and refuses what is out of them with 400', async () => {
    const t = await member()
    const intern = await create(t, { name: 'ada' })
    const patch = (json: unknown) => t.call('PATCH', `/interns/${intern.id}`, { json })
    expect((await readJson(await patch({ model: `a/${'b'.repeat(198)}` }))).model).toHaveLength(200)
    expect((await readJson(await patch({ model: 'openai/gpt-4o:beta' }))).model).toBe('openai/gpt-4o:beta')
    expect((await readJson(await patch({ description: 'd'.repeat(2000) }))).description).toHaveLength(2000)
    expect((await readJson(await patch({ instructions: 'i'.repeat(100_000) }))).instructions).toHaveLength(100_000)
    expect((await readJson(await patch({ name: 'ab' }))).name).toBe('ab')
    expect((await readJson(await patch({ name: 'abcdefghijklmnopq' }))).name).toBe('abcdefghijklmnopq')
    const refusals: Array<[unknown, string]> = [
      [{ model: '' }, 'body.model: must not be empty'],
      [{ model: 'gpt-4o' }, 'body.model: must be a model slug <author>/<name>, optionally with :variant'],
      [{ model: `a/${'b'.repeat(199)}` }, 'body.model: must be at most 200 characters'],
      [{ description: 'd'.repeat(2001) }, 'body.description: must be at most 2000 characters'],
      [{ instructions: 'i'.repeat(100_001) }, 'body.instructions: must be at most 100000 characters'],
      [{ name: 'a' }, 'body.name: must be 2 to 17 characters'],
      [{ name: 'abcdefghijklmnopqr' }, 'body.name: must be 2 to 17 characters'],
      [{ name: 'Ada' }, 'body.name: must be lowercase letters and digits in hyphen-separated words, starting with a letter'],
      [{ name: null }, 'body.name: expected string'],
    ]
    for (const [json, message] of refusals) await expectInternError(await patch(json), 400, message, 'invalid_body')
    expect(await readJson(await t.call('GET', `/interns/${intern.id}`))).toMatchObject({ name: 'abcdefghijklmnopq', model: 'openai/gpt-4o:beta' })
  })

  it('answers 409 name_taken for a name used by another intern, and takes its own name', async () => {
    const t = await member()
    const ada = await create(t, { name: 'ada' })
    await create(t, { name: 'bob' })
    await expectInternError(
      await t.call('PATCH', `/interns/${ada.id}`, { json: { name: 'bob' } }),
      409,
      'An intern named "bob" already exists in this workspace',
      'name_taken',
    )
    expect((await t.call('PATCH', `/interns/${ada.id}`, { json: { name: 'ada' } })).status).toBe(200)
    // The old name is free after a rename.
    await t.call('PATCH', `/interns/${ada.id}`, { json: { name: 'ada-two' } })
    expect((await create(t, { name: 'ada', description: 'new' })).name).toBe('ada')
  })

  it('applies the body limit and media type rules', async () => {
    const t = await member()
    const intern = await create(t, { name: 'ada' })
    const head = '{"description":"d"'
    const exact = `${head}${' '.repeat(MIB - head.length - 1)}}`
    const headers = { 'content-type': 'application/json' }
    expect((await t.call('PATCH', `/interns/${intern.id}`, { body: exact, headers })).status).toBe(200)
    await expectInternError(
      await t.call('PATCH', `/interns/${intern.id}`, { body: `${exact} `, headers }),
      413,
      'Request body exceeds the limit of 1048576 bytes',
      'payload_too_large',
    )
    await expectInternError(
      await t.call('PATCH', `/interns/${intern.id}`, { body: '{}', headers: { 'content-type': 'text/plain' } }),
      415,
      'Content-Type must be application/json',
      'unsupported_media_type',
    )
    await expectInternError(
      await t.call('PATCH', `/interns/${intern.id}`, { body: '{"name":}', headers }),
      400,
      'Malformed JSON in request body at line 1, column 9: expected a value',
      'invalid_body',
    )
  })

  it('answers 404 for an unknown intern', async () => {
    const t = await member()
    await expectInternError(await t.call('PATCH', `/interns/${MISSING_ID}`, { json: { description: 'x' } }), 404, 'Intern not found', 'not_found')
  })

  it('times out after 10 seconds with 408 timeout (retryable)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const faulty = faultyStorage()
    const t = await memberWith({ storage: faulty.storage })
    const intern = await create(t, { name: 'ada' })
    const slow = gate()
    const reached = faulty.hold('update', 'interns', slow.promise)
    const pending = t.call('PATCH', `/interns/${intern.id}`, { json: { description: 'late' } })
    await reached
    await vi.advanceTimersByTimeAsync(10_000)
    await expectInternError(await pending, 408, 'The request timed out after 10 seconds', 'timeout', true)
    slow.open()
    await waitForIntern(t, intern.id, (current) => current.description === 'late')
  })

  it('changes the model in reads at once; the running intern keeps its model until the next provision', async () => {
    const { runtime, calls } = controlledRuntime()
    const t = await memberWith({ internRuntime: runtime })
    const intern = await create(t, { name: 'ada', model: 'openai/gpt-4o', provision: true })
    await waitForIntern(t, intern.id, (current) => current.status === 'running')
    const patched = await readJson(await t.call('PATCH', `/interns/${intern.id}`, { json: { model: 'anthropic/claude-sonnet-4.5' } }))
    expect(patched).toMatchObject({ model: 'anthropic/claude-sonnet-4.5', status: 'running' })
    expect((await readJson(await t.call('GET', `/interns/${intern.id}`))).model).toBe('anthropic/claude-sonnet-4.5')
    expect((await t.call('POST', `/interns/${intern.id}/suspend`)).status).toBe(200)
    // Suspension happens to the intern as it runs: with the model it was provisioned with.
    expect(calls.at(-1)).toMatchObject({ action: 'suspend', intern: { model: 'openai/gpt-4o' } })
    expect((await t.call('POST', `/interns/${intern.id}/provision`)).status).toBe(202)
    await waitForIntern(t, intern.id, (current) => current.status === 'running')
    expect(calls.at(-1)).toMatchObject({ action: 'provision', intern: { model: 'anthropic/claude-sonnet-4.5' } })
  })
})

describe('intern lifecycle', () => {
  it('provision → 202 {provisioning: true}, running; suspend → 200 {suspended: true}, stopped; provision again', async () => {
    const { runtime, calls } = controlledRuntime()
    const t = await memberWith({ internRuntime: runtime })
    const intern = await create(t, { name: 'ada' })
    const provision = await t.call('POST', `/interns/${intern.id}/provision`)
    expect(provision.status).toBe(202)
    expect(provision.headers.get('content-type')).toBe('application/json')
    expect(await readJson(provision)).toEqual({ provisioning: true })
    const running = await waitForIntern(t, intern.id, (current) => current.status === 'running')
    expect(running.hostname).toBe('ada.sandbox.test')

    const suspend = await t.call('POST', `/interns/${intern.id}/suspend`)
    expect(suspend.status).toBe(200)
    expect(await readJson(suspend)).toEqual({ suspended: true })
    expect(await readJson(await t.call('GET', `/interns/${intern.id}`))).toMatchObject({ status: 'stopped', progress: null })
    expect(calls.map((call) => call.action)).toEqual(['provision', 'suspend'])
    expect(calls[1]!.intern.hostname).toBe('ada.sandbox.test')

    expect((await t.call('POST', `/interns/${intern.id}/provision`)).status).toBe(202)
    await waitForIntern(t, intern.id, (current) => current.status === 'running')
    expect(calls.map((call) => call.action)).toEqual(['provision', 'suspend', 'provision'])
  })

  it('provision is idempotent while queued or provisioning; 409 invalid_transition once running', async () => {
    const { runtime, calls, state } = controlledRuntime()
    const t = await memberWith({ internRuntime: runtime })
    const intern = await create(t, { name: 'ada' })
    state.provisionGate = gate()
    expect((await t.call('POST', `/interns/${intern.id}/provision`)).status).toBe(202)
    expect((await t.call('POST', `/interns/${intern.id}/provision`)).status).toBe(202)
    await waitForIntern(t, intern.id, (current) => current.status === 'provisioning')
    const again = await t.call('POST', `/interns/${intern.id}/provision`)
    expect(again.status).toBe(202)
    expect(await readJson(again)).toEqual({ provisioning: true })
    state.provisionGate.open()
    await waitForIntern(t, intern.id, (current) => current.status === 'running')
    expect(calls.filter((call) => call.action === 'provision')).toHaveLength(1)
    await expectInternError(
      await t.call('POST', `/interns/${intern.id}/provision`),
      409,
      'Cannot provision an intern whose status is running',
      'invalid_transition',
    )
  })

  it('suspend of a stopped intern is 409 invalid_transition', async () => {
    const t = await member()
    const intern = await create(t, { name: 'ada' })
    await expectInternError(
      await t.call('POST', `/interns/${intern.id}/suspend`),
      409,
      'Cannot suspend an intern whose status is stopped',
      'invalid_transition',
    )
  })

  it('suspending while provisioning stops it for good (the runtime is told to stop at its next step)', async () => {
    const { runtime, calls, state } = controlledRuntime()
    const t = await memberWith({ internRuntime: runtime })
    state.provisionGate = gate()
    const intern = await create(t, { name: 'ada', provision: true })
    await waitForIntern(t, intern.id, (current) => current.status === 'provisioning')
    const suspend = await t.call('POST', `/interns/${intern.id}/suspend`)
    expect(suspend.status).toBe(200)
    expect(await readJson(suspend)).toEqual({ suspended: true })
    // Not running yet: nothing to suspend in the runtime.
    expect(calls.map((call) => call.action)).toEqual(['provision'])
    state.provisionGate.open()
    await state.provisionSettled
    for (let turn = 0; turn < 20; turn++) await settle()
    expect(await readJson(await t.call('GET', `/interns/${intern.id}`))).toMatchObject({ status: 'stopped', progress: null, hostname: null })
  })

  it('a provisioning failure ends in failed with last_failure_message; provisioning again recovers', async () => {
    const { runtime, state } = controlledRuntime()
    const t = await memberWith({ internRuntime: runtime })
    state.provisionError = 'sandbox quota exceeded'
    const intern = await create(t, { name: 'ada', provision: true })
    const failed = await waitForIntern(t, intern.id, (current) => current.status === 'failed')
    expect(failed).toMatchObject({ last_failure_message: 'sandbox quota exceeded', progress: null, hostname: null })
    await expectInternError(
      await t.call('POST', `/interns/${intern.id}/suspend`),
      409,
      'Cannot suspend an intern whose status is failed',
      'invalid_transition',
    )
    state.provisionError = null
    expect((await t.call('POST', `/interns/${intern.id}/provision`)).status).toBe(202)
    const running = await waitForIntern(t, intern.id, (current) => current.status === 'running')
    expect(running).toMatchObject({ last_failure_message: null, progress: null, hostname: 'ada.sandbox.test' })
  })

  it('DELETE → 202 {deleting: true}; the intern and its vault disappear', async () => {
    const { runtime, calls, state } = controlledRuntime()
    const t = await memberWith({ internRuntime: runtime })
    const intern = await create(t, { name: 'ada', provision: true })
    await waitForIntern(t, intern.id, (current) => current.status === 'running')
    state.destroyGate = gate()
    const response = await t.call('DELETE', `/interns/${intern.id}`)
    expect(response.status).toBe(202)
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(await readJson(response)).toEqual({ deleting: true })
    expect((await readJson(await t.call('GET', `/interns/${intern.id}`))).status).toBe('destroying')
    // Deleting again while destroying is accepted and starts nothing new.
    expect(await readJson(await t.call('DELETE', `/interns/${intern.id}`))).toEqual({ deleting: true })
    await expectInternError(
      await t.call('POST', `/interns/${intern.id}/provision`),
      409,
      'Cannot provision an intern whose status is destroying',
      'invalid_transition',
    )
    state.destroyGate.open()
    await waitForGone(t, intern.id)
    expect(calls.filter((call) => call.action === 'destroy')).toHaveLength(1)
    await expectInternError(await t.call('GET', `/interns/${intern.id}`), 404, 'Intern not found', 'not_found')
    await expectInternError(await t.call('DELETE', `/interns/${intern.id}`), 404, 'Intern not found', 'not_found')
    expect(await t.gateway.storage.get('vaults', intern.vault_id)).toBeNull()
    expect((await readJson(await t.call('GET', '/interns'))).data).toEqual([])
    // The name is free again.
    expect((await create(t, { name: 'ada', description: 'second' })).name).toBe('ada')
  })

  it('a runtime that cannot destroy leaves destroy_failed with last_failure_message; DELETE again finishes', async () => {
    const { runtime, state } = controlledRuntime()
    const t = await memberWith({ internRuntime: runtime })
    const intern = await create(t, { name: 'ada' })
    state.destroyError = 'sandbox unreachable'
    expect((await t.call('DELETE', `/interns/${intern.id}`)).status).toBe(202)
    const failed = await waitForIntern(t, intern.id, (current) => current.status === 'destroy_failed')
    expect(failed.last_failure_message).toBe('sandbox unreachable')
    expect(await t.gateway.storage.get('vaults', intern.vault_id)).not.toBeNull()
    expect((await readJson(await t.call('GET', '/interns?status=destroy_failed'))).data.map((row: any) => row.id)).toEqual([intern.id])
    state.destroyError = null
    expect((await t.call('DELETE', `/interns/${intern.id}`)).status).toBe(202)
    await waitForGone(t, intern.id)
    expect(await t.gateway.storage.get('vaults', intern.vault_id)).toBeNull()
  })

  it('answers 404 for lifecycle routes on an unknown intern', async () => {
    const t = await member()
    for (const [method, path] of [
      ['POST', `/interns/${MISSING_ID}/provision`],
      ['POST', `/interns/${MISSING_ID}/suspend`],
      ['DELETE', `/interns/${MISSING_ID}`],
      ['GET', `/interns/${MISSING_ID}`],
    ] as const) {
      await expectInternError(await t.call(method, path), 404, 'Intern not found', 'not_found')
    }
  })
})

describe('POST /interns/{internId}/chat input', () => {
  /** `{"a":{"a":…{}}}`, `depth` objects deep, as text: `JSON.stringify` itself overflows on 5,000 levels. */
  const nested = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`
  const chatWith = (t: Harness, id: string, extra: string) =>
    t.call('POST', `/interns/${id}/chat`, {
      key: t.regularKey,
      body: `{"input":[{"type":"message","role":"user","content":"hi","extra":${extra}}]}`,
      headers: { 'content-type': 'application/json' },
    })

  it('refuses items nested deeper than 128 levels with 400 naming the field, before anything runs', async () => {
    const t = await member()
    const intern = await create(t, { name: 'ada' })
    await expectInternError(await chatWith(t, intern.id, nested(5_000)), 400, 'body.input.0.extra: must not nest deeper than 128 levels', 'invalid_body')
    // 128 levels pass validation; this intern is not running, which is the next thing checked.
    const accepted = await chatWith(t, intern.id, nested(128))
    expect(accepted.status).toBe(409)
    expect((await readJson(accepted)).error.metadata.reason).toBe('not_running')
  })
})
