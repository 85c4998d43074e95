import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { assertValidEventSequence } from '../../helpers/stream-events'
import { fixture, jsonFixture, sseFixture } from '../../helpers/upstream'

const REQUIRED_FIELDS = [
  'id', 'object', 'created_at', 'completed_at', 'status', 'error', 'incomplete_details', 'instructions',
  'max_output_tokens', 'metadata', 'model', 'output', 'parallel_tool_calls', 'temperature', 'top_p', 'presence_penalty',
  'frequency_penalty', 'tool_choice', 'tools', 'prompt', 'prompt_cache_options', 'reasoning', 'service_tier', 'text', 'usage',
]

/** Two custom chat-completions providers serving one test model, cheapest (alpha) first. */
const TWO_PROVIDER_MODELS: ModelEntry[] = [
  {
    slug: 'test/model',
    name: 'Test model',
    endpoints: [
      { provider: 'alpha', model: 'alpha-model', contextLength: 8192, pricing: { prompt: 0.000001, completion: 0.000002 } },
      { provider: 'beta', model: 'beta-model', contextLength: 8192, pricing: { prompt: 0.000002, completion: 0.000004 } },
    ],
  },
  {
    slug: 'test/other',
    name: 'Other test model',
    endpoints: [{ provider: 'beta', model: 'beta-other', contextLength: 8192, pricing: { prompt: 0.000003, completion: 0.000006 } }],
  },
]

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const twoProviders = async (options = {}) =>
  (harness = await createResponsesHarness({ alpha: { api: 'openai-chat' }, beta: { api: 'openai-chat' } }, { models: TWO_PROVIDER_MODELS, ...options }))

