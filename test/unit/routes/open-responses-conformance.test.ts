/**
 * Open Responses conformance (docs/decisions.md, Open Responses): every `/responses` answer, whole or streamed,
 * checked against the spec's schemas (test/helpers/open-responses.ts), on every recorded upstream fixture of every
 * family: text, tool calls, reasoning, refusals, truncation, server-side search, images and failures mid-stream.
 */

import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { expectOpenResponsesObject, expectOpenResponsesStream } from '../../helpers/open-responses'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture, sseFixture } from '../../helpers/upstream'

const FAMILIES = [
  { provider: 'openai', fixtures: 'openai' },
  { provider: 'groq', fixtures: 'openai-chat' },
  { provider: 'anthropic', fixtures: 'anthropic' },
  { provider: 'google-ai-studio', fixtures: 'gemini' },
]

const PRICING = { prompt: 0.000001, completion: 0.000002 }
const modelOf = (fixtures: string) => `conformance/${fixtures}`
const MODELS: ModelEntry[] = FAMILIES.map((family) => ({
  slug: modelOf(family.fixtures),
  name: family.fixtures,
  inputModalities: ['text', 'image', 'file'],
  outputModalities: ['image', 'text'],
  endpoints: [{ provider: family.provider, model: `${family.fixtures}-model`, contextLength: 200_000, pricing: PRICING }],
}))

// Upstream HTTP errors answer with the gateway's error body, not a Response object; embeddings are another route.
const isResponsesFixture = (name: string) => (name.endsWith('.json') || name.endsWith('.sse')) && !/^error-.*\.json$|embed/.test(name)
// Failures the upstream reports before any output: the gateway answers with its error body, as for an HTTP error.
const REFUSED_BEFORE_ANSWER = new Set(['error-event.sse', 'prompt-blocked.json', 'prompt-blocked.sse'])
const SCENARIOS = FAMILIES.flatMap((family) =>
  readdirSync(join(__dirname, '..', '..', 'fixtures', 'providers', family.fixtures))
    .filter(isResponsesFixture)
    .map((name) => ({ ...family, name, stream: name.endsWith('.sse'), refusedBeforeAnswer: REFUSED_BEFORE_ANSWER.has(name) })),
)

const PARAMETERS = { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] }

const requestFor = (scenario: (typeof SCENARIOS)[number]) => ({
  model: modelOf(scenario.fixtures),
  stream: scenario.stream,
  input: [
    { role: 'user', content: 'What is the weather in Paris?' },
    { type: 'function_call', call_id: 'call_earlier', name: 'get_weather', arguments: '{"location":"Lyon"}' },
    { type: 'function_call_output', call_id: 'call_earlier', output: '{"temperature":18}' },
    {
      role: 'user',
      content: [
        { type: 'input_text', text: 'And in Paris? Here is a photo and the forecast.' },
        { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' },
        { type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'forecast.pdf' },
      ],
    },
  ],
  tools: [{ type: 'function', name: 'get_weather', parameters: PARAMETERS }],
  reasoning: { effort: 'medium', summary: 'auto' },
  metadata: { suite: 'open-responses' },
  ...(scenario.name.startsWith('image') ? { modalities: ['image', 'text'] } : {}),
})

let harness: ResponsesHarness
beforeAll(async () => {
  harness = await createResponsesHarness(
    Object.fromEntries(FAMILIES.map((family) => [family.provider, family.provider === 'groq' ? { api: 'openai-chat' as const } : {}])),
    { models: MODELS },
  )
})
afterAll(() => harness.close())

describe('Open Responses conformance of /responses', () => {
  it.each(SCENARIOS.map((scenario) => [`${scenario.fixtures}/${scenario.name}`, scenario] as const))('%s', async (_label, scenario) => {
    harness.upstreams[scenario.provider]!.setHandler(() => (scenario.stream ? sseFixture(scenario.fixtures, scenario.name) : jsonFixture(scenario.fixtures, scenario.name)))
    const response = await harness.post(requestFor(scenario))
    if (scenario.refusedBeforeAnswer) {
      expect(response.status).toBeGreaterThanOrEqual(400)
      expect((await response.json()).error.message).toBeTypeOf('string')
      return
    }
    if (!scenario.stream) {
      expect(response.status, await response.clone().text()).toBe(200)
      expectOpenResponsesObject(await response.json())
      return
    }
    expect(response.status).toBe(200)
    const events = (await readSseEvents(response)).events.map((event) => event.data).filter((data) => data !== '[DONE]')
    expect(events.length).toBeGreaterThan(2)
    expectOpenResponsesStream(events)
  })

  it('checks the scenarios it means to (every family, whole and streamed)', () => {
    for (const family of FAMILIES) {
      const names = SCENARIOS.filter((scenario) => scenario.fixtures === family.fixtures).map((scenario) => scenario.name)
      expect(names).toEqual(expect.arrayContaining(['text.json', 'text.sse', 'tool-call.json', 'tool-call.sse', 'reasoning.json', 'reasoning.sse', 'error-midstream.sse']))
    }
  })
})

describe('Open Responses conformance of stored responses', () => {
  let storing: ResponsesHarness
  beforeAll(async () => {
    storing = await createResponsesHarness({ openai: {} }, { models: MODELS.filter((model) => model.slug === modelOf('openai')), storedResponses: { sweepIntervalMs: false } })
  })
  afterAll(() => storing.close())

  const get = (path: string) => storing.gateway.fetch(new Request(`http://gateway.test/api/v1${path}`, { headers: { authorization: `Bearer ${storing.key}` } }))

  it('answers, continues with previous_response_id (whole and streamed) and reads back, every object to the schema', async () => {
    storing.upstreams.openai!.setHandler((request) => (request.json?.stream ? sseFixture('openai', 'text.sse') : jsonFixture('openai', 'text.json')))
    const scenario = SCENARIOS.find((one) => one.fixtures === 'openai' && one.name === 'tool-call.json')!
    const first = await (await storing.post({ ...requestFor(scenario), stream: false })).json()
    expectOpenResponsesObject(first)
    expect(first).toMatchObject({ store: true, previous_response_id: null })

    const second = await (await storing.post({ model: modelOf('openai'), input: 'And tomorrow?', previous_response_id: first.id })).json()
    expectOpenResponsesObject(second)
    expect(second.previous_response_id).toBe(first.id)

    const streamed = await storing.post({ model: modelOf('openai'), input: 'And after?', previous_response_id: second.id, stream: true })
    const events = (await readSseEvents(streamed)).events.map((event) => event.data).filter((data) => data !== '[DONE]')
    expectOpenResponsesStream(events)
    expect(events.every((event) => !event.response || event.response.previous_response_id === second.id)).toBe(true)

    const read = await get(`/responses/${second.id}`)
    expect(read.status).toBe(200)
    const readBody = await read.json()
    expectOpenResponsesObject(readBody)
    expect(readBody).toEqual(second)
  })
})
