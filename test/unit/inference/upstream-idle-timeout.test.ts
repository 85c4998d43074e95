/**
 * An upstream that sends its headers (and maybe some content) and then goes silent: the idle timeout between
 * chunks ends the exchange long before the total timeout. Before content that is a silent fallback, or a clean
 * 524; after content an in-band `response.failed`. Nothing here measures time: the total timeout is far beyond
 * the test's own timeout, so without an idle timeout these tests hang and fail.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { GatewayOptions } from '../../../src/gateway/options'
import { TRANSPORTS, useTransport } from '../../helpers/transports'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { fixture, sseFixture, type UpstreamReply } from '../../helpers/upstream'


/** Far beyond the test's timeout: only the idle timeout can end these exchanges in time. */
const PATIENT = { connectTimeoutMs: 60_000, firstByteTimeoutMs: 600_000, totalTimeoutMs: 600_000 }

describe.each(TRANSPORTS)('upstream idle timeout (%s transport)', (_name, makeTransport) => {
  const transport = useTransport(makeTransport)
  let harness: ResponsesHarness | undefined
  const releases: Array<() => void> = []

  afterEach(async () => {
    releases.splice(0).forEach((release) => release())
    await harness?.close()
    harness = undefined
  })

  const silenceUntilTestEnds = () =>
    new Promise<void>((resolve) => {
      releases.push(resolve)
    })

  const start = (providers: string[], upstream: NonNullable<GatewayOptions['upstream']>) =>
    createResponsesHarness(Object.fromEntries(providers.map((id) => [id, {}])), { upstream, ...transport.options() })

  it('after content: the stream ends in-band with a timeout, and the upstream connection is dropped', async () => {
    harness = await start(['openai'], { ...PATIENT, idleTimeoutMs: 200 })
    const upstream = harness.upstreams.openai!
    const sse = fixture('openai', 'text.sse')
    const split = sse.indexOf('\n\n', sse.indexOf('event: response.output_text.delta')) + 2
    upstream.setHandler((): UpstreamReply => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [sse.subarray(0, split), sse.subarray(split)],
      pause: { after: 1, until: silenceUntilTestEnds() },
    }))
    const aborted = upstream.nextClientAbort()

    const response = await harness.post({ model: 'openai/gpt-4.1', input: 'hi', stream: true })
    expect(response.status).toBe(200)
    const { events } = await readSseEvents(response)

    const types = events.map((event) => (event.data === '[DONE]' ? '[DONE]' : event.data.type))
    expect(types.slice(-3)).toEqual(['response.output_text.delta', 'response.failed', '[DONE]'])
    expect(events.at(-2)!.data.response).toMatchObject({
      status: 'failed',
      error_type: 'timeout',
      error: { code: 'server_error', message: "OpenAI: The provider's stream sent nothing for longer than the idle timeout (0.2 s) after part of the answer" },
    })
    await aborted
    expect(upstream.abortCount()).toBe(1)
  })

  it('before content, whole answer: a clean 524 once the body stalls', async () => {
    harness = await start(['openai'], { ...PATIENT, idleTimeoutMs: 200 })
    const upstream = harness.upstreams.openai!
    const json = fixture('openai', 'text.json')
    upstream.setHandler((): UpstreamReply => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      chunks: [json.subarray(0, 40), json.subarray(40)],
      pause: { after: 1, until: silenceUntilTestEnds() },
    }))

    const response = await harness.post({ model: 'openai/gpt-4.1', input: 'hi' })

    expect(response.status).toBe(524)
    expect(await response.json()).toEqual({
      error: { code: 524, message: 'OpenAI: No answer in time (idle between chunks)', metadata: { error_type: 'timeout', provider_name: 'openai' } },
    })
  })

  it('before content, stream: headers then silence fall back to the next model without a trace', async () => {
    harness = await start(['openai', 'anthropic'], { ...PATIENT, idleTimeoutMs: 200 })
    harness.upstreams.openai!.setHandler((): UpstreamReply => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [': still thinking\n\n', ''],
      pause: { after: 1, until: silenceUntilTestEnds() },
    }))
    harness.upstreams.anthropic!.setHandler(() => sseFixture('anthropic', 'text.sse'))

    const response = await harness.post({ model: 'openai/gpt-4.1', models: ['anthropic/claude-sonnet-4.5'], input: 'hi', stream: true })

    expect(response.status).toBe(200)
    const { events } = await readSseEvents(response)
    expect(events[0]!.data).toMatchObject({ type: 'response.created', response: { model: 'anthropic/claude-sonnet-4.5' } })
    expect(events.at(-2)!.data).toMatchObject({ type: 'response.completed', response: { status: 'completed', model: 'anthropic/claude-sonnet-4.5' } })
    expect(events.some((event) => event.data !== '[DONE]' && event.data.type === 'response.failed')).toBe(false)
    expect(harness.upstreams.openai!.abortCount()).toBe(1)
  })
})
