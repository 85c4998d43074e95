/**
 * The preparation's stages in the telemetry (src/engine/run.ts): a guardrail's input scan is a stage that did work, so
 * it is reported as `stageEnded` and traced as a child of the request's span, as the run stages are; a stage with
 * nothing to do reports nothing.
 */

import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterEach, describe, expect, it } from 'vitest'
import type { StageEnded } from '../../../src/core/telemetry'
import { createTestGateway, scriptedProvider, TEST_MODEL, type TestGateway } from '../../../src/testing'

let t: TestGateway | undefined
afterEach(() => t?.close())

const start = async (options: Parameters<typeof createTestGateway>[0] extends infer O ? Partial<O & object> : never) => {
  const alpha = scriptedProvider({ reply: [{ type: 'text', text: 'Hello' }, { type: 'usage', inputTokens: 5, outputTokens: 2 }] })
  t = await createTestGateway({ providers: { alpha }, ...options })
  return t
}

/** A guardrail that redacts e-mail addresses, assigned to the test's regular key. */
const guardKey = async (gateway: TestGateway) => {
  const created = await (await gateway.call('POST', '/guardrails', { json: { name: 'Redact mail', content_filter_builtins: [{ slug: 'email', action: 'redact' }] } })).json()
  expect((await gateway.call('POST', `/guardrails/${created.data.id}/assignments/keys`, { json: { key_hashes: [gateway.regularKeyHash] } })).status).toBe(200)
}

describe('the preparation stages in the telemetry', () => {
  it('reports a guardrail input scan as a stage of its request, and nothing for a request no guardrail governs', async () => {
    const stages: StageEnded[] = []
    const gateway = await start({ observers: [{ stageEnded: (event) => void stages.push(event) }] })
    expect((await gateway.responses({ model: TEST_MODEL, input: 'Mail jane.doe@example.com' })).status).toBe(200)
    expect(stages.filter((event) => event.stage.endsWith(':check-input'))).toEqual([])
    await guardKey(gateway)
    const response = await gateway.responses({ model: TEST_MODEL, input: 'Mail jane.doe@example.com' })
    expect(response.status).toBe(200)
    const scans = stages.filter((event) => event.stage === 'guardrails:check-input')
    expect(scans).toHaveLength(1)
    expect(scans[0]).toMatchObject({ requestId: response.headers.get('x-request-id'), isError: false })
    expect(scans[0]!.durationMs).toBeGreaterThanOrEqual(0)
  })

  it('traces the scan as a child span of the request span', async () => {
    const exporter = new InMemorySpanExporter()
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
    const gateway = await start({ tracing: { tracerProvider } })
    await guardKey(gateway)
    expect((await gateway.responses({ model: TEST_MODEL, input: 'Mail jane.doe@example.com' })).status).toBe(200)
    const spans = exporter.getFinishedSpans()
    const scan = spans.find((span) => span.name === 'stage guardrails:check-input')
    expect(scan, spans.map((span) => span.name).join(', ')).toBeDefined()
    const parent = spans.find((span) => span.spanContext().spanId === scan!.parentSpanContext?.spanId)
    expect(parent?.attributes['http.route'] ?? parent?.name).toBeDefined()
    expect(parent?.spanContext().traceId).toBe(scan!.spanContext().traceId)
    expect(spans.filter((span) => span.name.startsWith('POST'))).toContain(parent)
  })
})
