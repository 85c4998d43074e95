/**
 * The Vercel AI SDK (`ai` with `@ai-sdk/openai`) against a gateway on a real node:http server:
 * `openai.responses(model)` speaks the Responses API to it, and the provider validates every
 * Response and every stream chunk with its zod schemas, so a shape it cannot read surfaces as an
 * error (thrown, or an `error` part in the stream). Judged for an OpenAI Responses upstream and for
 * translated ones (Anthropic Messages, Chat Completions).
 */

import { createOpenAI, type OpenAIProvider } from '@ai-sdk/openai'
import { generateText, streamText } from 'ai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { errorParts, QUESTION, streamParts, WEATHER_QUESTION, weatherTools } from '../helpers/ai-sdk'
import { createSdkHarness, FAMILIES, type FamilyId } from '../helpers/sdk-gateway'

const harness = createSdkHarness()
let openai: OpenAIProvider

beforeAll(async () => {
  await harness.start()
  const { url, key } = await harness.startGateway()
  openai = createOpenAI({ baseURL: url, apiKey: key })
})

afterAll(() => harness.close())

const FAMILY_IDS: FamilyId[] = ['openai', 'anthropic', 'chat']

describe.each(FAMILY_IDS)('ai SDK (openai.responses) → %s family', (id) => {
  const family = FAMILIES[id]
  const model = () => openai.responses(family.model)

  it('generateText reads the whole Response', async () => {
    const result = await generateText({ model: model(), prompt: QUESTION, maxRetries: 0 })
    expect(result.text).toContain(family.textPhrase)
    expect(result.finishReason).toBe('stop')
    expect(result.usage.outputTokens).toBeGreaterThan(0)
    expect(result.response.modelId).toBe(family.model)
    expect(harness.lastRequest(id).json).not.toHaveProperty('stream', true)
  })

  it('streamText reads every chunk of the stream without an error part', async () => {
    const result = streamText({ model: model(), prompt: QUESTION, maxRetries: 0 })
    const parts = await streamParts(result)
    expect(errorParts(parts)).toEqual([])
    expect(parts.map((part) => part.type)).toContain('text-delta')
    expect(await result.text).toContain(family.textPhrase)
    expect(await result.finishReason).toBe('stop')
    expect((await result.usage).outputTokens).toBeGreaterThan(0)
    expect(family.isStream(harness.lastRequest(id))).toBe(true)
  })

  it('generateText with a function tool returns the model’s get_weather calls', async () => {
    const result = await generateText({ model: model(), prompt: WEATHER_QUESTION, tools: weatherTools, maxRetries: 0 })
    expect(result.finishReason).toBe('tool-calls')
    expect(result.toolCalls.length).toBeGreaterThan(0)
    for (const call of result.toolCalls) {
      expect(call).toMatchObject({ toolName: 'get_weather', toolCallId: expect.any(String), input: { location: expect.any(String) } })
    }
    expect(harness.lastRequest(id).json.tools).toBeTruthy()
  })

  it('streamText with a function tool streams the same calls', async () => {
    const result = streamText({ model: model(), prompt: WEATHER_QUESTION, tools: weatherTools, maxRetries: 0 })
    const parts = await streamParts(result)
    expect(errorParts(parts)).toEqual([])
    const calls = await result.toolCalls
    expect(calls.length).toBeGreaterThan(0)
    for (const call of calls) expect(call).toMatchObject({ toolName: 'get_weather', input: { location: expect.any(String) } })
    expect(await result.finishReason).toBe('tool-calls')
  })
})
