/**
 * With an SDK that propagates async context (Node's, registered globally as a host would), the store calls a request
 * makes while it is open become child spans of its span, and an ejection or a spend refusal it causes an event on
 * it; `tracing: true` uses the registered SDK.
 */

import { trace, context, propagation } from '@opentelemetry/api'
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestGateway } from '../../../src/testing/test-gateway'
import { scriptedProvider } from '../../../src/testing/scripted-provider'

const exporter = new InMemorySpanExporter()
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })

beforeAll(() => provider.register())
afterAll(async () => {
  await provider.shutdown()
  trace.disable()
  context.disable()
  propagation.disable()
})

describe('traces of store calls', () => {
  it('are children of the request that made them', async () => {
    const gateway = await createTestGateway({ providers: { alpha: scriptedProvider({ reply: 'Hi' }) }, tracing: true })
    try {
      expect((await gateway.responses({ input: 'hi' })).status).toBe(200)
    } finally {
      await gateway.close()
    }
    const spans = exporter.getFinishedSpans()
    const request = spans.find((span) => span.name === 'POST /responses')!
    expect(request).toBeDefined()
    const stores = spans.filter((span) => span.name.startsWith('store '))
    // At least the caller's key, read to authenticate it.
    expect(stores.map((span) => span.name)).toContain('store get')
    for (const store of stores) {
      expect(store.parentSpanContext?.spanId).toBe(request.spanContext().spanId)
      expect(store.attributes['db.operation.name']).toBe(store.name.slice('store '.length))
    }
  })

  it('mark an ejection and a spend refusal as events of the request that caused them', async () => {
    exporter.reset()
    const failing = scriptedProvider({ reply: [{ type: 'http_error', status: 503 }] })
    const gateway = await createTestGateway({ providers: { alpha: failing }, tracing: true, outlierDetection: { consecutiveFailures: 1 } })
    try {
      expect((await gateway.responses({ input: 'hi' })).status).toBeGreaterThanOrEqual(500)
      const limited = await gateway.call('PATCH', `/keys/${gateway.regularKeyHash}`, { json: { limit: 0.000000001 } })
      expect(limited.status).toBe(200)
      expect((await gateway.responses({ input: 'hi' })).status).toBe(402)
    } finally {
      await gateway.close()
    }
    const [failed, refused] = exporter.getFinishedSpans().filter((span) => span.name === 'POST /responses')
    expect(failed!.events.map((event) => [event.name, event.attributes])).toEqual([
      ['modelgate.outlier_ejected', { 'modelgate.ejected.kind': 'endpoint', 'gen_ai.provider.name': 'alpha', 'modelgate.ejected.seconds': expect.any(Number) }],
    ])
    expect(refused!.events.map((event) => [event.name, event.attributes])).toEqual([['modelgate.spend_refused', { 'modelgate.spend_limit': 'key' }]])
  })
})
