/**
 * The router models and fusion through the official `openai` SDK against a gateway on a real node:http server:
 * `responses.create` and `responses.stream` with `service/auto`, and with the fusion plugin, whose
 * `response.fusion_call.*` events and `service:fusion` item the SDK must carry without tripping over them; and
 * fusion's stream through `@openrouter/sdk`, whose schemas must parse the analysis events.
 */

import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { OpenRouter } from '@openrouter/sdk'
import type { StreamEvents } from '@openrouter/sdk/models'
import OpenAI from 'openai'
import type { ResponseCreateParamsNonStreaming, ResponseOutputMessage } from 'openai/resources/responses/responses'
import { afterEach, describe, expect, it } from 'vitest'
import { toNodeListener } from '../../src/adapters/node'
import type { ModelEntry } from '../../src/engine/models'
import { createTestGateway, scriptedProvider, type ScriptedAnswer, type ScriptedCall, type ScriptedProvider, type TestGateway } from '../../src/testing'

let testGateway: TestGateway | undefined
let server: Server | undefined

afterEach(async () => {
  if (server) await new Promise((resolve) => server!.close(resolve))
  server = undefined
  await testGateway?.close()
  testGateway = undefined
})

const entry = (slug: string, prompt: number, completion: number, provider = 'lab'): ModelEntry => ({
  slug,
  name: slug,
  endpoints: [{ provider, model: slug, contextLength: 128_000, pricing: { prompt: prompt / 1e6, completion: completion / 1e6 }, supportedParameters: ['tools', 'reasoning'] }],
})

// Percentiles 0, 50 and 100 by price: the default (medium) tier is nearest the middle one. The kit's test model
// moves to a provider without a key, so the router never picks it.
const CATALOG = [entry('lab/small', 0.1, 0.4), entry('lab/middle', 1, 4), entry('lab/large', 5, 20), entry('test/model', 1, 1, 'openai')]

const ANALYSIS = {
  consensus: ['Both say hello.'],
  contradictions: [{ topic: 'Tone', stances: [{ model: 'lab/small', stance: 'brief' }, { model: 'lab/middle', stance: 'brief too' }] }],
  partial_coverage: [{ point: 'Greeting', models: ['lab/small'] }],
  unique_insights: [{ model: 'lab/middle', insight: 'None' }],
  blind_spots: ['Coffee'],
}

/** The analyst (its brief opens its instructions) answers with the analysis; the judge (it reads the panel) with the fused answer. */
const reply = (call: ScriptedCall): ScriptedAnswer =>
  call.request.instructions?.startsWith('Several models answered')
    ? [{ type: 'text', text: JSON.stringify(ANALYSIS) }, { type: 'usage', inputTokens: 30, outputTokens: 20 }]
    : call.request.instructions?.includes('<answer model=')
      ? [{ type: 'text', text: ['Fused: ', 'drink it in moderation.'] }, { type: 'usage', inputTokens: 50, outputTokens: 10 }]
      : [{ type: 'text', text: [`${call.model} `, 'says hello.'] }, { type: 'usage', inputTokens: 10, outputTokens: 4 }]

/** The gateway on a loopback HTTP server, and SDK clients for it. */
const start = async (): Promise<{ client: OpenAI; openRouter: OpenRouter; lab: ScriptedProvider }> => {
  const lab = scriptedProvider({ reply })
  testGateway = await createTestGateway({ providers: { lab }, models: CATALOG })
  server = createServer(toNodeListener(testGateway.gateway))
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const baseURL = `http://127.0.0.1:${port}/api/v1`
  return {
    client: new OpenAI({ baseURL, apiKey: testGateway.regularKey, maxRetries: 0 }),
    openRouter: new OpenRouter({ serverURL: baseURL, apiKey: testGateway.regularKey, retryConfig: { strategy: 'none' }, timeoutMs: 30_000 }),
    lab,
  }
}

// The gateway's own fields, which the SDK's types do not know.
const params = (body: Record<string, unknown>) => ({ input: 'Is coffee good for you?', ...body }) as unknown as ResponseCreateParamsNonStreaming

describe('service/auto through the openai SDK', () => {
  it('responses.create: the chosen model answers and names itself', async () => {
    const { client, lab } = await start()
    const response = await client.responses.create(params({ model: 'service/auto' }))
    expect(response.model).toBe('lab/middle')
    expect(response.output_text).toBe('lab/middle says hello.')
    expect(lab.calls.map((call) => call.model)).toEqual(['lab/middle'])
  })

  it('responses.stream: the chosen model streams, with the router stage in the opted-in metadata', async () => {
    const { client } = await start()
    const stream = client.responses.stream(params({ model: 'service/auto', plugins: [{ id: 'auto-router', cost_tier: 'max' }] }) as never, {
      headers: { 'x-service-metadata': 'enabled' },
    })
    let text = ''
    for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta
    const final = (await stream.finalResponse()) as unknown as { model: string; service_metadata: { strategy: string; pipeline: Array<{ data: Record<string, unknown> }> } }
    expect(text).toBe('lab/large says hello.')
    expect(final.model).toBe('lab/large')
    expect(final.service_metadata.strategy).toBe('auto')
    expect(final.service_metadata.pipeline[0]!.data).toMatchObject({ task_type: 'chat', cost_tier: 'max', model: 'lab/large' })
  })
})

