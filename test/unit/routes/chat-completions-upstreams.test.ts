/**
 * `POST /chat/completions` against loopback upstreams replaying recorded fixtures: a Claude model
 * (Anthropic Messages) and a Chat Completions model (Groq). Both directions are asserted: what the
 * upstream was sent, and the chunks or object the client got.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture, sseFixture } from '../../helpers/upstream'
import { CHAT_UPSTREAM_WEATHER_ROUND_TRIP } from '../../helpers/round-trips'

const CLAUDE = 'anthropic/claude-sonnet-4.5'
const LLAMA = 'meta-llama/llama-3.3-70b-instruct'

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const postChat = (body: Record<string, unknown>) =>
  harness!.gateway.fetch(
    new Request('http://gateway.test/api/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${harness!.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  )

/** The data chunks of a stream, without `[DONE]` (asserted to be last). */
const streamedChunks = async (response: Response) => {
  expect(response.status).toBe(200)
  const { events } = await readSseEvents(response)
  expect(events.at(-1)?.data).toBe('[DONE]')
  return events.slice(0, -1).map((event) => event.data)
}

const deltasOf = (chunks: any[]) => chunks.flatMap((chunk) => (chunk.choices.length > 0 ? [chunk.choices[0].delta] : []))

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather for a location.',
    parameters: { type: 'object', properties: { location: { type: 'string' }, unit: { type: 'string' } }, required: ['location', 'unit'] },
  },
}

describe('POST /chat/completions → Anthropic', () => {
  it('answers a chat.completion from a Messages answer, priced from the catalog', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => jsonFixture('anthropic', 'text.json'))
    const response = await postChat({ model: CLAUDE, messages: [{ role: 'system', content: 'Answer briefly.' }, { role: 'user', content: 'What is the capital of France?' }], max_tokens: 300 })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body).toMatchObject({ object: 'chat.completion', model: CLAUDE, choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: expect.stringContaining('Paris') } }] })
    // 14 fresh + 2048 cached input tokens, 38 output tokens at $3 / $0.30 / $15 per million, as on /responses.
    expect(body.usage).toEqual({
      prompt_tokens: 2062,
      completion_tokens: 38,
      total_tokens: 2100,
      prompt_tokens_details: { cached_tokens: 2048 },
      completion_tokens_details: { reasoning_tokens: 0 },
      cost: 0.0012264,
      is_byok: false,
      cost_details: { upstream_inference_cost: null, upstream_inference_prompt_cost: 0.0006564, upstream_inference_completions_cost: 0.00057 },
    })
    const sent = harness.upstreams.anthropic!.requests[0]!.json
    expect(sent).toMatchObject({ model: 'claude-sonnet-4-5', max_tokens: 300, messages: [{ role: 'user' }] })
    expect(JSON.stringify(sent.system)).toContain('Answer briefly.')
  })

  it('streams a tool call as chunks by index, whose arguments parse, ending with tool_calls', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => sseFixture('anthropic', 'tool-call.sse'))
    const chunks = await streamedChunks(await postChat({ model: CLAUDE, stream: true, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [WEATHER_TOOL], tool_choice: 'required' }))
    const pieces = deltasOf(chunks).flatMap((delta) => delta.tool_calls ?? [])
    // The fixture calls the tool twice: each call opens with its id and name, then its index carries only arguments.
    const openings = pieces.filter((piece) => piece.id)
    expect(openings).toEqual([
      { index: 0, id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', type: 'function', function: { name: 'get_weather', arguments: '' } },
      { index: 1, id: 'toolu_01HQqzGHfXoTvc6aRkW2dVJn', type: 'function', function: { name: 'get_weather', arguments: '' } },
    ])
    const argumentsOf = (index: number) => JSON.parse(pieces.filter((piece) => piece.index === index).map((piece) => piece.function.arguments).join(''))
    expect(argumentsOf(0)).toEqual({ location: 'San Francisco, CA', unit: 'celsius' })
    expect(argumentsOf(1)).toEqual({ location: 'Paris, France', unit: 'celsius' })
    expect(chunks.at(-2).choices[0].finish_reason).toBe('tool_calls')
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { cost: expect.any(Number), is_byok: false } })
    const sent = harness.upstreams.anthropic!.requests[0]!.json
    expect(sent).toMatchObject({ stream: true, tools: [{ name: 'get_weather' }], tool_choice: { type: 'any' } })
  })

  it('streams thinking as reasoning deltas in the anthropic format, its signature as a detail, and sends it back signed', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    harness.upstreams.anthropic!.setHandler(() => sseFixture('anthropic', 'reasoning.sse'))
    const chunks = await streamedChunks(await postChat({ model: CLAUDE, stream: true, messages: [{ role: 'user', content: 'Think first.' }], reasoning: { max_tokens: 2048 } }))
    const deltas = deltasOf(chunks)
    const details = deltas.flatMap((delta) => delta.reasoning_details ?? [])
    expect(details.length).toBeGreaterThan(0)
    for (const detail of details) expect(detail).toMatchObject({ type: 'reasoning.text', format: 'anthropic-claude-v1', index: 0 })
    const signature = details.find((detail) => detail.signature)?.signature
    expect(signature).toEqual(expect.any(String))
    const reasoning = deltas.map((delta) => delta.reasoning ?? '').join('')
    expect(reasoning.length).toBeGreaterThan(0)
    expect(harness.upstreams.anthropic!.requests[0]!.json.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 })

    // The client sends the turn back as OpenRouter's clients do: reasoning_details accumulated by index.
    harness.upstreams.anthropic!.setHandler(() => jsonFixture('anthropic', 'text.json'))
    const content = deltas.map((delta) => delta.content ?? '').join('')
    await postChat({
      model: CLAUDE,
      reasoning: { max_tokens: 2048 },
      messages: [
        { role: 'user', content: 'Think first.' },
        { role: 'assistant', content, reasoning_details: [{ type: 'reasoning.text', text: reasoning, signature, format: 'anthropic-claude-v1' }] },
        { role: 'user', content: 'And now?' },
      ],
    })
    const assistant = harness.upstreams.anthropic!.requests[1]!.json.messages[1]
    expect(assistant.role).toBe('assistant')
    expect(assistant.content[0]).toEqual({ type: 'thinking', thinking: reasoning, signature })
  })
})

