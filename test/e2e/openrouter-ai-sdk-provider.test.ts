/**
 * The Vercel AI SDK with OpenRouter's own provider (`@openrouter/ai-sdk-provider`) against a gateway on
 * a real node:http server. That provider speaks only `POST /chat/completions` and validates every
 * completion and every stream chunk with its zod schemas, so a shape it cannot read surfaces as an error
 * (thrown, or an `error` part in the stream). Judged for each upstream family, all reached through the
 * Chat Completions wire.
 */

import { createOpenRouter, type OpenRouterProvider } from '@openrouter/ai-sdk-provider'
import { generateText, streamText } from 'ai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { errorParts, QUESTION, streamParts, WEATHER_QUESTION, weatherTools } from '../helpers/ai-sdk'
import { createSdkHarness, FAMILIES, FAMILY_IDS } from '../helpers/sdk-gateway'

const harness = createSdkHarness()
let openrouter: OpenRouterProvider

beforeAll(async () => {
  await harness.start()
  const { url, key } = await harness.startGateway()
  openrouter = createOpenRouter({ baseURL: url, apiKey: key })
})

afterAll(() => harness.close())

/** The billed cost the provider read from the completion's `usage.cost` and hands to the app. */
const openRouterCost = (metadata: Record<string, Record<string, unknown>> | undefined) => (metadata?.openrouter?.usage as { cost?: number } | undefined)?.cost

/** Each fixture's model names the place its own way (`location` or `city`). */
const expectWeatherCall = (call: { toolName: string; toolCallId: string; input: unknown }) => {
  expect(call).toMatchObject({ toolName: 'get_weather', toolCallId: expect.any(String) })
  const input = call.input as Record<string, unknown>
  expect(input.location ?? input.city).toEqual(expect.any(String))
}

describe.each(FAMILY_IDS)('ai SDK (@openrouter/ai-sdk-provider) → %s family', (id) => {
  const family = FAMILIES[id]
  // The family's gateway-only fields (provider routing) ride in the body as OpenRouter's own would.
  const model = () => openrouter.chat(family.model, { extraBody: family.extra })

  it('generateText reads the whole completion', async () => {
    const result = await generateText({ model: model(), prompt: QUESTION, maxRetries: 0 })
    expect(result.text).toContain(family.textPhrase)
    expect(result.finishReason).toBe('stop')
    expect(result.usage.outputTokens).toBeGreaterThan(0)
    expect(result.response.modelId).toBe(family.model)
    expect(openRouterCost(result.providerMetadata)).toBeGreaterThan(0)
    expect(family.isStream(harness.lastRequest(id))).toBe(false)
  })

  it('streamText reads every chunk of the stream without an error part', async () => {
    const result = streamText({ model: model(), prompt: QUESTION, maxRetries: 0 })
    const parts = await streamParts(result)
    expect(errorParts(parts)).toEqual([])
    expect(parts.map((part) => part.type)).toContain('text-delta')
    expect(await result.text).toContain(family.textPhrase)
    expect(await result.finishReason).toBe('stop')
    expect((await result.usage).outputTokens).toBeGreaterThan(0)
    expect(openRouterCost(await result.providerMetadata)).toBeGreaterThan(0)
    expect(family.isStream(harness.lastRequest(id))).toBe(true)
  })

  it('generateText with a function tool returns the model’s get_weather calls', async () => {
    const result = await generateText({ model: model(), prompt: WEATHER_QUESTION, tools: weatherTools, maxRetries: 0 })
    expect(result.finishReason).toBe('tool-calls')
    expect(result.toolCalls.length).toBeGreaterThan(0)
    for (const call of result.toolCalls) expectWeatherCall(call)
    expect(family.fixtureCase(harness.lastRequest(id))).toBe('tool-call')
  })

  it('streamText with a function tool streams the same calls', async () => {
    const result = streamText({ model: model(), prompt: WEATHER_QUESTION, tools: weatherTools, maxRetries: 0 })
    const parts = await streamParts(result)
    expect(errorParts(parts)).toEqual([])
    const calls = await result.toolCalls
    expect(calls.length).toBeGreaterThan(0)
    for (const call of calls) expectWeatherCall(call)
    expect(await result.finishReason).toBe('tool-calls')
    expect(family.isStream(harness.lastRequest(id))).toBe(true)
  })
})
