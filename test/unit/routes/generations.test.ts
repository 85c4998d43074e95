/**
 * The usage ledger end to end in one process: every served request leaves one record, written before the client
 * sees the end, readable by `GET /generation` (its key, or a management key of its account) and summed by
 * `GET /activity`.
 */

import { afterEach, describe, expect, it, vi } from 'vitest'
import { createTestGateway, gate, scriptedProvider, TEST_MODEL, type ScriptedAnswer, type TestGateway, type TestGatewayOptions } from '../../../src/testing'
import type { GenerationRecord } from '../../../src/repositories/generations'
import { bodyReader, sseEventsOf } from '../../helpers/interrupted-stream'

let harness: TestGateway | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const ANSWER: ScriptedAnswer = [
  { type: 'text', text: ['Paris ', 'is the capital.'] },
  { type: 'usage', inputTokens: 12, outputTokens: 7, reasoningTokens: 2, cachedTokens: 4 },
]

const start = async (options: TestGatewayOptions = {}) => {
  harness = await createTestGateway({ providers: { alpha: scriptedProvider({ reply: ANSWER, displayName: 'Alpha AI' }) }, ...options })
  return harness
}

const generation = (id: string, key = harness!.regularKey) => harness!.call('GET', `/generation?id=${encodeURIComponent(id)}`, { key })

const storedRecords = async () => (await harness!.gateway.storage.list<GenerationRecord>('generations')).items.map((item) => item.data)

const NOT_FOUND = { error: { code: 404, message: 'Generation not found' } }

