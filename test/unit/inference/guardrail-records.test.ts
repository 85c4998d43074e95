/**
 * Guardrail refusals in the usage ledger (docs/decisions.md, Guardrails → Records): a content filter's block, routing
 * rules that leave no endpoint and a budget each leave one failed generation record, written before the refusal is
 * answered, named by `error.metadata.generation_id`, readable by `GET /generation` and counted by `GET /activity`, on
 * every route guardrails govern.
 */

import { afterEach, describe, expect, it, vi } from 'vitest'
import type { GenerationRecord } from '../../../src/repositories/generations'
import { memoryStorage } from '../../../src/storage/memory'
import type { StorageDriver } from '../../../src/storage/contract'
import { createRecordingLogger } from '../../helpers/logger'
import { createTestGateway, scriptedProvider, TEST_MODEL, type ScriptedProvider, type TestGateway } from '../../../src/testing'

let t: TestGateway
let storage: StorageDriver
let alpha: ScriptedProvider
afterEach(() => t?.close())

const start = async (options: { logger?: ReturnType<typeof createRecordingLogger>['logger'] } = {}) => {
  storage = memoryStorage()
  alpha = scriptedProvider({ reply: [{ type: 'text', text: 'Hello' }, { type: 'usage', inputTokens: 5, outputTokens: 2 }] })
  t = await createTestGateway({ storage, providers: { alpha }, ...(options.logger ? { logger: options.logger } : {}) })
}

/** Creates a guardrail with `rules` and assigns the regular key to it; resolves its id. */
const guardKey = async (rules: Record<string, unknown>): Promise<string> => {
  const created = await (await t.call('POST', '/guardrails', { json: { name: 'Key policy', ...rules } })).json()
  expect(created.data?.id, JSON.stringify(created)).toBeDefined()
  expect((await t.call('POST', `/guardrails/${created.data.id}/assignments/keys`, { json: { key_hashes: [t.regularKeyHash] } })).status).toBe(200)
  return created.data.id
}

const storedRecords = async () => (await storage.list<GenerationRecord>('generations')).items.map((item) => item.data)

const generation = (id: string, key = t.regularKey) => t.call('GET', `/generation?id=${encodeURIComponent(id)}`, { key })

/** What every refusal's record holds: nothing served, nothing spent, no attempt. */
const REFUSED = {
  status: 'failed',
  provider: null,
  endpoint: null,
  attempts: [],
  cost: 0,
  upstreamCost: null,
  byokFee: 0,
  tokens: { input: 0, output: 0, cached: 0, reasoning: 0 },
  isUsageEstimated: false,
  finishReason: 'error',
  nativeFinishReason: 'failed',
} as const

