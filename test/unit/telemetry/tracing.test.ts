/**
 * Traces of a gateway, caught by an in-memory exporter: a fallback request (the first provider fails, the second
 * answers) makes one server span continued from the caller's traceparent, and a client span per attempt under it,
 * whose context is the traceparent the upstream received. GenAI attributes on both; no key anywhere.
 */

import { propagation } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture } from '../../helpers/upstream'

const PRICING = { prompt: 0.000001, completion: 0.000002 }
const MODELS: ModelEntry[] = [
  {
    slug: 'test/model',
    name: 'Test model',
    endpoints: [
      { provider: 'alpha', model: 'alpha-model', contextLength: 8192, pricing: PRICING },
      { provider: 'beta', model: 'beta-model', contextLength: 8192, pricing: PRICING },
    ],
  },
]
const CALLER_TRACE = '0af7651916cd43dd8448eb211c80319c'
const CALLER_SPAN = 'b7ad6b7169203331'

const exporter = new InMemorySpanExporter()
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
let harness: ResponsesHarness | undefined

beforeAll(() => {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
})
afterAll(() => {
  propagation.disable()
})
afterEach(async () => {
  await harness?.close()
  harness = undefined
  exporter.reset()
})

const byName = (spans: ReadableSpan[], name: string) => spans.filter((span) => span.name === name)

