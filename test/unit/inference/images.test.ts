/**
 * Image output end to end (docs/decisions.md, image output): a Gemini image model's `inlineData` answer on a
 * loopback upstream comes back on `/responses`, `/chat/completions` and `/messages`, whole and streamed, billed
 * per image the same both ways; routing keeps image requests on models that draw, and a request without a model
 * runs on the workspace's default image model.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { assertValidEventSequence } from '../../helpers/stream-events'
import { fixture, jsonFixture, sseFixture } from '../../helpers/upstream'

const IMAGE_MODEL = 'google/gemini-2.5-flash-image'
const IMAGE = JSON.parse(fixture('gemini', 'image.json').toString('utf8')).candidates[0].content.parts[1].inlineData.data as string
const DATA_URL = `data:image/png;base64,${IMAGE}`
const TEXT = 'Here is a small orange sunset tile for you.'

// 12 input tokens at $0.30/M; 1,300 output tokens of which 1,290 are the image's: 10 at $2.50/M, the image at $0.0387.
const INPUT_COST = 0.0000036
const OUTPUT_COST = 0.038725
const COST = 0.0387286

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

/** A gateway whose only shared key is Google's, answering every call with the image fixture. */
const gemini = async (options = {}) => {
  harness = await createResponsesHarness({ 'google-ai-studio': {} }, options)
  harness.upstreams['google-ai-studio']!.setHandler((request) =>
    request.url.includes(':streamGenerateContent') ? sseFixture('gemini', 'image.sse') : jsonFixture('gemini', 'image.json'),
  )
  return harness
}

const sent = () => harness!.upstreams['google-ai-studio']!.requests.at(-1)!