describe('POST /responses, non-streaming', () => {
  it('answers with every field of the Response result, priced from the catalog', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => jsonFixture('anthropic', 'text.json'))
    const response = await harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'What is the capital of France?', metadata: { team: 'geo' } })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(Number(response.headers.get('x-modelgate-overhead-ms'))).toBeGreaterThanOrEqual(0)
    const body = await response.json()
    for (const field of REQUIRED_FIELDS) expect(body, field).toHaveProperty(field)
    expect(body).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'anthropic/claude-sonnet-4.5',
      error: null,
      metadata: { team: 'geo' },
      parallel_tool_calls: true,
      tools: [],
      tool_choice: 'auto',
      // Anthropic's `standard`, the tier that served, in the Responses names.
      service_tier: 'default',
    })
    // Absent rather than null without an error: OpenRouter's SDK rejects a null error_type.
    expect(body).not.toHaveProperty('error_type')
    expect(body.id).toMatch(/^resp_/)
    expect(Number.isInteger(body.created_at)).toBe(true)
    expect(body.output).toEqual([
      expect.objectContaining({ type: 'message', role: 'assistant', status: 'completed', content: [expect.objectContaining({ type: 'output_text', text: expect.stringContaining('Paris') })] }),
    ])
    // 14 fresh + 2048 cached input tokens, 38 output tokens at $3 / $0.30 / $15 per million.
    expect(body.usage).toEqual({
      input_tokens: 2062,
      input_tokens_details: { cached_tokens: 2048 },
      output_tokens: 38,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 2100,
      cost: 0.0012264,
      is_byok: false,
      cost_details: { upstream_inference_cost: null, upstream_inference_input_cost: 0.0006564, upstream_inference_output_cost: 0.00057 },
    })
    const sent = harness.upstreams.anthropic!.requests[0]!
    expect(sent.url).toBe('/messages')
    expect(sent.headers['x-api-key']).toBe('sk-shared-anthropic-0123456789abcdef')
    expect(sent.json).toMatchObject({ model: 'claude-sonnet-4-5', messages: [{ role: 'user' }] })
  })

  it('never sends user or safety_identifier upstream raw', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => jsonFixture('anthropic', 'text.json'))
    await harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'hi', user: 'alice@example.com' })
    await harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'hi', user: 'alice@example.com' })
    const [first, second] = harness.upstreams.anthropic!.requests
    expect(first!.text).not.toContain('alice@example.com')
    expect(first!.json.metadata.user_id).toMatch(/^mg_[0-9a-f]{32}$/)
    expect(second!.json.metadata.user_id).toBe(first!.json.metadata.user_id)
  })

  it('falls back to the next endpoint on an error before the first byte, and says so in service_metadata', async () => {
    await twoProviders()
    harness!.upstreams.alpha!.setHandler(() => jsonFixture('openai-chat', 'error-overloaded.json', 503))
    harness!.upstreams.beta!.setHandler(() => jsonFixture('openai-chat', 'text.json'))
    const response = await harness!.post({ model: 'test/model', input: 'hi' }, { 'x-service-metadata': 'enabled' })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body.model).toBe('test/model')
    expect(body.service_metadata).toMatchObject({
      attempt: 2,
      endpoints: {
        available: [
          { model: 'test/model', provider: 'alpha', selected: false },
          { model: 'test/model', provider: 'beta', selected: true },
        ],
        total: 2,
      },
      is_byok: false,
      strategy: 'fallback',
      requested: 'test/model',
      pipeline: [],
    })
    expect(typeof body.service_metadata.generation_time).toBe('number')
    expect(harness!.upstreams.alpha!.requests).toHaveLength(1)
    expect(harness!.upstreams.beta!.requests[0]!.json.model).toBe('beta-model')
    // Priced at the endpoint that served: beta.
    expect(body.usage.cost).toBeCloseTo(14 * 0.000002 + 13 * 0.000004, 12)
  })

  it('accepts the legacy metadata header and omits service_metadata without opt-in', async () => {
    await twoProviders()
    harness!.upstreams.alpha!.setHandler(() => jsonFixture('openai-chat', 'text.json'))
    const legacy = await (await harness!.post({ model: 'test/model', input: 'hi' }, { 'x-service-experimental-metadata': 'enabled' })).json()
    expect(legacy.service_metadata.strategy).toBe('direct')
    const plain = await (await harness!.post({ model: 'test/model', input: 'hi' })).json()
    expect(plain).not.toHaveProperty('service_metadata')
  })

  it('returns the last failure when every endpoint fails, with its canonical error_type', async () => {
    await twoProviders()
    harness!.upstreams.alpha!.setHandler(() => jsonFixture('openai-chat', 'error-429.json', 429))
    harness!.upstreams.beta!.setHandler(() => jsonFixture('openai-chat', 'error-400-context.json', 400))
    const response = await harness!.post({ model: 'test/model', input: 'hi' })
    expect(response.status).toBe(400)
    const body = await response.json()
    expect(body.error.code).toBe(400)
    expect(body.error.metadata).toMatchObject({ error_type: 'context_length_exceeded', provider_name: 'beta' })
    expect(body.error.message).toMatch(/^beta: /)
  })

  it('maps rate limits to 429 with Retry-After, and overloads to 529', async () => {
    await twoProviders({ models: [TWO_PROVIDER_MODELS[1]!] })
    harness!.upstreams.beta!.setHandler(() => ({ ...jsonFixture('openai-chat', 'error-429.json', 429), headers: { 'content-type': 'application/json', 'retry-after': '7' } }))
    const limited = await harness!.post({ model: 'test/other', input: 'hi' })
    expect(limited.status).toBe(429)
    expect(limited.headers.get('retry-after')).toBe('7')
    expect((await limited.json()).error.metadata.error_type).toBe('rate_limit_exceeded')
    harness!.upstreams.beta!.setHandler(() => jsonFixture('openai-chat', 'error-overloaded.json', 529))
    const overloaded = await harness!.post({ model: 'test/other', input: 'hi' })
    expect(overloaded.status).toBe(529)
  })

  it("turns a provider's refusal of the operator's shared key into a 502, never a 401 that blames the caller", async () => {
    await twoProviders({ models: [TWO_PROVIDER_MODELS[1]!] })
    harness!.upstreams.beta!.setHandler(() => jsonFixture('openai-chat', 'error-401.json', 401))
    const response = await harness!.post({ model: 'test/other', input: 'hi' })
    expect(response.status).toBe(502)
    const text = await response.text()
    expect(JSON.parse(text).error).toEqual({ code: 502, message: 'beta is unavailable', metadata: { error_type: 'provider_unavailable', provider_name: 'beta' } })
    expect(text).not.toContain('sk-shared')
  })

  it('moves on to the models fallback list, and bills the model that served', async () => {
    await twoProviders()
    harness!.upstreams.alpha!.setHandler(() => jsonFixture('openai-chat', 'error-overloaded.json', 500))
    harness!.upstreams.beta!.setHandler((request) =>
      request.json.model === 'beta-other' ? jsonFixture('openai-chat', 'text.json') : jsonFixture('openai-chat', 'error-overloaded.json', 500),
    )
    const body = await (await harness!.post({ model: 'test/model', models: ['test/other'], input: 'hi' })).json()
    expect(body.model).toBe('test/other')
    expect(body.usage.cost).toBeCloseTo(14 * 0.000003 + 13 * 0.000006, 12)
  })

  it('honours provider order, only, ignore and allow_fallbacks', async () => {
    await twoProviders()
    harness!.upstreams.alpha!.setHandler(() => jsonFixture('openai-chat', 'error-overloaded.json', 500))
    harness!.upstreams.beta!.setHandler(() => jsonFixture('openai-chat', 'text.json'))
    const ordered = await harness!.post({ model: 'test/model', input: 'hi', provider: { order: ['beta'] } }, { 'x-service-metadata': 'enabled' })
    expect((await ordered.json()).service_metadata.attempt).toBe(1)
    const only = await harness!.post({ model: 'test/model', input: 'hi', provider: { only: ['alpha'] } })
    expect(only.status).toBe(502)
    const ignored = await harness!.post({ model: 'test/model', input: 'hi', provider: { ignore: ['alpha'] } }, { 'x-service-metadata': 'enabled' })
    expect((await ignored.json()).service_metadata.endpoints.total).toBe(1)
    const noFallbacks = await harness!.post({ model: 'test/model', input: 'hi', provider: { allow_fallbacks: false } })
    expect(noFallbacks.status).toBe(502)
    const tooExpensive = await harness!.post({ model: 'test/model', input: 'hi', provider: { max_price: { prompt: 0.5 } } })
    expect(tooExpensive.status).toBe(404)
  })

  it('answers 404 for an unknown model, 403 for a management key, 401 without a key', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    const unknown = await harness.post({ model: 'nobody/nothing', input: 'hi' })
    expect(unknown.status).toBe(404)
    expect((await unknown.json()).error.message).toBe('Model "nobody/nothing" not found')
    const management = await harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'hi' }, { authorization: `Bearer ${harness.managementKey}` })
    expect(management.status).toBe(403)
    const anonymous = await harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'hi' }, { authorization: '' })
    expect(anonymous.status).toBe(401)
  })

  it('uses the workspace default text model when none is given', async () => {
    harness = await createResponsesHarness({ anthropic: {} }, { workspaceDefaults: { textModel: 'anthropic/claude-haiku-4.5' } })
    harness.upstreams.anthropic!.setHandler(() => jsonFixture('anthropic', 'text.json'))
    const body = await (await harness.post({ input: 'hi' })).json()
    expect(body.model).toBe('anthropic/claude-haiku-4.5')
    expect(harness.upstreams.anthropic!.requests[0]!.json.model).toBe('claude-haiku-4-5')
  })
})

