/**
 * `POST /messages` against loopback upstreams replaying recorded fixtures: a Claude model (Anthropic
 * Messages), a GPT model (OpenAI Responses) and a Chat Completions model (Groq). Both directions are
 * asserted: what the upstream was sent, and the message or events the client got.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture, sseFixture } from '../../helpers/upstream'
import { CHAT_UPSTREAM_WEATHER_ROUND_TRIP } from '../../helpers/round-trips'

const CLAUDE = 'anthropic/claude-sonnet-4.5'
const GPT = 'openai/gpt-4.1'
const LLAMA = 'meta-llama/llama-3.3-70b-instruct'

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const postMessages = (body: Record<string, unknown>) =>
  harness!.gateway.fetch(
    new Request('http://gateway.test/api/v1/messages', {
      method: 'POST',
      headers: { 'x-api-key': harness!.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ max_tokens: 4096, ...body }),
    }),
  )

/** The events' data, `message_start` first and `message_stop` last (both asserted). */
const streamedEvents = async (response: Response) => {
  expect(response.status).toBe(200)
  const { events } = await readSseEvents(response)
  expect(events[0]?.event).toBe('message_start')
  expect(events.at(-1)?.event).toBe('message_stop')
  return events.map((event) => event.data)
}

/** The content blocks a stream adds up to, as Anthropic's SDK accumulates them. */
const accumulate = (events: any[]) => {
  const blocks: any[] = []
  const json: string[] = []
  for (const event of events) {
    if (event.type === 'content_block_start') blocks[event.index] = { ...event.content_block }
    if (event.type !== 'content_block_delta') continue
    const block = blocks[event.index]
    const { delta } = event
    if (delta.type === 'text_delta') block.text += delta.text
    else if (delta.type === 'thinking_delta') block.thinking += delta.thinking
    else if (delta.type === 'signature_delta') block.signature = delta.signature
    else if (delta.type === 'input_json_delta') json[event.index] = (json[event.index] ?? '') + delta.partial_json
  }
  return blocks.map((block, index) => (block.type === 'tool_use' ? { ...block, input: JSON.parse(json[index] ?? '{}') } : block))
}

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Get the current weather for a location.',
  input_schema: { type: 'object', properties: { location: { type: 'string' }, unit: { type: 'string' } }, required: ['location', 'unit'] },
}

describe('POST /messages → Anthropic', () => {
  it('answers a message from a Messages answer, its usage split back into fresh and cached input', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => jsonFixture('anthropic', 'text.json'))
    const response = await postMessages({ model: CLAUDE, system: 'Answer briefly.', messages: [{ role: 'user', content: 'What is the capital of France?' }], max_tokens: 300 })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body).toMatchObject({ type: 'message', role: 'assistant', model: CLAUDE, stop_reason: 'end_turn', content: [{ type: 'text', text: expect.stringContaining('Paris') }] })
    // As /chat/completions prices it: 14 fresh + 2048 cached input tokens, 38 output tokens.
    // The fixture's `standard` tier, through the canonical `default` and back.
    expect(body.usage).toEqual({ input_tokens: 14, output_tokens: 38, cache_read_input_tokens: 2048, cache_creation_input_tokens: 0, cost: 0.0012264, service_tier: 'standard' })
    const sent = harness.upstreams.anthropic!.requests[0]!.json
    expect(sent).toMatchObject({ model: 'claude-sonnet-4-5', max_tokens: 300, system: [{ type: 'text', text: 'Answer briefly.' }], messages: [{ role: 'user' }] })
  })

  it('streams tool calls as tool_use blocks whose input_json_delta pieces parse, ending with tool_use', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => sseFixture('anthropic', 'tool-call.sse'))
    const events = await streamedEvents(await postMessages({ model: CLAUDE, stream: true, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [WEATHER_TOOL], tool_choice: { type: 'any' } }))
    const calls = accumulate(events).filter((block) => block.type === 'tool_use')
    expect(calls).toEqual([
      { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', input: { location: 'San Francisco, CA', unit: 'celsius' } },
      { type: 'tool_use', id: 'toolu_01HQqzGHfXoTvc6aRkW2dVJn', name: 'get_weather', input: { location: 'Paris, France', unit: 'celsius' } },
    ])
    expect(events.at(-2)).toMatchObject({ type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: expect.any(Number) } })
    const sent = harness.upstreams.anthropic!.requests[0]!.json
    expect(sent).toMatchObject({ stream: true, tools: [{ name: 'get_weather', input_schema: WEATHER_TOOL.input_schema }], tool_choice: { type: 'any' } })
  })

  it('streams thinking with its signature, and sends the signed block back as it came', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => sseFixture('anthropic', 'reasoning.sse'))
    const events = await streamedEvents(await postMessages({ model: CLAUDE, stream: true, messages: [{ role: 'user', content: 'Think first.' }], thinking: { type: 'enabled', budget_tokens: 2048 } }))
    const blocks = accumulate(events)
    const thinking = blocks.find((block) => block.type === 'thinking')
    expect(thinking).toEqual({ type: 'thinking', thinking: expect.stringMatching(/.+/), signature: expect.stringMatching(/.+/) })
    expect(harness.upstreams.anthropic!.requests[0]!.json.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 })

    harness.upstreams.anthropic!.setHandler(() => jsonFixture('anthropic', 'text.json'))
    await postMessages({
      model: CLAUDE,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      messages: [
        { role: 'user', content: 'Think first.' },
        { role: 'assistant', content: blocks },
        { role: 'user', content: 'And now?' },
      ],
    })
    const assistant = harness.upstreams.anthropic!.requests[1]!.json.messages[1]
    expect(assistant.role).toBe('assistant')
    expect(assistant.content[0]).toEqual(thinking)
  })

  it('sends a tool round trip back as tool_use and tool_result, is_error and cache breakpoints kept', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => jsonFixture('anthropic', 'text.json'))
    const response = await postMessages({
      model: CLAUDE,
      tools: [{ ...WEATHER_TOOL, cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: 'Weather in Tokyo?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_9', name: 'get_weather', input: { location: 'Tokyo', unit: 'celsius' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: 'station offline', is_error: true, cache_control: { type: 'ephemeral' } }] },
      ],
    })
    expect(response.status).toBe(200)
    const sent = harness.upstreams.anthropic!.requests[0]!.json
    expect(sent.tools).toEqual([{ ...WEATHER_TOOL, cache_control: { type: 'ephemeral' } }])
    expect(sent.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Tokyo?' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_9', name: 'get_weather', input: { location: 'Tokyo', unit: 'celsius' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: 'station offline', is_error: true, cache_control: { type: 'ephemeral' } }] },
    ])
  })

  it('answers an upstream failure before content in Anthropic error shape with its status', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => jsonFixture('anthropic', 'error-429.json', 429))
    const response = await postMessages({ model: CLAUDE, messages: [{ role: 'user', content: 'Hi' }] })
    expect(response.status).toBe(429)
    expect(await response.json()).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: expect.any(String) } })
  })
})

