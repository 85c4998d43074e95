/**
 * `service:image_generation`: the model asks for a picture, the gateway draws it with an image model through the
 * engine (a loopback Gemini upstream answering with the image fixture), shows it in the tool's item and bills it.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { fixture, jsonFixture, type UpstreamReply } from '../../helpers/upstream'

const IMAGE = JSON.parse(fixture('gemini', 'image.json').toString('utf8')).candidates[0].content.parts[1].inlineData.data as string
// The image fixture's cost (docs/decisions.md, image output): 12 input tokens, 10 text tokens and one image.
const IMAGE_COST = 0.0387286

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const geminiJson = (parts: unknown[], usage = { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 }): UpstreamReply => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }], usageMetadata: usage, modelVersion: 'gemini-2.5-flash' }),
})

/** The text model asks for a sunset once, then answers; the image model draws the fixture. */
const serve = async () => {
  harness = await createResponsesHarness({ 'google-ai-studio': {} })
  harness.upstreams['google-ai-studio']!.setHandler((request) => {
    if (request.url.includes('gemini-2.5-flash-image')) return jsonFixture('gemini', 'image.json')
    // Each request of the text model asks for the picture once (its first turn), then answers.
    const hasResult = JSON.stringify(request.json.contents).includes('functionResponse')
    const reply = hasResult ? geminiJson([{ text: 'Here it is.' }]) : geminiJson([{ functionCall: { name: 'service_image_generation', args: { prompt: 'A sunset tile' } } }])
    if (!request.url.includes(':streamGenerateContent')) return reply
    return { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [`data: ${String(reply.body)}\r\n\r\n`] }
  })
  return harness
}

describe('service:image_generation', () => {
  it("draws with the workspace's image model, shows the image in the item and bills it with the turns", async () => {
    await serve()
    const response = await harness!.post({ model: 'google/gemini-2.5-flash', input: 'Draw me a sunset', tools: [{ type: 'service:image_generation' }] })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body.output[0]).toEqual({
      type: 'service:image_generation',
      id: expect.stringMatching(/^ig_/),
      status: 'completed',
      model: 'google/gemini-2.5-flash-image',
      prompt: 'A sunset tile',
      result: IMAGE,
      output_format: 'png',
    })
    expect(body.output[1]).toMatchObject({ type: 'message', content: [{ text: 'Here it is.' }] })
    const requests = harness!.upstreams['google-ai-studio']!.requests
    expect(requests.map((request) => request.url)).toEqual([
      '/models/gemini-2.5-flash:generateContent',
      '/models/gemini-2.5-flash-image:generateContent',
      '/models/gemini-2.5-flash:generateContent',
    ])
    expect(requests[1]!.json.generationConfig).toEqual({ responseModalities: ['IMAGE'] })
    expect(requests[1]!.json.contents).toEqual([{ role: 'user', parts: [{ text: 'A sunset tile' }] }])
    // The model reads that the picture was made, not its bytes.
    const result = requests[2]!.json.contents.flatMap((content: { parts: Array<Record<string, unknown>> }) => content.parts).find((part: Record<string, unknown>) => part.functionResponse)
    expect(JSON.stringify(result)).toContain('The image was generated (png) and is shown to the user.')
    expect(body.usage.cost).toBeGreaterThan(IMAGE_COST)
    expect(body.usage.output_tokens).toBe(5 + 1300 + 5)
  })

  it('shows the picture where each wire shows images: Chat Completions images, a Messages image block', async () => {
    await serve()
    const post = (path: string, body: Record<string, unknown>) =>
      harness!.gateway.fetch(
        new Request(`http://gateway.test/api/v1${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${harness!.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'google/gemini-2.5-flash', tools: [{ type: 'service:image_generation' }], ...body }),
        }),
      )
    const messages = [{ role: 'user', content: 'Draw me a sunset' }]
    const chat = await (await post('/chat/completions', { messages })).json()
    expect(chat.choices[0].message).toMatchObject({ content: 'Here it is.', images: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${IMAGE}` } }] })
    const { events } = await readSseEvents(await post('/chat/completions', { messages, stream: true }))
    const images = events.slice(0, -1).flatMap((event) => event.data.choices?.flatMap((choice: { delta: { images?: unknown[] } }) => choice.delta.images ?? []) ?? [])
    expect(images).toEqual([{ type: 'image_url', image_url: { url: `data:image/png;base64,${IMAGE}` } }])
    const message = await (await post('/messages', { messages, max_tokens: 100 })).json()
    expect(message.content).toEqual([{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: IMAGE } }, { type: 'text', text: 'Here it is.' }])
  })

  it('refuses a model that is unknown or does not draw, naming the field', async () => {
    await serve()
    const unknown = await harness!.post({ model: 'google/gemini-2.5-flash', input: 'x', tools: [{ type: 'service:image_generation', parameters: { model: 'nobody/none' } }] })
    expect((await unknown.json()).error.message).toBe('body.tools.0.parameters.model: model "nobody/none" is not in this gateway\'s catalog (GET /models lists them)')
    const textOnly = await harness!.post({ model: 'google/gemini-2.5-flash', input: 'x', tools: [{ type: 'service:image_generation', parameters: { model: 'google/gemini-2.5-flash' } }] })
    expect(textOnly.status).toBe(400)
    expect((await textOnly.json()).error.message).toBe(
      'body.tools.0.parameters.model: model "google/gemini-2.5-flash" does not produce images (GET /models?output_modalities=image lists the models that do)',
    )
    expect(harness!.upstreams['google-ai-studio']!.requests).toHaveLength(0)
  })
})