const post = (path: string, body: Record<string, unknown>) =>
  harness!.gateway.fetch(
    new Request(`http://gateway.test/api/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness!.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  )

const streamed = async (response: Response) => {
  expect(response.status).toBe(200)
  const { events } = await readSseEvents(response)
  return events
}

describe('POST /responses with an image model', () => {
  it('returns the generated image as an image_generation_call item and bills it per image', async () => {
    await gemini()
    const response = await harness!.post({ model: IMAGE_MODEL, input: 'Draw a sunset tile', modalities: ['image', 'text'], image_config: { aspect_ratio: '4:3' } })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(sent().url).toBe('/models/gemini-2.5-flash-image:generateContent')
    expect(sent().json.generationConfig).toEqual({ responseModalities: ['IMAGE', 'TEXT'], imageConfig: { aspectRatio: '4:3' } })
    expect(body.output).toEqual([
      expect.objectContaining({ type: 'message', status: 'completed', content: [expect.objectContaining({ type: 'output_text', text: TEXT })] }),
      { id: expect.stringMatching(/^ig_/), type: 'image_generation_call', status: 'completed', result: IMAGE, output_format: 'png' },
    ])
    expect(body.usage).toEqual({
      input_tokens: 12,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 1300,
      output_tokens_details: { reasoning_tokens: 0, image_tokens: 1290 },
      total_tokens: 1312,
      cost: COST,
      is_byok: false,
      cost_details: { upstream_inference_cost: null, upstream_inference_input_cost: INPUT_COST, upstream_inference_output_cost: OUTPUT_COST },
    })
  })

  it('streams the image with OpenAI’s image_generation_call events and bills it as the whole answer does', async () => {
    await gemini()
    const events = await streamed(await harness!.post({ model: IMAGE_MODEL, input: 'Draw a sunset tile', modalities: ['image', 'text'], stream: true }))
    expect(sent().url).toBe('/models/gemini-2.5-flash-image:streamGenerateContent?alt=sse')
    const data = events.slice(0, -1).map((event) => event.data)
    assertValidEventSequence(data.filter((event) => !['response.created', 'response.in_progress', 'response.completed'].includes(event.type)))
    const imageEvents = data.filter((event) => event.type.includes('image_generation_call') || event.item?.type === 'image_generation_call')
    const itemId = imageEvents[0].item.id
    expect(imageEvents.map((event) => event.type)).toEqual([
      'response.output_item.added',
      'response.image_generation_call.in_progress',
      'response.image_generation_call.generating',
      'response.image_generation_call.completed',
      'response.output_item.done',
    ])
    expect(imageEvents[0]).toMatchObject({ output_index: 1, item: { id: itemId, type: 'image_generation_call', status: 'in_progress', result: null } })
    for (const event of imageEvents.slice(1, 4)) expect(event).toEqual({ type: event.type, item_id: itemId, output_index: 1, sequence_number: expect.any(Number) })
    expect(imageEvents[4].item).toEqual({ id: itemId, type: 'image_generation_call', status: 'completed', result: IMAGE, output_format: 'png' })
    const completed = data.at(-1)
    expect(completed.type).toBe('response.completed')
    expect(completed.response.output[1]).toEqual(imageEvents[4].item)
    expect(completed.response.usage.cost).toBe(COST)
    expect(completed.response.usage.cost_details.upstream_inference_output_cost).toBe(OUTPUT_COST)
  })

  it('answers an image request without a model with the workspace’s default image model', async () => {
    const painter: ModelEntry = {
      slug: 'test/painter',
      name: 'Painter',
      endpoints: [{ provider: 'google-ai-studio', model: 'painter-1', contextLength: 32_768, pricing: { prompt: 0, completion: 0, image: 0.01 } }],
      outputModalities: ['image'],
    }
    await gemini({ models: [painter], workspaceDefaults: { textModel: 'google/gemini-2.5-flash', imageModel: 'test/painter' } })
    const images = await (await harness!.post({ input: 'Draw a sunset tile', modalities: ['image'] })).json()
    expect(sent().url).toBe('/models/painter-1:generateContent')
    expect(sent().json.generationConfig).toEqual({ responseModalities: ['IMAGE'] })
    expect(images.model).toBe('test/painter')
    expect(images.usage.cost).toBe(0.01)

    // The workspace's own setting wins over the gateway default, and text requests keep the text model.
    const { workspaces } = await harness!.gateway.admin.listWorkspaces(undefined)
    await harness!.gateway.admin.updateWorkspace(undefined, workspaces[0]!.id, { defaultImageModel: IMAGE_MODEL })
    await harness!.post({ input: 'Draw a sunset tile', modalities: ['text', 'image'] })
    expect(sent().url).toBe('/models/gemini-2.5-flash-image:generateContent')
    await harness!.post({ input: 'Hello' })
    expect(sent().url).toBe('/models/gemini-2.5-flash:generateContent')
  })

  it('routes an image request past fallback models that cannot draw, and refuses one no requested model can answer', async () => {
    await gemini()
    const served = await (await harness!.post({ model: 'google/gemini-2.5-flash', models: [IMAGE_MODEL], input: 'Draw', modalities: ['image'] })).json()
    expect(served.model).toBe(IMAGE_MODEL)
    expect(harness!.upstreams['google-ai-studio']!.requests.map((request) => request.url)).toEqual(['/models/gemini-2.5-flash-image:generateContent'])

    const refused = await harness!.post({ model: 'google/gemini-2.5-flash', models: ['google/gemini-2.5-pro'], input: 'Draw', modalities: ['text', 'image'] })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toEqual({
      error: {
        code: 400,
        message:
          'modalities: google/gemini-2.5-flash or google/gemini-2.5-pro cannot answer with "image" output; choose a model whose output_modalities include it (GET /models?output_modalities=image lists the image models)',
      },
    })
    expect(harness!.upstreams['google-ai-studio']!.requests).toHaveLength(1)
  })

  it('names an image_config key Gemini has no use for, and sends nothing', async () => {
    await gemini()
    const response = await harness!.post({ model: IMAGE_MODEL, input: 'Draw', modalities: ['image'], image_config: { quality: 'high' } })
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual({ error: { code: 400, message: 'image_config.quality: not supported by Gemini (it takes aspect_ratio and image_size)' } })
    expect(harness!.upstreams['google-ai-studio']!.requests).toHaveLength(0)
  })

  it('honours provider.max_price.image against the per-image price', async () => {
    await gemini()
    const cheap = await harness!.post({ model: IMAGE_MODEL, input: 'Draw', modalities: ['image'], provider: { max_price: { image: 0.01 } } })
    expect(cheap.status).toBe(404)
    const enough = await harness!.post({ model: IMAGE_MODEL, input: 'Draw', modalities: ['image'], provider: { max_price: { image: '0.04' } } })
    expect(enough.status).toBe(200)
  })
})

describe('POST /chat/completions with an image model', () => {
  it('puts the image on message.images as a data URL, with OpenRouter’s image_tokens', async () => {
    await gemini()
    const response = await post('/chat/completions', {
      model: IMAGE_MODEL,
      messages: [{ role: 'user', content: 'Draw a sunset tile' }],
      modalities: ['image', 'text'],
      image_config: { aspect_ratio: '1:1', image_size: '1K' },
    })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(sent().json.generationConfig).toEqual({ responseModalities: ['IMAGE', 'TEXT'], imageConfig: { aspectRatio: '1:1', imageSize: '1K' } })
    expect(body.choices[0]).toEqual({
      index: 0,
      message: { role: 'assistant', content: TEXT, refusal: null, images: [{ type: 'image_url', image_url: { url: DATA_URL } }] },
      logprobs: null,
      finish_reason: 'stop',
    })
    expect(body.usage).toMatchObject({ completion_tokens: 1300, completion_tokens_details: { reasoning_tokens: 0, image_tokens: 1290 }, cost: COST })
  })

  it('streams the image whole in delta.images when it is done', async () => {
    await gemini()
    const events = await streamed(await post('/chat/completions', { model: IMAGE_MODEL, messages: [{ role: 'user', content: 'Draw' }], modalities: ['image', 'text'], stream: true }))
    const chunks = events.slice(0, -1).map((event) => event.data)
    const deltas = chunks.flatMap((chunk) => (chunk.choices.length > 0 ? [chunk.choices[0].delta] : []))
    expect(deltas.map((delta) => delta.content ?? '').join('')).toBe(TEXT)
    expect(deltas.filter((delta) => delta.images)).toEqual([{ images: [{ type: 'image_url', image_url: { url: DATA_URL } }] }])
    expect(chunks.at(-1).usage.cost).toBe(COST)
  })

  it('sends an assistant turn’s images back to the model, so it can edit them', async () => {
    await gemini()
    const first = await (await post('/chat/completions', { model: IMAGE_MODEL, messages: [{ role: 'user', content: 'Draw' }], modalities: ['image', 'text'] })).json()
    const response = await post('/chat/completions', {
      model: IMAGE_MODEL,
      messages: [{ role: 'user', content: 'Draw' }, first.choices[0].message, { role: 'user', content: 'Make it blue' }],
      modalities: ['image', 'text'],
    })
    expect(response.status).toBe(200)
    expect(sent().json.contents).toEqual([
      { role: 'user', parts: [{ text: 'Draw' }] },
      { role: 'model', parts: [{ text: TEXT }, { inlineData: { mimeType: 'image/png', data: IMAGE } }] },
      { role: 'user', parts: [{ text: 'Make it blue' }] },
    ])
    const remote = await post('/chat/completions', {
      model: IMAGE_MODEL,
      messages: [{ role: 'user', content: 'Draw' }, { role: 'assistant', content: null, images: [{ type: 'image_url', image_url: { url: 'http://127.0.0.1/tile.png' } }] }],
    })
    expect(remote.status).toBe(400)
    expect((await remote.json()).error.message).toBe('body.messages.1.images.0.image_url.url: must be a data:image/…;base64 URL, as generated images are returned')
  })

  it('refuses an output modality it cannot give, naming the field', async () => {
    await gemini()
    const response = await post('/chat/completions', { model: IMAGE_MODEL, messages: [{ role: 'user', content: 'Sing' }], modalities: ['audio'] })
    expect(response.status).toBe(400)
    expect((await response.json()).error.message).toBe('body.modalities.0: must be one of "text", "image"')
    const config = await post('/chat/completions', { model: IMAGE_MODEL, messages: [{ role: 'user', content: 'Draw' }], image_config: { aspect_ratio: '1:1' } })
    expect(config.status).toBe(400)
    expect((await config.json()).error.message).toBe('body: image_config applies only to a request whose modalities include "image"')
  })
})

describe('POST /messages with an image model', () => {
  it('answers with an image block holding the base64 image', async () => {
    await gemini()
    const response = await post('/messages', { model: IMAGE_MODEL, max_tokens: 1024, messages: [{ role: 'user', content: 'Draw' }], modalities: ['image', 'text'] })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(sent().json.generationConfig).toMatchObject({ responseModalities: ['IMAGE', 'TEXT'] })
    expect(body.content).toEqual([
      { type: 'text', text: TEXT },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: IMAGE } },
    ])
    expect(body.usage.cost).toBe(COST)
  })

  it('streams the image as one whole image block', async () => {
    await gemini()
    const events = await streamed(await post('/messages', { model: IMAGE_MODEL, max_tokens: 1024, messages: [{ role: 'user', content: 'Draw' }], modalities: ['image', 'text'], stream: true }))
    const data = events.map((event) => event.data)
    const starts = data.filter((event) => event.type === 'content_block_start')
    expect(starts).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_start', index: 1, content_block: { type: 'image', source: { type: 'base64', media_type: 'image/png', data: IMAGE } } },
    ])
    expect(data.filter((event) => event.type === 'content_block_stop').map((event) => event.index)).toEqual([0, 1])
    expect(data.filter((event) => event.type === 'content_block_delta').every((event) => event.index === 0)).toBe(true)
    expect(data.find((event) => event.type === 'message_delta').usage.cost).toBe(COST)
  })

  it('refuses image output from a model that answers in text only', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    const response = await post('/messages', { model: 'anthropic/claude-sonnet-4.5', max_tokens: 1024, messages: [{ role: 'user', content: 'Draw' }], modalities: ['image'] })
    expect(response.status).toBe(400)
    expect((await response.json()).error.message).toMatch(/^modalities: anthropic\/claude-sonnet-4\.5 cannot answer with "image" output/)
    expect(harness.upstreams.anthropic!.requests).toHaveLength(0)
  })
})