describe('POST /messages → OpenAI Responses', () => {
  it('answers a GPT model as a message, text streamed as text_delta events that add up to the whole answer', async () => {
    harness = await createResponsesHarness({ openai: {} })
    harness.upstreams.openai!.setHandler(() => jsonFixture('openai', 'text.json'))
    const whole = await (await postMessages({ model: GPT, messages: [{ role: 'user', content: 'Hi' }] })).json()
    expect(whole).toMatchObject({ type: 'message', model: GPT, stop_reason: 'end_turn', content: [{ type: 'text', text: expect.stringMatching(/.+/) }] })
    expect(harness.upstreams.openai!.requests[0]!.json).toMatchObject({ model: 'gpt-4.1', max_output_tokens: 4096 })

    harness.upstreams.openai!.setHandler(() => sseFixture('openai', 'text.sse'))
    const events = await streamedEvents(await postMessages({ model: GPT, stream: true, messages: [{ role: 'user', content: 'Hi' }] }))
    const texts = accumulate(events).filter((block) => block.type === 'text')
    expect(texts.length).toBeGreaterThan(0)
    expect(texts.map((block) => block.text).join('')).toMatch(/.+/)
    expect(events.at(-2)).toMatchObject({ type: 'message_delta', delta: { stop_reason: 'end_turn' } })
  })

  it('answers a GPT tool call as a tool_use block with its input parsed', async () => {
    harness = await createResponsesHarness({ openai: {} })
    harness.upstreams.openai!.setHandler(() => jsonFixture('openai', 'tool-call.json'))
    const body = await (await postMessages({ model: GPT, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [WEATHER_TOOL] })).json()
    expect(body.stop_reason).toBe('tool_use')
    const call = body.content.find((block: any) => block.type === 'tool_use')
    expect(call).toEqual({ type: 'tool_use', id: expect.stringMatching(/.+/), name: 'get_weather', input: expect.objectContaining({ location: expect.any(String) }) })
    expect(harness.upstreams.openai!.requests[0]!.json.tools).toEqual([expect.objectContaining({ type: 'function', name: 'get_weather', parameters: WEATHER_TOOL.input_schema })])
  })
})

describe('POST /messages → a Chat Completions upstream', () => {
  it('sends a tool round trip upstream as assistant tool_calls and a tool message, and answers with the result', async () => {
    harness = await createResponsesHarness({ groq: {} })
    harness.upstreams.groq!.setHandler(() => jsonFixture('openai-chat', 'sdk-tool-result.json'))
    const response = await postMessages({
      model: LLAMA,
      messages: [
        { role: 'user', content: 'Weather in Tokyo?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_9', name: 'get_weather', input: { location: 'Tokyo', unit: 'celsius' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_9', content: '{"temperature":24,"condition":"sunny"}' }] },
      ],
      tools: [WEATHER_TOOL],
    })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: expect.stringContaining('24 °C') }] })
    expect(harness.upstreams.groq!.requests[0]!.json).toMatchObject(CHAT_UPSTREAM_WEATHER_ROUND_TRIP)
  })

  it('ends a stream the upstream broke after content with an error event', async () => {
    harness = await createResponsesHarness({ groq: {} })
    harness.upstreams.groq!.setHandler(() => sseFixture('openai-chat', 'error-midstream.sse'))
    const response = await postMessages({ model: LLAMA, stream: true, messages: [{ role: 'user', content: 'Hi' }] })
    expect(response.status).toBe(200)
    const { events } = await readSseEvents(response)
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { type: 'error', error: { type: expect.any(String), message: expect.any(String) } } })
    expect(events.some((event) => event.data.delta?.type === 'text_delta')).toBe(true)
    expect(events.some((event) => event.event === 'message_stop')).toBe(false)
  })
})