describe('an input block in the usage ledger', () => {
  it('leaves one failed record, named by the 403, that GET /generation shows to its key and its account only', async () => {
    await start()
    const id = await guardKey({ content_filter_builtins: [{ slug: 'email', action: 'block' }, { slug: 'ssn', action: 'block' }] })
    const response = await t.responses({ model: TEST_MODEL, input: 'Mail jane.doe@example.com, SSN 123-45-6789', user: 'end-user-9', trace: { trace_id: 'tr-1' } })
    expect(response.status).toBe(403)
    const { error } = await response.json()
    const generationId = error.metadata.generation_id
    expect(generationId).toMatch(/^resp_[0-9a-f]{48}$/)
    expect(alpha.calls).toHaveLength(0)

    const records = await storedRecords()
    expect(records).toEqual([
      {
        ...REFUSED,
        id: generationId,
        createdAt: expect.any(String),
        requestId: response.headers.get('x-request-id'),
        accountId: expect.any(String),
        workspaceId: t.defaultWorkspaceId,
        keyHash: t.regularKeyHash,
        userId: expect.any(String),
        api: 'responses',
        requestedModel: TEST_MODEL,
        model: TEST_MODEL,
        isByok: false,
        isStreamed: false,
        httpStatus: 403,
        errorType: 'guardrail_blocked',
        latencyMs: expect.any(Number),
        timeToFirstTokenMs: null,
        generationTimeMs: null,
        endUser: expect.stringMatching(/./),
        session: null,
        trace: { trace_id: 'tr-1' },
        presetId: null,
        routing: { requested: TEST_MODEL, strategy: 'direct', attempts: 0, endpointsPlanned: 0, region: 'default' },
        guardrails: [{ guardrailId: id, scope: 'key', direction: 'input', action: 'block', patterns: ['email', 'ssn'], matches: 2 }],
      },
    ])
    // The record names what matched, never the match.
    expect(JSON.stringify(records)).not.toMatch(/jane|6789/)

    const found = await generation(generationId)
    expect(found.status).toBe(200)
    expect((await found.json()).data).toMatchObject({
      id: generationId,
      status: 'failed',
      error_type: 'guardrail_blocked',
      total_cost: 0,
      usage: 0,
      tokens_prompt: 0,
      tokens_completion: 0,
      provider_name: null,
      provider_responses: [],
      finish_reason: 'error',
      guardrails: [{ guardrail_id: id, scope: 'key', direction: 'input', action: 'block', patterns: ['email', 'ssn'], matches: 2 }],
    })
    expect((await generation(generationId, t.managementKey)).status).toBe(200)
    const other = await t.gateway.admin.createKey({ kind: 'regular', name: 'other' })
    expect(await (await generation(generationId, other.key)).json()).toEqual({ error: { code: 404, message: 'Generation not found' } })
  })

  it('is counted by GET /activity: one request, no tokens, no cost, under no endpoint', async () => {
    await start()
    await guardKey({ content_filter_builtins: [{ slug: 'email', action: 'block' }] })
    expect((await t.responses({ model: TEST_MODEL, input: 'to a@example.com' })).status).toBe(403)
    expect((await t.responses({ model: TEST_MODEL, input: 'hello' })).status).toBe(200)
    const { data } = await (await t.call('GET', '/activity')).json()
    const row = { date: expect.any(String), model: TEST_MODEL, model_permaslug: TEST_MODEL, byok_usage_inference: 0, cache_hits: 0 }
    expect(data).toEqual([
      { ...row, endpoint_id: '', provider_name: '', requests: 1, prompt_tokens: 0, completion_tokens: 0, reasoning_tokens: 0, usage: 0 },
      { ...row, endpoint_id: 'alpha:test-model', provider_name: expect.any(String), requests: 1, prompt_tokens: 5, completion_tokens: 2, reasoning_tokens: 0, usage: expect.any(Number) },
    ])
  })

  it('keeps redactions and flags the scan found beside the block, and records a streamed request as streamed', async () => {
    await start()
    const id = await guardKey({
      content_filter_builtins: [
        { slug: 'email', action: 'redact' },
        { slug: 'ssn', action: 'block' },
      ],
    })
    const response = await t.responses({ model: TEST_MODEL, input: 'a@example.com b@example.com 123-45-6789', stream: true })
    expect(response.status).toBe(403)
    const [record] = await storedRecords()
    expect(record).toMatchObject({ isStreamed: true, httpStatus: 403 })
    expect(record!.guardrails).toEqual([
      { guardrailId: id, scope: 'key', direction: 'input', action: 'redact', patterns: ['email'], matches: 2 },
      { guardrailId: id, scope: 'key', direction: 'input', action: 'block', patterns: ['ssn'], matches: 1 },
    ])
  })

  it('answers the 403 without an id when the record cannot be written, and logs the loss', async () => {
    const log = createRecordingLogger()
    await start({ logger: log.logger })
    await guardKey({ content_filter_builtins: [{ slug: 'email', action: 'block' }] })
    const createMany = storage.createMany.bind(storage)
    vi.spyOn(storage, 'createMany').mockImplementation(async (collection, items) => {
      if (collection === 'generations') throw new Error('store down')
      return createMany(collection, items)
    })
    const response = await t.responses({ model: TEST_MODEL, input: 'to a@example.com' })
    expect(response.status).toBe(403)
    const { error } = await response.json()
    expect(error.metadata).toEqual({ error_type: 'guardrail_blocked', guardrail_id: expect.any(String), guardrail_scope: 'key', patterns: ['email'] })
    expect(log.entries.map((entry) => entry.message)).toContain('usage ledger: record of a guardrail refusal lost')
  })
})

