/**
 * `POST /chat/completions` through the clients people call it with: the official `openai` SDK
 * (`chat.completions.create`, whole and streamed, and its `stream()` helper that assembles chunks into a
 * completion) and OpenRouter's `@openrouter/sdk` (`chat.send`, whose zod schemas judge every object and
 * chunk). Each provider family answers from loopback upstreams replaying recorded fixtures, so a Claude
 * or Gemini model is reached through the Chat Completions wire exactly as an OpenAI one.
 */

import { OpenRouter } from '@openrouter/sdk'
import type { ChatStreamChunk } from '@openrouter/sdk/models'
import OpenAI, { BadRequestError } from 'openai'
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createSdkHarness, FAMILIES, FAMILY_IDS, WEATHER_PARAMETERS, type Family, type FamilyId } from '../helpers/sdk-gateway'
import { sseFixture } from '../helpers/upstream'

const harness = createSdkHarness()
let openai: OpenAI
let openRouter: OpenRouter

beforeAll(async () => {
  await harness.start()
  const { url, key } = await harness.startGateway()
  openai = new OpenAI({ baseURL: url, apiKey: key, maxRetries: 0, timeout: 30_000 })
  openRouter = new OpenRouter({ serverURL: url, apiKey: key, retryConfig: { strategy: 'none' }, timeoutMs: 30_000 })
})

afterEach(() => harness.clearOverrides())

afterAll(() => harness.close())

const QUESTION: ChatCompletionMessageParam = { role: 'user', content: 'What is the capital of France?' }
const WEATHER_QUESTION: ChatCompletionMessageParam = { role: 'user', content: 'What is the weather like in Paris right now?' }

const WEATHER_TOOL: ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'Get the current weather for a location.', parameters: WEATHER_PARAMETERS, strict: true },
}

/** The SDK's parameters plus the family's gateway-only fields (a spread escapes the excess-property check). */
const params = (family: Family, fields: Omit<ChatCompletionCreateParamsNonStreaming, 'model'>): ChatCompletionCreateParamsNonStreaming => ({
  model: family.model,
  ...fields,
  ...family.extra,
})

type BilledUsage = { cost: number; is_byok: boolean; cost_details: Record<string, unknown> }

const expectBilled = (usage: OpenAI.CompletionUsage | undefined) => {
  expect(usage).toBeTruthy()
  expect(usage!.prompt_tokens).toBeGreaterThan(0)
  expect(usage!.completion_tokens).toBeGreaterThan(0)
  expect(usage!.total_tokens).toBe(usage!.prompt_tokens + usage!.completion_tokens)
  const billed = usage as unknown as BilledUsage
  expect(billed.cost).toBeGreaterThan(0)
  expect(billed.is_byok).toBe(false)
  expect(billed.cost_details).toMatchObject({ upstream_inference_prompt_cost: expect.any(Number), upstream_inference_completions_cost: expect.any(Number) })
}

describe.each(FAMILY_IDS)('openai SDK chat.completions → %s family', (id: FamilyId) => {
  const family = FAMILIES[id]

  it('create returns a chat.completion with the answer and its cost', async () => {
    const completion = await openai.chat.completions.create(params(family, { messages: [QUESTION] }))
    expect(completion).toMatchObject({ object: 'chat.completion', model: family.model, choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant' } }] })
    expect(completion.id).toMatch(/^gen-/)
    expect(completion.choices[0]!.message.content).toContain(family.textPhrase)
    expectBilled(completion.usage)
  })

  it('create with stream: true yields chunks whose deltas add up to the answer, usage on the last', async () => {
    const stream = await openai.chat.completions.create({ ...params(family, { messages: [QUESTION] }), stream: true })
    const chunks: OpenAI.ChatCompletionChunk[] = []
    for await (const chunk of stream) chunks.push(chunk)
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant')
    const text = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')
    expect(text).toContain(family.textPhrase)
    expect(chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.finish_reason)).filter(Boolean)).toEqual(['stop'])
    expect(chunks.at(-1)!.choices).toEqual([])
    expectBilled(chunks.at(-1)!.usage ?? undefined)
  })

  it('a tool round trip: the stream() helper assembles the calls, the results go back, the model answers', async () => {
    const runner = openai.chat.completions.stream({ ...params(family, { messages: [WEATHER_QUESTION], tools: [WEATHER_TOOL] }), stream: true })
    const turn1 = await runner.finalChatCompletion()
    const message = turn1.choices[0]!.message
    expect(turn1.choices[0]!.finish_reason).toBe('tool_calls')
    const calls = message.tool_calls ?? []
    expect(calls.length).toBeGreaterThan(0)
    for (const call of calls) {
      expect(call).toMatchObject({ type: 'function', id: expect.any(String), function: { name: 'get_weather' } })
      // Each fixture's model fills the arguments its own way (`location` or `city`): whole JSON naming a place is what matters.
      const args = JSON.parse(call.type === 'function' ? call.function.arguments : '') as Record<string, unknown>
      expect(args.location ?? args.city).toEqual(expect.any(String))
    }
    const results: ChatCompletionMessageParam[] = calls.map((call) => ({ role: 'tool', tool_call_id: call.id, content: '{"temperature":22,"condition":"sunny"}' }))
    const turn2 = await openai.chat.completions.create(params(family, { messages: [WEATHER_QUESTION, message, ...results], tools: [WEATHER_TOOL] }))
    expect(turn2.choices[0]!.finish_reason).toBe('stop')
    expect(turn2.choices[0]!.message.content).toContain(family.toolResultPhrase)
  })
})