describe('POST /chat/completions → a Chat Completions upstream', () => {
  it('sends a tool round trip upstream as assistant tool_calls and a tool message, and answers with the result', async () => {
    harness = await createResponsesHarness({ groq: {} })
    harness.upstreams.groq!.setHandler(() => jsonFixture('openai-chat', 'sdk-tool-result.json'))
    const response = await postChat({
      model: LLAMA,
      messages: [
        { role: 'user', content: 'Weather in Tokyo?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Tokyo","unit":"celsius"}' } }] },
        { role: 'tool', tool_call_id: 'call_9', content: '{"temperature":24,"condition":"sunny"}' },
      ],
      tools: [WEATHER_TOOL],
    })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body.choices[0]).toMatchObject({ finish_reason: 'stop', message: { role: 'assistant', content: expect.stringContaining('24 °C') } })
    expect(harness.upstreams.groq!.requests[0]!.json).toMatchObject(CHAT_UPSTREAM_WEATHER_ROUND_TRIP)
  })

  it('streams content deltas that add up to the whole answer', async () => {
    harness = await createResponsesHarness({ groq: {} })
    harness.upstreams.groq!.setHandler(() => jsonFixture('openai-chat', 'text.json'))
    const whole = (await (await postChat({ model: LLAMA, messages: [{ role: 'user', content: 'Hi' }] })).json()).choices[0].message.content
    harness.upstreams.groq!.setHandler(() => sseFixture('openai-chat', 'text.sse'))
    const chunks = await streamedChunks(await postChat({ model: LLAMA, stream: true, messages: [{ role: 'user', content: 'Hi' }] }))
    expect(deltasOf(chunks).map((delta) => delta.content ?? '').join('')).toContain('Bonjour')
    expect(whole).toContain('Bonjour')
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop')
  })

  it('ends a stream the upstream broke after content with an error chunk', async () => {
    harness = await createResponsesHarness({ groq: {} })
    harness.upstreams.groq!.setHandler(() => sseFixture('openai-chat', 'error-midstream.sse'))
    const chunks = await streamedChunks(await postChat({ model: LLAMA, stream: true, messages: [{ role: 'user', content: 'Hi' }] }))
    const failed = chunks.find((chunk) => chunk.error)
    expect(failed).toMatchObject({ error: { code: expect.any(Number), message: expect.any(String), metadata: { error_type: expect.any(String) } }, choices: [{ finish_reason: 'error' }] })
    expect(deltasOf(chunks.slice(0, chunks.indexOf(failed))).some((delta) => delta.content)).toBe(true)
  })

  it('answers an upstream failure before content with its status and the standard error body', async () => {
    harness = await createResponsesHarness({ groq: {} })
    harness.upstreams.groq!.setHandler(() => jsonFixture('openai-chat', 'error-400-context.json', 400))
    const response = await postChat({ model: LLAMA, messages: [{ role: 'user', content: 'Hi' }] })
    expect(response.status).toBe(400)
    const body = await response.json()
    expect(body.error).toMatchObject({ code: 400, metadata: { error_type: 'context_length_exceeded', provider_name: 'groq' } })
  })
})