describe('routing rules and budgets in the usage ledger', () => {
  it('a guardrail that leaves no endpoint: one record with the 404, naming the rules that refused', async () => {
    await start()
    const id = await guardKey({ ignored_providers: ['alpha'], enforce_zdr_other: true })
    const response = await t.responses({ model: TEST_MODEL, input: 'hi' })
    expect(response.status).toBe(404)
    const generationId = (await response.json()).error.metadata.generation_id
    expect(await storedRecords()).toEqual([
      expect.objectContaining({
        ...REFUSED,
        id: generationId,
        httpStatus: 404,
        errorType: 'not_found',
        requestedModel: TEST_MODEL,
        guardrails: [{ guardrailId: id, scope: 'key', direction: 'input', action: 'block', patterns: ['ignored_providers', 'enforce_zdr_other'], matches: 0 }],
      }),
    ])
    expect((await generation(generationId)).status).toBe(200)
  })

  it('a guardrail budget: one record with the 402, naming limit_usd', async () => {
    await start()
    const id = await guardKey({ limit_usd: 0.01, reset_interval: 'daily' })
    const response = await t.responses({ model: TEST_MODEL, input: 'hi' })
    expect(response.status).toBe(402)
    const generationId = (await response.json()).error.metadata.generation_id
    expect(await storedRecords()).toEqual([
      expect.objectContaining({
        ...REFUSED,
        id: generationId,
        httpStatus: 402,
        errorType: 'payment_required',
        routing: expect.objectContaining({ attempts: 0, endpointsPlanned: 1 }),
        guardrails: [{ guardrailId: id, scope: 'key', direction: 'input', action: 'block', patterns: ['limit_usd'], matches: 0 }],
      }),
    ])
    expect(alpha.calls).toHaveLength(0)
  })

  it('a limit that is not a guardrail\'s leaves no record, as before', async () => {
    await start()
    await t.call('PATCH', `/keys/${t.regularKeyHash}`, { json: { limit: 0.01 } })
    expect((await t.responses({ model: TEST_MODEL, input: 'hi' })).status).toBe(402)
    expect(await storedRecords()).toEqual([])
  })

  it('an output block names its record too', async () => {
    alpha = scriptedProvider({ reply: 'Mail me at a@example.com' })
    storage = memoryStorage()
    t = await createTestGateway({ storage, providers: { alpha } })
    await guardKey({ content_filter_builtins: [{ slug: 'email', action: 'block' }] })
    const response = await t.responses({ model: TEST_MODEL, input: 'Where do I write?' })
    expect(response.status).toBe(403)
    const generationId = (await response.json()).error.metadata.generation_id
    const records = await storedRecords()
    expect(records.map((record) => [record.id, record.httpStatus, record.guardrails?.map((event) => event.direction)])).toEqual([[generationId, 403, ['output']]])
  })
})

describe('every route guardrails govern', () => {
  it('/chat/completions: the block names its record, of api chat_completions', async () => {
    await start()
    await guardKey({ content_filter_builtins: [{ slug: 'email', action: 'block' }] })
    const response = await t.call('POST', '/chat/completions', { key: t.regularKey, json: { model: TEST_MODEL, messages: [{ role: 'user', content: 'to a@example.com' }] } })
    expect(response.status).toBe(403)
    const generationId = (await response.json()).error.metadata.generation_id
    expect((await (await generation(generationId)).json()).data).toMatchObject({ id: generationId, error_type: 'guardrail_blocked' })
    expect(await storedRecords()).toEqual([expect.objectContaining({ id: generationId, api: 'chat_completions', httpStatus: 403 })])
  })

  it('/messages: Anthropic\'s error body has no room for the id, but the block is recorded, of api messages', async () => {
    await start()
    await guardKey({ content_filter_builtins: [{ slug: 'email', action: 'block' }] })
    const response = await t.call('POST', '/messages', { key: t.regularKey, json: { model: TEST_MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'to a@example.com' }] } })
    expect(response.status).toBe(403)
    expect(await response.json()).toEqual({ type: 'error', error: { type: 'permission_error', message: 'Request blocked by guardrail "Key policy": the input matched email' } })
    expect(await storedRecords()).toEqual([expect.objectContaining({ ...REFUSED, api: 'messages', httpStatus: 403, errorType: 'guardrail_blocked' })])
  })

  it('intern chat: a turn the guardrail blocks is recorded, of api intern_chat', async () => {
    await start()
    await t.gateway.admin.setAccountFlags(undefined, { interns: true })
    const call = (method: string, path: string, json?: unknown) => t.call(method, path, { key: t.regularKey, ...(json === undefined ? {} : { json }) })
    const created = await (await call('POST', '/interns', { name: 'ada', model: TEST_MODEL, provision: true })).json()
    await vi.waitFor(async () => expect((await (await call('GET', `/interns/${created.id}`)).json()).status).toBe('running'))
    const id = await guardKey({ content_filter_builtins: [{ slug: 'email', action: 'block' }] })
    await (await call('POST', `/interns/${created.id}/chat`, { input: 'Write to a@example.com' })).text()
    expect(alpha.calls).toHaveLength(0)
    expect(await storedRecords()).toEqual([
      expect.objectContaining({
        ...REFUSED,
        api: 'intern_chat',
        httpStatus: 403,
        errorType: 'guardrail_blocked',
        guardrails: [expect.objectContaining({ guardrailId: id, action: 'block', patterns: ['email'] })],
      }),
    ])
  })
})