describe('openai SDK chat.completions: failures', () => {
  it('a refused field is a BadRequestError naming it', async () => {
    const failure = await openai.chat.completions.create(params(FAMILIES.openai, { messages: [QUESTION], n: 2 })).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(BadRequestError)
    expect((failure as BadRequestError).message).toContain('body.n: must be 1')
  })

  it('a stream that fails after content throws the in-band error to the caller', async () => {
    harness.overrides.anthropic = () => sseFixture('anthropic', 'error-midstream.sse')
    const stream = await openai.chat.completions.create({ ...params(FAMILIES.anthropic, { messages: [QUESTION] }), stream: true })
    let text = ''
    const failure = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    })().catch((error: unknown) => error)
    expect(text.length).toBeGreaterThan(0)
    expect(failure).toBeInstanceOf(OpenAI.APIError)
  })
})

const OPENROUTER_FAMILIES: FamilyId[] = ['openai', 'anthropic', 'chat']

describe.each(OPENROUTER_FAMILIES)('@openrouter/sdk chat.send → %s family', (id) => {
  const family = FAMILIES[id]

  it('chat.send returns a result its schema accepts', async () => {
    const result = await openRouter.chat.send({ chatRequest: { model: family.model, messages: [{ role: 'user', content: 'What is the capital of France?' }], ...family.extra } })
    if (Symbol.asyncIterator in result) throw new Error('expected a chat result, got a stream')
    expect(result).toMatchObject({ object: 'chat.completion', model: family.model, systemFingerprint: null, choices: [{ finishReason: 'stop' }] })
    expect(result.choices[0]!.message.content).toContain(family.textPhrase)
    expect(result.usage?.cost).toBeGreaterThan(0)
    expect(result.usage?.costDetails?.upstreamInferenceCompletionsCost).toBeGreaterThan(0)
  })

  it('chat.send with stream: true yields chunks its schema accepts, usage last', async () => {
    const result = await openRouter.chat.send({ chatRequest: { model: family.model, messages: [{ role: 'user', content: 'What is the capital of France?' }], stream: true, ...family.extra } })
    if (!(Symbol.asyncIterator in result)) throw new Error('expected a stream, got a chat result')
    const chunks: ChatStreamChunk[] = []
    for await (const chunk of result) chunks.push(chunk)
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toContain(family.textPhrase)
    expect(chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.finishReason)).filter(Boolean)).toEqual(['stop'])
    expect(chunks.at(-1)!.usage?.cost).toBeGreaterThan(0)
  })
})

describe('@openrouter/sdk chat.send: a stream cut after content', () => {
  it('ends with a chunk carrying the error and finish_reason error, which its schema accepts', async () => {
    harness.overrides.anthropic = () => sseFixture('anthropic', 'error-midstream.sse')
    const result = await openRouter.chat.send({ chatRequest: { model: FAMILIES.anthropic.model, messages: [{ role: 'user', content: 'Hi' }], stream: true } })
    if (!(Symbol.asyncIterator in result)) throw new Error('expected a stream, got a chat result')
    const chunks: ChatStreamChunk[] = []
    for await (const chunk of result) chunks.push(chunk)
    const failed = chunks.find((chunk) => chunk.error)
    expect(failed?.error).toMatchObject({ code: expect.any(Number), message: expect.any(String), metadata: { errorType: expect.any(String) } })
    expect(failed?.choices[0]?.finishReason).toBe('error')
  })
})

describe('openai SDK chat.completions: the fields the gateway now honours or refuses', () => {
  it('sends service_tier and verbosity on to OpenAI, and gets a 400 naming a tier no endpoint takes or a prediction', async () => {
    await openai.chat.completions.create({ model: FAMILIES.openai.model, messages: [QUESTION], service_tier: 'flex', verbosity: 'low' })
    const sent = harness.lastRequest('openai').json
    expect(sent.service_tier).toBe('flex')
    expect(sent.text.verbosity).toBe('low')
    const noTier = openai.chat.completions.create({ model: FAMILIES.anthropic.model, messages: [QUESTION], service_tier: 'flex' })
    await expect(noTier).rejects.toBeInstanceOf(BadRequestError)
    await expect(noTier).rejects.toMatchObject({ message: expect.stringContaining('body.service_tier ("flex")') })
    const prediction = openai.chat.completions.create({ model: FAMILIES.openai.model, messages: [QUESTION], prediction: { type: 'content', content: 'Paris' } })
    await expect(prediction).rejects.toMatchObject({ status: 400, message: expect.stringContaining('body.prediction: is not supported') })
  })

  it('@openrouter/sdk chat.send takes a trace and a service tier', async () => {
    const result = await openRouter.chat.send({
      chatRequest: { model: FAMILIES.openai.model, messages: [{ role: 'user', content: 'What is the capital of France?' }], serviceTier: 'priority', trace: { traceId: 't-1' } } as never,
    })
    if (Symbol.asyncIterator in result) throw new Error('expected a chat result, got a stream')
    expect(harness.lastRequest('openai').json.service_tier).toBe('priority')
  })
})