describe('GET /generation', () => {
  it('returns a whole answer in the shape of OpenRouter, with the cost the caller was told', async () => {
    await start()
    const response = await harness!.responses({ model: TEST_MODEL, input: 'Capital of France?', user: 'end-user-7', trace: { trace_id: 't-1', span_name: 'ask' } }, { headers: { 'x-session-id': 'session-42' } })
    const answer = await response.json()
    const found = await generation(answer.id)
    expect(found.status).toBe(200)
    const { data } = await found.json()
    expect(data).toMatchObject({
      id: answer.id,
      api_type: 'completions',
      model: TEST_MODEL,
      provider_name: 'Alpha AI',
      is_byok: false,
      streamed: false,
      cancelled: false,
      finish_reason: 'stop',
      native_finish_reason: 'completed',
      tokens_prompt: 12,
      tokens_completion: 7,
      native_tokens_prompt: 12,
      native_tokens_completion: 7,
      native_tokens_reasoning: 2,
      native_tokens_cached: 4,
      total_cost: answer.usage.cost,
      usage: answer.usage.cost,
      upstream_inference_cost: null,
      workspace_id: harness!.defaultWorkspaceId,
      request_id: response.headers.get('x-request-id'),
      status: 'completed',
      error_type: null,
      trace: { trace_id: 't-1', span_name: 'ask' },
      routing: { requested: TEST_MODEL, strategy: 'direct', attempts: 1, endpoints_planned: 1 },
      provider_responses: [{ endpoint_id: 'alpha:test-model', provider_name: 'Alpha AI', model_permaslug: TEST_MODEL, is_byok: false, status: 200 }],
    })
    expect(answer.usage.cost).toBeGreaterThan(0)
    // Hashed as the gateway hashes them elsewhere: never the caller's own identifiers.
    expect(data.external_user).toMatch(/^mg_[0-9a-f]{32}$/)
    expect(data.session_id).toMatch(/^mgs_[0-9a-f]{32}$/)
    expect(JSON.stringify(data)).not.toContain('end-user-7')
    expect(JSON.stringify(data)).not.toContain('session-42')
    expect(data.latency).toBeGreaterThanOrEqual(0)
    expect(data.time_to_first_token).toBeNull()
    expect(new Date(data.created_at).toISOString()).toBe(data.created_at)
  })

  it('finds a streamed answer as soon as the client saw its end, with the time to its first token', async () => {
    await start()
    const text = await (await harness!.responses({ model: TEST_MODEL, input: 'hi', stream: true })).text()
    const completed = sseEventsOf(text).find((event) => event.type === 'response.completed')
    const { data } = await (await generation(completed.response.id)).json()
    expect(data).toMatchObject({ streamed: true, status: 'completed', total_cost: completed.response.usage.cost, tokens_completion: 7 })
    expect(data.time_to_first_token).toBeGreaterThanOrEqual(0)
    expect(data.generation_time).toBeGreaterThanOrEqual(0)
  })

  it('takes the ids /chat/completions and /messages answered with', async () => {
    await start()
    const chat = await (await harness!.call('POST', '/chat/completions', { key: harness!.regularKey, json: { model: TEST_MODEL, messages: [{ role: 'user', content: 'hi' }] } })).json()
    expect(chat.id).toMatch(/^gen-/)
    const chatRecord = await (await generation(chat.id)).json()
    expect(chatRecord.data).toMatchObject({ id: chat.id, total_cost: chat.usage.cost })
    const message = await (
      await harness!.call('POST', '/messages', { key: harness!.regularKey, json: { model: TEST_MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] } })
    ).json()
    expect(message.id).toMatch(/^msg_/)
    expect((await generation(message.id)).status).toBe(200)
    expect((await storedRecords()).map((record) => record.api).sort()).toEqual(['chat_completions', 'messages'])
  })

  it('shows a generation to its key and to management keys of its account, and the same 404 to everyone else', async () => {
    await start()
    const answer = await (await harness!.responses({ model: TEST_MODEL, input: 'hi' })).json()
    const sibling = await harness!.gateway.admin.createKey({ kind: 'regular', name: 'sibling' })
    const other = await harness!.gateway.admin.createAccount({ name: 'other', slug: 'other' })
    const stranger = await harness!.gateway.admin.createKey({ kind: 'management', name: 'stranger', accountId: other.account.id })
    expect((await generation(answer.id, harness!.managementKey)).status).toBe(200)
    for (const key of [sibling.key, stranger.key]) {
      const refused = await generation(answer.id, key)
      expect(refused.status).toBe(404)
      expect(await refused.json()).toEqual(NOT_FOUND)
    }
    const absent = await generation('resp_0123456789abcdef0123456789abcdef0123456789abcdef')
    expect(absent.status).toBe(404)
    expect(await absent.json()).toEqual(NOT_FOUND)
  })

  it('refuses a missing id and unknown query parameters', async () => {
    await start()
    const missing = await harness!.call('GET', '/generation', { key: harness!.regularKey })
    expect(missing.status).toBe(400)
    expect(await missing.json()).toEqual({ error: { code: 400, message: 'query.id: is required' } })
    const unknown = await harness!.call('GET', '/generation?id=resp_x&include=content', { key: harness!.regularKey })
    expect(unknown.status).toBe(400)
    expect((await unknown.json()).error.message).toMatch(/^query\.include: /)
  })

  it('records the attempts of a fallback, and a request every attempt failed under an id of its own', async () => {
    harness = await createTestGateway({
      providers: {
        alpha: scriptedProvider({ replies: [[{ type: 'http_error', status: 500 }], [{ type: 'http_error', status: 500 }]] }),
        beta: scriptedProvider({ replies: [ANSWER, [{ type: 'http_error', status: 429, errorType: 'rate_limit_exceeded' }]] }),
      },
      outlierDetection: false,
    })
    const served = await (await harness.responses({ model: TEST_MODEL, input: 'hi' })).json()
    const { data } = await (await generation(served.id)).json()
    expect(data.provider_responses.map((attempt: { endpoint_id: string; status: number }) => [attempt.endpoint_id, attempt.status])).toEqual([
      ['alpha:test-model', 500],
      ['beta:test-model', 200],
    ])
    expect(data.routing).toMatchObject({ strategy: 'fallback', attempts: 2 })

    const failed = await harness.responses({ model: TEST_MODEL, input: 'hi' })
    expect(failed.status).toBe(429)
    const records = await storedRecords()
    const failure = records.find((record) => record.status === 'failed')
    expect(failure).toMatchObject({ httpStatus: 429, errorType: 'rate_limit_exceeded', cost: 0, provider: null, finishReason: 'error' })
    expect(failure!.attempts.map((attempt) => attempt.status)).toEqual([500, 429])
    expect(records).toHaveLength(2)
  })

  it('records a stream the client stopped as cancelled, with output tokens estimated from the text it was sent', async () => {
    const stall = gate()
    harness = await createTestGateway({
      providers: { alpha: scriptedProvider({ reply: [{ type: 'text', text: 'Twelve chars' }, { type: 'wait', until: stall }, { type: 'text', text: ' never sent' }] }) },
    })
    const response = await harness.responses({ model: TEST_MODEL, input: 'hi', stream: true })
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = ''
    while (!text.includes('response.output_text.delta')) text += decoder.decode((await reader.read()).value)
    const id = sseEventsOf(text.slice(0, text.lastIndexOf('\n\n') + 2)).find((event) => event.type === 'response.created').response.id
    await reader.cancel()
    await vi.waitFor(async () => expect((await generation(id)).status).toBe(200))
    const { data } = await (await generation(id)).json()
    // "Twelve chars" is 12 characters: 3 tokens at four characters a token; the prompt `"hi"` (4 in JSON) 1.
    expect(data).toMatchObject({ cancelled: true, status: 'cancelled', is_usage_estimated: true, tokens_completion: 3, tokens_prompt: 1, finish_reason: null })
    expect(data.total_cost).toBeCloseTo(1 * 0.000001 + 3 * 0.000002, 12)
  })

  it('records intern chat turns', async () => {
    harness = await createTestGateway({ providers: { alpha: scriptedProvider({ reply: ANSWER }) } })
    await harness.gateway.admin.setAccountFlags(undefined, { interns: true })
    const call = (method: string, path: string, json?: unknown) => harness!.call(method, path, { key: harness!.regularKey, ...(json === undefined ? {} : { json }) })
    const created = await (await call('POST', '/interns', { name: 'ada', model: TEST_MODEL, provision: true })).json()
    await vi.waitFor(async () => expect((await (await call('GET', `/interns/${created.id}`)).json()).status).toBe('running'))
    const text = await (await call('POST', `/interns/${created.id}/chat`, { input: 'Book me a flight' })).text()
    const completed = sseEventsOf(text).find((event) => event.type === 'response.completed')
    const records = await storedRecords()
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ id: completed.response.id, api: 'intern_chat', isStreamed: true, cost: completed.response.usage.cost })
  })

  it('hides records past retention', async () => {
    let now = new Date('2025-03-01T12:00:00.000Z')
    await start({ now: () => now, ledger: { retentionDays: 2 } })
    const answer = await (await harness!.responses({ model: TEST_MODEL, input: 'hi' })).json()
    now = new Date('2025-03-03T11:59:59.000Z')
    expect((await generation(answer.id)).status).toBe(200)
    now = new Date('2025-03-03T12:00:01.000Z')
    expect(await (await generation(answer.id)).json()).toEqual(NOT_FOUND)
  })
})

