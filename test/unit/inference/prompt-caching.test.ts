/**
 * Prompt caching end to end: cache writes are reported and priced at the endpoint's own write rate
 * (streamed and whole alike, on every inbound format), and `prompt_cache_options` /
 * `prompt_cache_breakpoint` reach the upstreams that honour them, or are refused by name.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { fixture, type UpstreamReply } from '../../helpers/upstream'

const CLAUDE = 'anthropic/claude-sonnet-4.5'
const GPT = 'openai/gpt-4.1'

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

// Claude Sonnet 4.5: $3 / M input, $0.30 / M cache reads, $3.75 / M cache writes, $15 / M output.
const WRITTEN = 1000
const withWrites = (text: string) =>
  text.replaceAll('"cache_creation_input_tokens":0,"cache_read_input_tokens":2048', `"cache_creation_input_tokens":${WRITTEN},"cache_read_input_tokens":2048`)
const claudeJson = (): UpstreamReply => ({ status: 200, headers: { 'content-type': 'application/json' }, body: withWrites(fixture('anthropic', 'text.json').toString('utf8')) })
const claudeSse = (): UpstreamReply => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [withWrites(fixture('anthropic', 'text.sse').toString('utf8'))] })
// 14 fresh, 2048 read and 1000 written input tokens, 38 output tokens.
const EXPECTED_COST = Math.round((14 * 3 + 2048 * 0.3 + WRITTEN * 3.75 + 38 * 15) * 1e6) / 1e12

const post = (path: string, body: Record<string, unknown>) =>
  harness!.gateway.fetch(
    new Request(`http://gateway.test/api/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness!.key}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    }),
  )

const finalResponseOf = async (response: Response) => {
  const { events } = await readSseEvents(response)
  return events.find((event) => event.event === 'response.completed')!.data.response
}

describe('cache writes', () => {
  it('are reported and priced at the cache-write rate on /responses, the same streamed and whole', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(claudeJson)
    const whole = await (await harness.post({ model: CLAUDE, input: 'What is the capital of France?' })).json()
    expect(whole.usage.input_tokens).toBe(14 + 2048 + WRITTEN)
    expect(whole.usage.input_tokens_details).toEqual({ cached_tokens: 2048, cache_write_tokens: WRITTEN })
    expect(whole.usage.cost).toBeCloseTo(EXPECTED_COST, 12)
    // Priced as plain input the writes would cost 0.75 µ$ each less: the bill would be understated.
    expect(whole.usage.cost).toBeGreaterThan(EXPECTED_COST - WRITTEN * 0.5e-6)

    harness.upstreams.anthropic!.setHandler(claudeSse)
    const streamed = await finalResponseOf(await harness.post({ model: CLAUDE, input: 'What is the capital of France?', stream: true }))
    expect(streamed.usage).toEqual(whole.usage)
  })

  it('are reported as cache_creation_input_tokens on /messages and cache_write_tokens on /chat/completions', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(claudeJson)
    const message = await (await post('/messages', { model: CLAUDE, max_tokens: 300, messages: [{ role: 'user', content: 'Capital of France?' }] })).json()
    expect(message.usage).toMatchObject({ input_tokens: 14, cache_read_input_tokens: 2048, cache_creation_input_tokens: WRITTEN, output_tokens: 38 })
    expect(message.usage.cost).toBeCloseTo(EXPECTED_COST, 12)

    const completion = await (await post('/chat/completions', { model: CLAUDE, messages: [{ role: 'user', content: 'Capital of France?' }] })).json()
    expect(completion.usage.prompt_tokens).toBe(14 + 2048 + WRITTEN)
    expect(completion.usage.prompt_tokens_details).toEqual({ cached_tokens: 2048, cache_write_tokens: WRITTEN })
    expect(completion.usage.cost).toBeCloseTo(EXPECTED_COST, 12)
  })

  it('kept one hour are priced at the one-hour rate, streamed and whole, and reported as plain cache writes', async () => {
    const HOURLY = 600
    // Anthropic splits the writes by TTL in `cache_creation` (message_start in a stream); 1h writes cost $6 / M here.
    const withHourly = (text: string) =>
      withWrites(text).replaceAll(
        '"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0}',
        `"cache_creation":{"ephemeral_5m_input_tokens":${WRITTEN - HOURLY},"ephemeral_1h_input_tokens":${HOURLY}}`,
      )
    const json = fixture('anthropic', 'text.json').toString('utf8')
    const sse = fixture('anthropic', 'text.sse').toString('utf8')
    expect(withHourly(json)).toContain('ephemeral_1h_input_tokens')
    expect(withHourly(sse)).toContain('ephemeral_1h_input_tokens')
    const expected = Math.round((14 * 3 + 2048 * 0.3 + (WRITTEN - HOURLY) * 3.75 + HOURLY * 6 + 38 * 15) * 1e6) / 1e12

    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: withHourly(json) }))
    const whole = await (await harness.post({ model: CLAUDE, input: 'What is the capital of France?' })).json()
    expect(whole.usage.cost).toBeCloseTo(expected, 12)
    expect(whole.usage.input_tokens_details).toEqual({ cached_tokens: 2048, cache_write_tokens: WRITTEN })

    harness.upstreams.anthropic!.setHandler(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [withHourly(sse)] }))
    const streamed = await finalResponseOf(await harness.post({ model: CLAUDE, input: 'What is the capital of France?', stream: true }))
    expect(streamed.usage).toEqual(whole.usage)
  })

  it('appear in GET /models as input_cache_write', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    const response = await harness.gateway.fetch(new Request('http://gateway.test/api/v1/models'))
    const claude = (await response.json()).data.find((model: { id: string }) => model.id === CLAUDE)
    expect(claude.pricing).toMatchObject({ prompt: '0.000003', input_cache_read: '0.0000003', input_cache_write: '0.00000375' })
  })
})

describe('prompt_cache_options and prompt_cache_breakpoint', () => {
  const markedInput = [
    { type: 'message', role: 'system', content: [{ type: 'input_text', text: 'A long shared preamble.', prompt_cache_breakpoint: { mode: 'explicit' } }] },
    { type: 'message', role: 'user', content: 'Capital of France?' },
  ]

  it('become Anthropic breakpoints with the request TTL; explicit mode places no automatic one', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(claudeJson)
    const response = await harness.post({
      model: CLAUDE,
      input: markedInput,
      cache_control: { type: 'ephemeral' },
      prompt_cache_options: { mode: 'explicit', ttl: '1h' },
    })
    expect(response.status).toBe(200)
    const sent = harness.upstreams.anthropic!.requests[0]!.json
    expect(sent.system).toEqual([{ type: 'text', text: 'A long shared preamble.', cache_control: { type: 'ephemeral', ttl: '1h' } }])
    // Without explicit mode, the top-level cache_control would have marked the last user block.
    expect(sent.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Capital of France?' }] }])
    expect((await response.json()).prompt_cache_options).toEqual({ mode: 'explicit', ttl: '1h' })
  })

  it('keeps the automatic breakpoint when the mode is not explicit, with the request TTL', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(claudeJson)
    expect((await harness.post({ model: CLAUDE, input: markedInput, cache_control: { type: 'ephemeral' }, prompt_cache_options: { ttl: '5m' } })).status).toBe(200)
    const sent = harness.upstreams.anthropic!.requests[0]!.json
    expect(sent.messages.at(-1).content.at(-1).cache_control).toEqual({ type: 'ephemeral', ttl: '5m' })
  })

  it('refuses a TTL Anthropic cannot keep, naming the field', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    const response = await harness.post({ model: CLAUDE, input: markedInput, prompt_cache_options: { mode: 'explicit', ttl: '30m' } })
    expect(response.status).toBe(400)
    expect((await response.json()).error.message).toContain('prompt_cache_options.ttl')
    expect(harness.upstreams.anthropic!.requests).toHaveLength(0)
  })

  it('is refused with a 400 naming it when no endpoint of the model honours it, and no upstream is called', async () => {
    harness = await createResponsesHarness({ openai: {} })
    const response = await harness.post({ model: GPT, input: 'hi', prompt_cache_options: { mode: 'explicit' } })
    expect(response.status).toBe(400)
    expect((await response.json()).error.message).toBe(`prompt_cache_options: not supported by any endpoint of ${GPT}`)
    expect(harness.upstreams.openai!.requests).toHaveLength(0)
  })

  it('routes past models that cannot honour it to a fallback that can', async () => {
    harness = await createResponsesHarness({ openai: {}, anthropic: {} })
    harness.upstreams.anthropic!.setHandler(claudeJson)
    const response = await harness.post({ model: GPT, models: [CLAUDE], input: markedInput, prompt_cache_options: { mode: 'explicit' } })
    expect(response.status).toBe(200)
    expect((await response.json()).model).toBe(CLAUDE)
    expect(harness.upstreams.openai!.requests).toHaveLength(0)
  })

  it('drops breakpoints for an OpenAI model without explicit caching (it caches implicitly) and forwards them to one with it', async () => {
    harness = await createResponsesHarness(
      { openai: {} },
      {
        models: [
          {
            slug: 'openai/gpt-explicit-cache',
            name: 'A GPT with explicit prompt caching',
            endpoints: [{ provider: 'openai', model: 'gpt-explicit', contextLength: 400_000, pricing: { prompt: 1e-6, completion: 8e-6 }, supportedParameters: ['prompt_cache_options'] }],
          },
        ],
      },
    )
    harness.upstreams.openai!.setHandler(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai', 'text.json') }))
    expect((await harness.post({ model: GPT, input: markedInput })).status).toBe(200)
    expect(harness.upstreams.openai!.requests[0]!.json.input[0].content[0]).toEqual({ type: 'input_text', text: 'A long shared preamble.' })

    expect((await harness.post({ model: 'openai/gpt-explicit-cache', input: markedInput, prompt_cache_options: { mode: 'explicit', ttl: '30m' } })).status).toBe(200)
    const sent = harness.upstreams.openai!.requests[1]!.json
    expect(sent.prompt_cache_options).toEqual({ mode: 'explicit', ttl: '30m' })
    expect(sent.input[0].content[0]).toEqual({ type: 'input_text', text: 'A long shared preamble.', prompt_cache_breakpoint: { mode: 'explicit' } })
  })

  it('validates a breakpoint marker', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    const response = await harness.post({ model: CLAUDE, input: [{ role: 'user', content: [{ type: 'input_text', text: 'x', prompt_cache_breakpoint: { mode: 'always' } }] }] })
    expect(response.status).toBe(400)
    expect((await response.json()).error.message).toContain('prompt_cache_breakpoint')
  })
})

describe('prompt (a stored prompt template)', () => {
  it('goes only to OpenAI, which resolves it, and is refused by name for a model no OpenAI endpoint serves', async () => {
    harness = await createResponsesHarness({ openai: {}, anthropic: {} })
    harness.upstreams.openai!.setHandler(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai', 'text.json') }))
    const prompt = { id: 'pmpt_123', variables: { city: 'Paris' } }
    const refused = await harness.post({ model: CLAUDE, input: 'hi', prompt })
    expect(refused.status).toBe(400)
    expect((await refused.json()).error.message).toBe(`prompt: not supported by any endpoint of ${CLAUDE}`)
    expect(harness.upstreams.anthropic!.requests).toHaveLength(0)

    expect((await harness.post({ model: CLAUDE, models: [GPT], input: 'hi', prompt })).status).toBe(200)
    expect(harness.upstreams.openai!.requests[0]!.json.prompt).toEqual(prompt)
    expect(harness.upstreams.anthropic!.requests).toHaveLength(0)
  })
})