describe('traces', () => {
  it('make a server span continued from the caller and a client span per attempt, the attempt passing its context upstream', async () => {
    harness = await createResponsesHarness({ alpha: { api: 'openai-chat' }, beta: { api: 'openai-chat' } }, { models: MODELS, tracing: { tracerProvider } })
    const { alpha, beta } = harness.upstreams
    alpha!.setHandler(() => ({ status: 503, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: { message: 'down for maintenance' } }) }))
    let upstreamTraceparent: string | undefined
    beta!.setHandler((request) => {
      upstreamTraceparent = request.headers.traceparent as string | undefined
      return jsonFixture('openai-chat', 'text.json')
    })
    const response = await harness.post({ model: 'test/model', input: 'hi' }, { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` })
    expect(response.status).toBe(200)
    const body = await response.json()

    const spans = exporter.getFinishedSpans()
    const [server] = byName(spans, 'POST /responses')
    expect(server).toBeDefined()
    expect(server!.spanContext().traceId).toBe(CALLER_TRACE)
    expect(server!.parentSpanContext?.spanId).toBe(CALLER_SPAN)
    expect(server!.attributes).toMatchObject({
      'http.response.status_code': 200,
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'test/model',
      'gen_ai.response.model': 'test/model',
      'gen_ai.provider.name': 'beta',
      'gen_ai.usage.input_tokens': body.usage.input_tokens,
      'gen_ai.usage.output_tokens': body.usage.output_tokens,
      'gen_ai.response.finish_reasons': ['completed'],
      'modelgate.cost_usd': body.usage.cost,
      'modelgate.attempts': 2,
    })
    expect(server!.attributes['modelgate.key_hash_prefix']).toMatch(/^[0-9a-f]{8}$/)
    expect(server!.attributes['modelgate.workspace_id']).toBeTypeOf('string')

    const attempts = byName(spans, 'chat test/model').sort((a, b) => Number(a.attributes['modelgate.attempt']) - Number(b.attributes['modelgate.attempt']))
    expect(attempts).toHaveLength(2)
    for (const attempt of attempts) {
      expect(attempt.parentSpanContext?.spanId).toBe(server!.spanContext().spanId)
      expect(attempt.spanContext().traceId).toBe(CALLER_TRACE)
    }
    expect(attempts[0]!.attributes).toMatchObject({ 'gen_ai.provider.name': 'alpha', 'modelgate.outcome': 'failed', 'http.response.status_code': 503 })
    expect(attempts[0]!.status.code).toBe(2)
    expect(attempts[1]!.attributes).toMatchObject({ 'gen_ai.provider.name': 'beta', 'modelgate.outcome': 'answered', 'modelgate.fallback_reason': attempts[0]!.attributes['error.type'] })
    expect(attempts[1]!.attributes['modelgate.time_to_first_byte_ms']).toBeTypeOf('number')
    // The upstream was sent the answering attempt's own context.
    expect(upstreamTraceparent).toBe(`00-${CALLER_TRACE}-${attempts[1]!.spanContext().spanId}-01`)

    const stages = spans.filter((span) => span.name.startsWith('stage '))
    expect(stages.length).toBeGreaterThan(0)
    for (const stage of stages) expect(stage.parentSpanContext?.spanId).toBe(server!.spanContext().spanId)
    expect(JSON.stringify(spans.map((span) => span.attributes))).not.toContain(harness.key)
  })

  it('puts what was said into the request span only for a workspace that broadcasts to observability', async () => {
    harness = await createResponsesHarness({ alpha: { api: 'openai-chat' } }, { models: [{ ...MODELS[0]!, endpoints: [MODELS[0]!.endpoints[0]!] }], tracing: { tracerProvider } })
    harness.upstreams.alpha!.setHandler(() => jsonFixture('openai-chat', 'text.json'))
    const secretWords = 'the launch code is tangerine'
    expect((await harness.post({ model: 'test/model', input: secretWords })).status).toBe(200)
    const [quiet] = byName(exporter.getFinishedSpans(), 'POST /responses')
    expect(quiet!.attributes['modelgate.request.content']).toBeUndefined()
    expect(JSON.stringify(quiet!.attributes)).not.toContain('tangerine')
    exporter.reset()

    const patched = await harness.gateway.fetch(
      new Request('http://gateway.test/api/v1/workspaces/default', {
        method: 'PATCH',
        headers: { authorization: `Bearer ${harness.managementKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ is_observability_broadcast_enabled: true }),
      }),
    )
    expect(patched.status).toBe(200)
    const answered = await harness.post({ model: 'test/model', instructions: 'Be brief', input: secretWords })
    const body = await answered.json()
    const [broadcast] = byName(exporter.getFinishedSpans(), 'POST /responses')
    expect(JSON.parse(String(broadcast!.attributes['modelgate.request.content']))).toEqual({ instructions: 'Be brief', input: secretWords })
    expect(JSON.parse(String(broadcast!.attributes['modelgate.response.content']))).toEqual(body.output)
    expect(broadcast!.attributes['gen_ai.response.id']).toBe(body.id)
  })

  it('starts a new trace without a traceparent, and makes no span when tracing is off', async () => {
    harness = await createResponsesHarness({ alpha: { api: 'openai-chat' } }, { models: [{ ...MODELS[0]!, endpoints: [MODELS[0]!.endpoints[0]!] }], tracing: { tracerProvider } })
    harness.upstreams.alpha!.setHandler(() => jsonFixture('openai-chat', 'text.json'))
    expect((await harness.post({ model: 'test/model', input: 'hi' })).status).toBe(200)
    const [server] = byName(exporter.getFinishedSpans(), 'POST /responses')
    expect(server!.parentSpanContext).toBeUndefined()
    await harness.close()
    exporter.reset()

    harness = await createResponsesHarness({ alpha: { api: 'openai-chat' } }, { models: [{ ...MODELS[0]!, endpoints: [MODELS[0]!.endpoints[0]!] }] })
    let upstreamTraceparent: unknown = 'unset'
    harness.upstreams.alpha!.setHandler((request) => {
      upstreamTraceparent = request.headers.traceparent
      return jsonFixture('openai-chat', 'text.json')
    })
    expect((await harness.post({ model: 'test/model', input: 'hi' }, { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` })).status).toBe(200)
    expect(exporter.getFinishedSpans()).toEqual([])
    expect(upstreamTraceparent).toBeUndefined()
  })
})
