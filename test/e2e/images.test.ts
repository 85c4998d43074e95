/**
 * Image output through the clients people call the gateway with, against a loopback Gemini upstream that
 * answers with a generated image (test/fixtures/providers/gemini/image.*): the `openai` SDK on Chat Completions
 * and Responses, OpenRouter's `@openrouter/sdk` (whose zod schemas judge every object and event) and Anthropic's
 * SDK on Messages, whose stream accumulator must keep the image block. Each result is read as the SDK types it.
 */

import Anthropic from '@anthropic-ai/sdk'
import { OpenRouter } from '@openrouter/sdk'
import type { ChatStreamChunk, StreamEvents } from '@openrouter/sdk/models'
import OpenAI from 'openai'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createSdkHarness } from '../helpers/sdk-gateway'
import { fixture, jsonFixture, sseFixture } from '../helpers/upstream'

const MODEL = 'google/gemini-2.5-flash-image'
const IMAGE = JSON.parse(fixture('gemini', 'image.json').toString('utf8')).candidates[0].content.parts[1].inlineData.data as string
const DATA_URL = `data:image/png;base64,${IMAGE}`
const TEXT = 'Here is a small orange sunset tile for you.'
// 12 input tokens at $0.30/M, 10 text tokens at $2.50/M and one image at $0.0387 (its 1,290 tokens billed per image).
const COST = 0.0387286
const PROMPT = 'Draw a small orange sunset tile'
/** OpenRouter's image fields, which the `openai` and Anthropic SDKs do not declare (a spread escapes their checks). */
const IMAGE_OUTPUT: Record<string, unknown> = { modalities: ['image', 'text'] }

const harness = createSdkHarness()
let openai: OpenAI
let openRouter: OpenRouter
let anthropic: Anthropic

beforeAll(async () => {
  await harness.start()
  const { url, key } = await harness.startGateway()
  openai = new OpenAI({ baseURL: url, apiKey: key, maxRetries: 0, timeout: 30_000 })
  openRouter = new OpenRouter({ serverURL: url, apiKey: key, retryConfig: { strategy: 'none' }, timeoutMs: 30_000 })
  // The SDK appends `/v1/messages` to its base URL.
  anthropic = new Anthropic({ baseURL: url.replace(/\/v1$/, ''), apiKey: key, maxRetries: 0, timeout: 30_000 })
})

beforeEach(() => {
  harness.overrides.gemini = (request) =>
    request.url.includes(':streamGenerateContent') ? sseFixture('gemini', 'image.sse') : jsonFixture('gemini', 'image.json')
})

afterAll(() => harness.close())

/** What the gateway asked Gemini for: image and text output. */
const expectImageRequested = () => {
  const sent = harness.lastRequest('gemini')
  expect(sent.url).toMatch(/^\/models\/gemini-2\.5-flash-image:/)
  expect(sent.json.generationConfig).toMatchObject({ responseModalities: ['IMAGE', 'TEXT'] })
}

/** OpenRouter's image fields, which the `openai` SDK's types do not declare. */
type WithImages = { images?: Array<{ type: string; image_url: { url: string } }> }

describe('openai SDK', () => {
  it('chat.completions.create: the image is on message.images', async () => {
    const completion = await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: PROMPT }],
      ...IMAGE_OUTPUT,
      ...({ image_config: { aspect_ratio: '4:3' } } as Record<string, unknown>),
    })
    expectImageRequested()
    const message = completion.choices[0]!.message
    expect(message.content).toBe(TEXT)
    expect((message as WithImages).images).toEqual([{ type: 'image_url', image_url: { url: DATA_URL } }])
    expect(completion.choices[0]!.finish_reason).toBe('stop')
    expect((completion.usage as unknown as { cost: number }).cost).toBe(COST)
  })

  it('chat.completions.stream: finalChatCompletion() keeps the image the stream carried in delta.images', async () => {
    const stream = openai.chat.completions.stream({ model: MODEL, messages: [{ role: 'user', content: PROMPT }], ...IMAGE_OUTPUT })
    const completion = await stream.finalChatCompletion()
    expectImageRequested()
    expect(completion.choices[0]!.message.content).toBe(TEXT)
    expect((completion.choices[0]!.message as WithImages).images).toEqual([{ type: 'image_url', image_url: { url: DATA_URL } }])
  })

  it('responses.create: the image is an image_generation_call output item', async () => {
    const response = await openai.responses.create({ model: MODEL, input: PROMPT, ...IMAGE_OUTPUT })
    expectImageRequested()
    expect(response.output_text).toBe(TEXT)
    const images = response.output.filter((item): item is OpenAI.Responses.ResponseOutputItem.ImageGenerationCall => item.type === 'image_generation_call')
    expect(images).toEqual([expect.objectContaining({ type: 'image_generation_call', status: 'completed', result: IMAGE })])
    expect(images[0]!.id).toMatch(/^ig_/)
    expect((response.usage as unknown as { cost: number }).cost).toBe(COST)
  })

  it('responses.stream: the image_generation_call events arrive typed and finalResponse() holds the image', async () => {
    const stream = openai.responses.stream({ model: MODEL, input: PROMPT, ...IMAGE_OUTPUT })
    const types: string[] = []
    stream.on('event', (event) => types.push(event.type))
    const response = await stream.finalResponse()
    expect(types.filter((type) => type.startsWith('response.image_generation_call.'))).toEqual([
      'response.image_generation_call.in_progress',
      'response.image_generation_call.generating',
      'response.image_generation_call.completed',
    ])
    const image = response.output.find((item) => item.type === 'image_generation_call')
    expect(image).toMatchObject({ status: 'completed', result: IMAGE })
    expect((response.usage as unknown as { cost: number }).cost).toBe(COST)
  })
})

