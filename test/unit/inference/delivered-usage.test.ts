/**
 * What was delivered is charged (docs/decisions.md, "Books that balance"): an answer whose upstream reported no
 * usage, or that broke off after content (the connection cut, the idle timeout, the gateway shutting down), is
 * charged an estimate from the prompt and the content the client was sent, on the record marked as estimated, and
 * the key's usage is what the record says. The error says what happened to the stream.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { GatewayOptions } from '../../../src/gateway/options'
import type { GenerationRecord } from '../../../src/repositories/generations'
import { bodyReader, sseEventsOf } from '../../helpers/interrupted-stream'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import { TRANSPORTS, useTransport } from '../../helpers/transports'
import { fixture, jsonFixture, type UpstreamReply } from '../../helpers/upstream'

const MODEL = 'openai/gpt-4.1'
const PATIENT = { connectTimeoutMs: 60_000, firstByteTimeoutMs: 600_000, totalTimeoutMs: 600_000 }
const SSE_HEADERS = { 'content-type': 'text/event-stream' }

/** The OpenAI text stream up to and including its first text delta, and the rest. */
const splitAfterFirstDelta = () => {
  const sse = fixture('openai', 'text.sse')
  const split = sse.indexOf('\n\n', sse.indexOf('event: response.output_text.delta')) + 2
  return [sse.subarray(0, split), sse.subarray(split)] as const
}

/** The OpenAI text stream with `usage` taken out of its `response.completed` (a server that reports none). */
const withoutUsage = (text: string) =>
  text
    .split('\n')
    .map((line) => {
      if (!line.startsWith('data: ') || !line.includes('"response.completed"')) return line
      const event = JSON.parse(line.slice(6)) as { response: Record<string, unknown> }
      event.response.usage = null
      return `data: ${JSON.stringify(event)}`
    })
    .join('\n')

describe.each(TRANSPORTS)('what was delivered is charged (%s transport)', (_name, makeTransport) => {
  const transport = useTransport(makeTransport)
  let harness: ResponsesHarness | undefined
  const releases: Array<() => void> = []

  afterEach(async () => {
    releases.splice(0).forEach((release) => release())
    await harness?.close()
    harness = undefined
  })

  const start = async (reply: UpstreamReply, upstream: NonNullable<GatewayOptions['upstream']> = PATIENT) => {
    harness = await createResponsesHarness({ openai: {} }, { upstream, ...transport.options() })
    harness.upstreams.openai!.setHandler(() => reply)
    return harness
  }

  /** The one generation record, once written, and the key's usage once its settlement landed. */
  const books = async () => {
    await harness!.gateway.flushSpend()
    const records = (await harness!.gateway.storage.list<GenerationRecord>('generations')).items.map((item) => item.data)
    const key = await harness!.gateway.fetch(new Request('http://gateway.test/api/v1/key', { headers: { authorization: `Bearer ${harness!.key}` } }))
    const { data } = (await key.json()) as { data: { usage: number } }
    expect(records).toHaveLength(1)
    return { record: records[0]!, keyUsage: data.usage }
  }

  const expectChargedEstimate = async (usage: { input_tokens: number; output_tokens: number; cost: number }) => {
    expect(usage.input_tokens).toBeGreaterThan(0)
    expect(usage.output_tokens).toBeGreaterThan(0)
    expect(usage.cost).toBeGreaterThan(0)
    const { record, keyUsage } = await books()
    expect(record).toMatchObject({ isUsageEstimated: true, tokens: { input: usage.input_tokens, output: usage.output_tokens } })
    expect(record.cost).toBeCloseTo(usage.cost, 12)
    expect(keyUsage).toBeCloseTo(usage.cost, 12)
  }

  it('charges a stream whose connection was cut after content, and says the provider’s stream ended early', async () => {
    const [head] = splitAfterFirstDelta()
    await start({ status: 200, headers: SSE_HEADERS, chunks: [head], shouldDestroyAfter: true })
    const events = sseEventsOf(await (await harness!.post({ model: MODEL, input: 'hi', stream: true })).text())
    const failed = events.at(-2)
    expect(failed.type).toBe('response.failed')
    expect(failed.response.error.message).toBe("OpenAI: The provider's stream ended early, after part of the answer was sent")
    expect(failed.response.error.message).not.toContain('Could not reach')
    await expectChargedEstimate(failed.response.usage)
  })

  it('charges a stream the idle timeout ended after content, and names the idle timeout', async () => {
    const [head, rest] = splitAfterFirstDelta()
    await start(
      { status: 200, headers: SSE_HEADERS, chunks: [head, rest], pause: { after: 1, until: new Promise<void>((resolve) => releases.push(resolve)) } },
      { ...PATIENT, idleTimeoutMs: 200 },
    )
    const events = sseEventsOf(await (await harness!.post({ model: MODEL, input: 'hi', stream: true })).text())
    const failed = events.at(-2)
    expect(failed.response).toMatchObject({ status: 'failed', error_type: 'timeout' })
    expect(failed.response.error.message).toContain('idle timeout (0.2 s)')
    await expectChargedEstimate(failed.response.usage)
  })

  it('charges a stream the gateway shut down after content, and says so', async () => {
    const [head, rest] = splitAfterFirstDelta()
    await start({ status: 200, headers: SSE_HEADERS, chunks: [head, rest], pause: { after: 1, until: new Promise<void>((resolve) => releases.push(resolve)) } })
    const response = await harness!.post({ model: MODEL, input: 'hi', stream: true })
    const reader = bodyReader(response.body!)
    await reader.until('response.output_text.delta')
    harness!.gateway.endStreams()
    const failed = sseEventsOf(await reader.rest()).at(-2)
    expect(failed.response.error.message).toMatch(/shutting down/)
    await expectChargedEstimate(failed.response.usage)
  })

  it('charges a completed stream whose upstream reported no usage, estimated', async () => {
    await start({ status: 200, headers: SSE_HEADERS, body: withoutUsage(fixture('openai', 'text.sse').toString('utf8')) })
    const events = sseEventsOf(await (await harness!.post({ model: MODEL, input: 'hi', stream: true })).text())
    const completed = events.at(-2)
    expect(completed.type).toBe('response.completed')
    await expectChargedEstimate(completed.response.usage)
  })

  it('charges a whole answer whose upstream reported no usage, estimated', async () => {
    const reply = jsonFixture('openai', 'text.json')
    const body = JSON.parse(String(reply.body)) as Record<string, unknown>
    body.usage = null
    await start({ ...reply, body: JSON.stringify(body) })
    const answer = (await (await harness!.post({ model: MODEL, input: 'hi' })).json()) as { status: string; usage: { input_tokens: number; output_tokens: number; cost: number } }
    expect(answer.status).toBe('completed')
    await expectChargedEstimate(answer.usage)
  })
})