describe('GET /activity', () => {
  const activity = (query = '', key = harness!.managementKey) => harness!.call('GET', `/activity${query}`, { key })

  it('sums requests, tokens and cost per UTC day, model and endpoint, filtered by key, user and date', async () => {
    let now = new Date('2025-03-01T23:59:00.000Z')
    await start({ now: () => now })
    const other = await harness!.gateway.admin.createKey({ kind: 'regular', name: 'other', creatorUserId: 'user-b' })
    const first = await (await harness!.responses({ model: TEST_MODEL, input: 'a' })).json()
    const second = await (await harness!.responses({ model: TEST_MODEL, input: 'b' }, { key: other.key })).json()
    now = new Date('2025-03-02T00:01:00.000Z')
    const third = await (await harness!.responses({ model: TEST_MODEL, input: 'c' })).json()

    const all = await activity()
    expect(all.status).toBe(200)
    const row = { model: TEST_MODEL, model_permaslug: TEST_MODEL, endpoint_id: 'alpha:test-model', provider_name: 'Alpha AI', byok_usage_inference: 0, cache_hits: 0 }
    expect((await all.json()).data).toEqual([
      { ...row, date: '2025-03-02', requests: 1, prompt_tokens: 12, completion_tokens: 7, reasoning_tokens: 2, usage: third.usage.cost },
      { ...row, date: '2025-03-01', requests: 2, prompt_tokens: 24, completion_tokens: 14, reasoning_tokens: 4, usage: first.usage.cost + second.usage.cost },
    ])
    const byKey = await (await activity(`?api_key_hash=${other.record.hash}`)).json()
    expect(byKey.data).toEqual([expect.objectContaining({ date: '2025-03-01', requests: 1, usage: second.usage.cost })])
    const byUser = await (await activity('?user_id=user-b')).json()
    expect(byUser.data).toEqual(byKey.data)
    const oneDay = await (await activity('?date=2025-03-02&group_by=workspace')).json()
    expect(oneDay.data).toEqual([{ ...row, date: '2025-03-02', workspace_id: harness!.defaultWorkspaceId, requests: 1, prompt_tokens: 12, completion_tokens: 7, reasoning_tokens: 2, usage: third.usage.cost }])
    const inWorkspace = await (await activity(`?workspace_id=${harness!.defaultWorkspaceId}`)).json()
    expect(inWorkspace.data).toHaveLength(2)
  })

  it('refuses regular keys, dates outside retention, unknown parameters and foreign workspaces', async () => {
    const now = new Date('2025-03-31T10:00:00.000Z')
    await start({ now: () => now })
    expect((await activity('', harness!.regularKey)).status).toBe(403)
    expect(await (await activity('?date=2025-02-28')).json()).toEqual({ error: { code: 400, message: 'query.date: must be a day within the last 30 days' } })
    expect((await activity('?date=2025-04-01')).status).toBe(400)
    expect((await activity('?date=2025-02-30')).status).toBe(400)
    expect((await activity('?date=2025-03-01')).status).toBe(200)
    expect((await activity('?group_by=model')).status).toBe(400)
    expect((await activity('?limit=5')).status).toBe(400)
    expect(await (await activity('?workspace_id=00000000-0000-4000-8000-000000000000')).json()).toEqual({ error: { code: 404, message: 'Workspace not found' } })
  })
})