describe('@openrouter/sdk', () => {
  it('chat.send: message.images as its schema reads them', async () => {
    const result = await openRouter.chat.send({
      chatRequest: { model: MODEL, messages: [{ role: 'user', content: PROMPT }], modalities: ['image', 'text'], imageConfig: { aspect_ratio: '4:3' } },
    })
    if (Symbol.asyncIterator in result) throw new Error('expected a chat result, got a stream')
    expectImageRequested()
    expect(harness.lastRequest('gemini').json.generationConfig.imageConfig).toEqual({ aspectRatio: '4:3' })
    const message = result.choices[0]!.message
    expect(message.content).toBe(TEXT)
    expect(message.images).toEqual([{ imageUrl: { url: DATA_URL } }])
    expect(result.usage?.cost).toBe(COST)
  })

  it('chat.send with stream: true: every chunk passes its schema, the usage carries the image price', async () => {
    const result = await openRouter.chat.send({ chatRequest: { model: MODEL, messages: [{ role: 'user', content: PROMPT }], modalities: ['image', 'text'], stream: true } })
    if (!(Symbol.asyncIterator in result)) throw new Error('expected a stream, got a chat result')
    const chunks: ChatStreamChunk[] = []
    for await (const chunk of result) chunks.push(chunk)
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe(TEXT)
    expect(chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.finishReason)).filter(Boolean)).toEqual(['stop'])
    expect(chunks.at(-1)!.usage?.cost).toBe(COST)
  })

  it('responses.send: the image_generation_call item passes its schema', async () => {
    const result = await openRouter.responses.send({ responsesRequest: { model: MODEL, input: PROMPT, modalities: ['image', 'text'] } })
    if (Symbol.asyncIterator in result) throw new Error('expected a Response object, got a stream')
    const image = result.output.find((item) => item.type === 'image_generation_call')
    expect(image).toEqual({ id: expect.stringMatching(/^ig_/), type: 'image_generation_call', status: 'completed', result: IMAGE })
    expect(result.usage?.cost).toBe(COST)
  })

  it('responses.send with stream: true: the image events pass its schema, none is unknown', async () => {
    const result = await openRouter.responses.send({ responsesRequest: { model: MODEL, input: PROMPT, modalities: ['image', 'text'], stream: true } })
    if (!(Symbol.asyncIterator in result)) throw new Error('expected a stream, got a Response object')
    const events: StreamEvents[] = []
    for await (const event of result) events.push(event)
    expect(events.flatMap((event) => ('isUnknown' in event && event.isUnknown ? [event.raw] : []))).toEqual([])
    expect(events.map((event) => event.type).filter((type) => type.startsWith('response.image_generation_call.'))).toEqual([
      'response.image_generation_call.in_progress',
      'response.image_generation_call.generating',
      'response.image_generation_call.completed',
    ])
    const completed = events.at(-1)
    if (completed?.type !== 'response.completed') throw new Error(`expected response.completed last, got ${completed?.type}`)
    expect(completed.response.output.find((item) => item.type === 'image_generation_call')).toMatchObject({ status: 'completed', result: IMAGE })
    expect(completed.response.usage?.cost).toBe(COST)
  })
})

describe('@anthropic-ai/sdk', () => {
  const IMAGE_BLOCK = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: IMAGE } }

  it('messages.create: the image is an image content block', async () => {
    const message = await anthropic.messages.create({ model: MODEL, max_tokens: 1024, messages: [{ role: 'user', content: PROMPT }], ...IMAGE_OUTPUT })
    expectImageRequested()
    // Claude never answers with images, so the SDK's ContentBlock type has no image member: compared as JSON.
    expect(message.content as unknown[]).toEqual([{ type: 'text', text: TEXT }, IMAGE_BLOCK])
    expect(message.stop_reason).toBe('end_turn')
  })

  it('messages.stream: finalMessage() keeps the image block as it came', async () => {
    const message = await anthropic.messages.stream({ model: MODEL, max_tokens: 1024, messages: [{ role: 'user', content: PROMPT }], ...IMAGE_OUTPUT }).finalMessage()
    expectImageRequested()
    expect(message.content as unknown[]).toEqual([{ type: 'text', text: TEXT }, IMAGE_BLOCK])
  })
})
