/**
 * `POST /messages` through the official `@anthropic-ai/sdk`: `messages.create` whole and streamed, the
 * `messages.stream()` helper's `finalMessage()`, a tool round trip, and the typed errors the SDK throws
 * for our error bodies. Each provider family answers from loopback upstreams replaying recorded
 * fixtures, so a GPT, Llama or Gemini model is reached through Anthropic's wire exactly as a Claude one.
 */

import Anthropic, { AuthenticationError, BadRequestError } from '@anthropic-ai/sdk'
import type { MessageCreateParamsNonStreaming, MessageParam, Tool } from '@anthropic-ai/sdk/resources/messages'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createSdkHarness, FAMILIES, FAMILY_IDS, WEATHER_PARAMETERS, type Family, type FamilyId } from '../helpers/sdk-gateway'
import { sseFixture } from '../helpers/upstream'

const harness = createSdkHarness()
let anthropic: Anthropic
let baseURL: string

beforeAll(async () => {
  await harness.start()
  const { url, key } = await harness.startGateway()
  // The SDK appends `/v1/messages` to its base URL.
  baseURL = url.replace(/\/v1$/, '')
  anthropic = new Anthropic({ baseURL, apiKey: key, maxRetries: 0, timeout: 30_000 })
})

afterEach(() => harness.clearOverrides())

afterAll(() => harness.close())

const QUESTION: MessageParam = { role: 'user', content: 'What is the capital of France?' }
const WEATHER_QUESTION: MessageParam = { role: 'user', content: 'What is the weather like in Paris right now?' }

const WEATHER_TOOL: Tool = { name: 'get_weather', description: 'Get the current weather for a location.', input_schema: WEATHER_PARAMETERS }

/** The SDK's parameters plus the family's gateway-only fields (a spread escapes the excess-property check). */
const params = (family: Family, fields: Omit<MessageCreateParamsNonStreaming, 'model' | 'max_tokens'>): MessageCreateParamsNonStreaming => ({
  model: family.model,
  max_tokens: 1024,
  ...fields,
  ...family.extra,
})

const textOf = (message: Anthropic.Message) => message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')

const expectUsage = (usage: Anthropic.Usage) => {
  expect(usage.input_tokens + (usage.cache_read_input_tokens ?? 0)).toBeGreaterThan(0)
  expect(usage.output_tokens).toBeGreaterThan(0)
}

describe.each(FAMILY_IDS)('@anthropic-ai/sdk messages → %s family', (id: FamilyId) => {
  const family = FAMILIES[id]

  it('create returns a message with the answer, end_turn and usage', async () => {
    const message = await anthropic.messages.create(params(family, { messages: [QUESTION] }))
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model: family.model, stop_reason: 'end_turn', stop_sequence: null })
    expect(message.id).toMatch(/^msg_/)
    expect(textOf(message)).toContain(family.textPhrase)
    expectUsage(message.usage)
    expect((message.usage as unknown as { cost: number }).cost).toBeGreaterThan(0)
  })

  it('create with stream: true yields events whose text deltas add up to the answer', async () => {
    const stream = await anthropic.messages.create({ ...params(family, { messages: [QUESTION] }), stream: true })
    const types: string[] = []
    let text = ''
    let cost: unknown
    for await (const event of stream) {
      types.push(event.type)
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text
      // The SDK's own accumulation (finalMessage) keeps only the usage fields it knows: the cost is read off the raw event.
      if (event.type === 'message_delta') cost = (event.usage as unknown as { cost?: number }).cost
    }
    expect(types[0]).toBe('message_start')
    expect(types.slice(-2)).toEqual(['message_delta', 'message_stop'])
    expect(cost).toBeGreaterThan(0)
    expect(text).toContain(family.textPhrase)
  })

  it('a tool round trip: stream().finalMessage() assembles the tool_use blocks, the results go back, the model answers', async () => {
    const turn1 = await anthropic.messages.stream(params(family, { messages: [WEATHER_QUESTION], tools: [WEATHER_TOOL] })).finalMessage()
    expect(turn1.stop_reason).toBe('tool_use')
    expectUsage(turn1.usage)
    const calls = turn1.content.filter((block) => block.type === 'tool_use')
    expect(calls.length).toBeGreaterThan(0)
    for (const call of calls) {
      expect(call).toMatchObject({ id: expect.any(String), name: 'get_weather' })
      // Each fixture's model fills the arguments its own way (`location` or `city`): an object naming a place is what matters.
      const input = call.input as Record<string, unknown>
      expect(input.location ?? input.city).toEqual(expect.any(String))
    }
    const results: MessageParam = {
      role: 'user',
      content: calls.map((call) => ({ type: 'tool_result' as const, tool_use_id: call.id, content: '{"temperature":22,"condition":"sunny"}' })),
    }
    const turn2 = await anthropic.messages.create(params(family, { messages: [WEATHER_QUESTION, { role: 'assistant', content: turn1.content }, results], tools: [WEATHER_TOOL] }))
    expect(turn2.stop_reason).toBe('end_turn')
    expect(textOf(turn2)).toContain(family.toolResultPhrase)
  })
})

describe('@anthropic-ai/sdk messages: failures', () => {
  it('a refused field is a BadRequestError naming it, with Anthropic error type', async () => {
    const failure = await anthropic.messages.create(params(FAMILIES.anthropic, { messages: [QUESTION], container: 'container_1' })).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(BadRequestError)
    expect((failure as BadRequestError).type).toBe('invalid_request_error')
    expect((failure as BadRequestError).message).toContain('body.container: is not supported')
  })

  it('a wrong key is an AuthenticationError', async () => {
    const stranger = new Anthropic({ baseURL, apiKey: 'sk-not-a-key', maxRetries: 0, timeout: 30_000 })
    const failure = await stranger.messages.create(params(FAMILIES.anthropic, { messages: [QUESTION] })).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(AuthenticationError)
    expect((failure as AuthenticationError).type).toBe('authentication_error')
    expect((failure as AuthenticationError).message).not.toContain('sk-not-a-key')
  })

  it('a stream that fails after content throws the error event to the caller', async () => {
    harness.overrides.anthropic = () => sseFixture('anthropic', 'error-midstream.sse')
    const stream = anthropic.messages.stream(params(FAMILIES.anthropic, { messages: [QUESTION] }))
    let text = ''
    stream.on('text', (delta) => (text += delta))
    const failure = await stream.finalMessage().catch((error: unknown) => error)
    expect(text.length).toBeGreaterThan(0)
    expect(failure).toBeInstanceOf(Anthropic.APIError)
  })
})