describe('fusion through the openai SDK', () => {
  const fusion = params({ model: 'lab/large', plugins: [{ id: 'fusion', analysis_models: ['lab/small', 'lab/middle'] }] })

  it('responses.create: the fusion item with its analysis, then the judge’s answer, with every call in the usage', async () => {
    const { client, lab } = await start()
    const response = await client.responses.create(fusion)
    expect(response.output_text).toBe('Fused: drink it in moderation.')
    expect(response.output[0]).toMatchObject({
      type: 'service:fusion',
      status: 'completed',
      responses: [
        { model: 'lab/small', content: 'lab/small says hello.' },
        { model: 'lab/middle', content: 'lab/middle says hello.' },
      ],
      analysis: ANALYSIS,
    })
    // small: 10 × 0.1 + 4 × 0.4; middle: 10 × 1 + 4 × 4; large analysing: 30 × 5 + 20 × 20; large judging: 50 × 5 + 10 × 20, in µ$.
    expect(response.usage).toMatchObject({ input_tokens: 100, output_tokens: 38 })
    expect((response.usage as unknown as { cost: number }).cost).toBeCloseTo((1 + 1.6 + 10 + 16 + 150 + 400 + 250 + 200) / 1e6, 12)
    expect(lab.calls).toHaveLength(4)
  })

  it('responses.stream: the SDK passes the fusion_call events through and assembles the judge’s message', async () => {
    const { client } = await start()
    const stream = client.responses.stream(fusion as never)
    const types: string[] = []
    let text = ''
    for await (const event of stream) {
      types.push(event.type)
      if (event.type === 'response.output_text.delta') text += event.delta
    }
    const final = await stream.finalResponse()
    expect(text).toBe('Fused: drink it in moderation.')
    expect(types.filter((type) => type.startsWith('response.fusion_call.')).filter((type) => !type.endsWith('.delta'))).toEqual([
      'response.fusion_call.in_progress',
      'response.fusion_call.panel.added',
      'response.fusion_call.panel.added',
      'response.fusion_call.panel.completed',
      'response.fusion_call.panel.completed',
      'response.fusion_call.analysis.in_progress',
      'response.fusion_call.analysis.completed',
      'response.fusion_call.completed',
    ])
    expect(final.output.map((item) => item.type)).toEqual(['service:fusion', 'message'])
    expect((final.output[1] as ResponseOutputMessage).content[0]).toMatchObject({ type: 'output_text', text: 'Fused: drink it in moderation.' })
  })
})

describe('fusion through @openrouter/sdk', () => {
  it('responses.send streams: the SDK parses every fusion_call event, the analysis included, as its typed events', async () => {
    const { openRouter } = await start()
    const streamed = await openRouter.responses.send({
      responsesRequest: { model: 'lab/large', input: 'Is coffee good for you?', plugins: [{ id: 'fusion', analysisModels: ['lab/small', 'lab/middle'] }], stream: true },
    })
    if (!(Symbol.asyncIterator in streamed)) throw new Error('expected a stream, got a Response object')
    const events: StreamEvents[] = []
    for await (const event of streamed) events.push(event)
    const fusionEvents = events.flatMap((event) => {
      const type = 'isUnknown' in event && event.isUnknown ? (event.raw as { type: string }).type : event.type
      return type.startsWith('response.fusion_call.') ? [{ type, isUnknown: 'isUnknown' in event && event.isUnknown === true, event }] : []
    })
    expect(fusionEvents.filter((fusionEvent) => fusionEvent.isUnknown).map((fusionEvent) => fusionEvent.type)).toEqual([])
    const inProgress = fusionEvents.find((fusionEvent) => fusionEvent.type === 'response.fusion_call.analysis.in_progress')!.event
    expect(inProgress).toMatchObject({ analystModel: 'lab/large', judgeModel: 'lab/large', outputIndex: 0 })
    const completed = fusionEvents.find((fusionEvent) => fusionEvent.type === 'response.fusion_call.analysis.completed')!.event
    expect(completed).toMatchObject({
      analysis: {
        consensus: ['Both say hello.'],
        contradictions: [{ topic: 'Tone', stances: [{ model: 'lab/small', stance: 'brief' }, { model: 'lab/middle', stance: 'brief too' }] }],
        partialCoverage: [{ point: 'Greeting', models: ['lab/small'] }],
        uniqueInsights: [{ model: 'lab/middle', insight: 'None' }],
        blindSpots: ['Coffee'],
      },
    })
    expect(events.at(-1)?.type).toBe('response.completed')
  })
})