describe('POST /responses, streaming', () => {
  it('streams the Responses event sequence and ends with [DONE]', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => sseFixture('anthropic', 'text.sse'))
    const response = await harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'hi', stream: true })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    const { events, text } = await readSseEvents(response)
    expect(events.at(-1)!.data).toBe('[DONE]')
    const payloads = events.slice(0, -1).map((event) => event.data)
    for (const [index, event] of events.slice(0, -1).entries()) expect(event.event).toBe(event.data.type)
    expect(payloads.map((event) => event.sequence_number)).toEqual(payloads.map((_, index) => index))
    expect(payloads[0].type).toBe('response.created')
    expect(payloads[1].type).toBe('response.in_progress')
    expect(payloads.at(-1).type).toBe('response.completed')
    for (const field of REQUIRED_FIELDS) expect(payloads[0].response, field).toHaveProperty(field)
    for (const payload of [payloads[0], payloads[1], payloads.at(-1)]) expect(payload.response).not.toHaveProperty('error_type')
    assertValidEventSequence(payloads)
    expect(text).not.toMatch(/"error":\{/)
    const completed = payloads.at(-1).response
    expect(completed.output[0].content[0].text).toContain('Paris')
  })

  it('relays the item events of an OpenAI Responses stream byte for byte, but for its own sequence_number at the end', async () => {
    harness = await createResponsesHarness({ openai: {} })
    harness.upstreams.openai!.setHandler(() => sseFixture('openai', 'text.sse'))
    const { text } = await readSseEvents(await harness.post({ model: 'openai/gpt-4.1', input: 'hi', stream: true }))
    const sent = fixture('openai', 'text.sse')
      .toString('utf8')
      .split('\n')
      .filter((line) => line.startsWith('data: {"type":"response.output_text.'))
    expect(sent.length).toBeGreaterThan(10)
    const relayed = text.split('\n').filter((line) => line.startsWith('data: {"type":"response.output_text.'))
    expect(relayed.map((line) => line.replace(/,"sequence_number":\d+\}$/, '}'))).toEqual(sent.map((line) => line.replace(/,"sequence_number":\d+/, '')))
  })

  it('prices a streamed answer exactly as the same answer not streamed', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler((request) => (request.json.stream ? sseFixture('anthropic', 'text.sse') : jsonFixture('anthropic', 'text.json')))
    const streamed = await readSseEvents(await harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'hi', stream: true }))
    const plain = await (await harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'hi' })).json()
    const completed = streamed.events.at(-2)!.data.response
    expect(completed.usage).toEqual(plain.usage)
    expect(completed.output[0].content[0].text).toBe(plain.output[0].content[0].text)
  })

  it('falls back silently before the first byte: the client only sees the serving endpoint', async () => {
    await twoProviders()
    harness!.upstreams.alpha!.setHandler(() => jsonFixture('openai-chat', 'error-overloaded.json', 503))
    harness!.upstreams.beta!.setHandler(() => sseFixture('openai-chat', 'text.sse'))
    const { events } = await readSseEvents(await harness!.post({ model: 'test/model', input: 'hi', stream: true }, { 'x-service-metadata': 'enabled' }))
    expect(events[0]!.data.type).toBe('response.created')
    const completed = events.at(-2)!.data.response
    expect(completed.status).toBe('completed')
    expect(completed.service_metadata).toMatchObject({ attempt: 2, strategy: 'fallback' })
  })

  it('answers a clean HTTP error when every endpoint fails before content', async () => {
    await twoProviders()
    harness!.upstreams.alpha!.setHandler(() => jsonFixture('openai-chat', 'error-429.json', 429))
    harness!.upstreams.beta!.setHandler(() => jsonFixture('openai-chat', 'error-429.json', 429))
    const response = await harness!.post({ model: 'test/model', input: 'hi', stream: true })
    expect(response.status).toBe(429)
    expect(response.headers.get('content-type')).toBe('application/json')
  })

  it('reports a failure after content in-band: response.failed with error_type, then [DONE]', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => sseFixture('anthropic', 'error-midstream.sse'))
    const response = await harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'hi', stream: true })
    expect(response.status).toBe(200)
    const { events } = await readSseEvents(response)
    expect(events.at(-1)!.data).toBe('[DONE]')
    const failed = events.at(-2)!.data
    expect(failed.type).toBe('response.failed')
    expect(failed.response.status).toBe('failed')
    expect(failed.response.error_type).toBe('provider_overloaded')
    expect(failed.response.error).toEqual({ code: 'server_error', message: expect.stringContaining('Anthropic') })
    expect(events.some((event) => event.data.type === 'response.output_text.delta')).toBe(true)
  })

  it('echoes the translated upstream body first when debug.echo_upstream_body is set, without credentials', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => sseFixture('anthropic', 'text.sse'))
    const { events, text } = await readSseEvents(await harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'hi', stream: true, debug: { echo_upstream_body: true } }))
    expect(events[0]!.data.type).toBe('response.debug')
    expect(events[0]!.data.debug.upstream_body).toMatchObject({ model: 'claude-sonnet-4-5', stream: true })
    expect(events[1]!.data.type).toBe('response.created')
    expect(text).not.toContain('sk-shared')
  })

  it('commits the HTTP response with keep-alive comments when content is slow, then streams', async () => {
    harness = await createResponsesHarness({ anthropic: {} }, { streamCommitAfterMs: 0, keepAliveMs: 10 })
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    const reply = sseFixture('anthropic', 'text.sse', 100_000)
    harness.upstreams.anthropic!.setHandler(() => ({ ...reply, pause: { after: 0, until: released } }))
    const response = await harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'hi', stream: true })
    expect(response.status).toBe(200)
    const reader = response.body!.getReader()
    const first = new TextDecoder().decode((await reader.read()).value)
    expect(first.startsWith(': PROCESSING')).toBe(true)
    release()
    let rest = ''
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      rest += new TextDecoder().decode(value)
    }
    expect(rest).toContain('event: response.created')
    expect(rest.trim().endsWith('data: [DONE]')).toBe(true)
  })

  it('aborts the upstream request at once when the client disconnects mid-stream', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    const bytes = fixture('anthropic', 'text.sse')
    harness.upstreams.anthropic!.setHandler(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [bytes.subarray(0, 900), bytes.subarray(900)],
      pause: { after: 1, until: new Promise(() => {}) },
    }))
    const aborted = harness.upstreams.anthropic!.nextClientAbort()
    const controller = new AbortController()
    const response = await harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'hi', stream: true }, {}, controller.signal)
    const reader = response.body!.getReader()
    await reader.read()
    controller.abort()
    await reader.cancel().catch(() => {})
    await aborted
  })

  it('aborts a waiting non-streaming upstream request when the client goes away', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => ({ shouldHang: true }))
    const aborted = harness.upstreams.anthropic!.nextClientAbort()
    const controller = new AbortController()
    const pending = harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'hi' }, {}, controller.signal)
    while (harness.upstreams.anthropic!.requests.length === 0) await new Promise((resolve) => setImmediate(resolve))
    controller.abort()
    await aborted
    await pending.catch(() => {})
  })
})
