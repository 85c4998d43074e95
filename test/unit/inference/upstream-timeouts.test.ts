import { createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { withDeadline } from '../../../src/core/deadline'
import type { GatewayOptions } from '../../../src/gateway/options'
import { undiciTransport } from '../../../src/transport/undici'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { fixture, jsonFixture, type UpstreamReply } from '../../helpers/upstream'

type Transport = ReturnType<typeof undiciTransport>
type TransportName = 'fetch' | 'undici'

const TRANSPORTS: Array<[TransportName, () => Transport | undefined]> = [
  ['fetch', () => undefined],
  ['undici', () => undiciTransport()],
]

/** Rejects when `promise` has not settled within `ms` (so a missing abort fails fast instead of at the test timeout). */
const within = <T>(promise: Promise<T>, ms: number, what: string): Promise<T> =>
  withDeadline(promise, ms, () => new Error(`${what} did not happen within ${ms} ms`))

/**
 * How late a deadline may fire. The total and first-byte deadlines are native timers on both transports (a few
 * ms late at most); undici runs its connect timeout on its "fast timers", which tick every ~500 ms, so there a
 * 150 ms deadline fires anywhere between ~0.5 and ~1.2 s.
 */
const lateness = (timer: 'native' | 'undici-fast') => (timer === 'native' ? 500 : 1_300)

/** Asserts a request that ended on a deadline took at least the deadline and not much longer. */
const expectDeadline = (elapsed: number, deadlineMs: number, timer: 'native' | 'undici-fast') => {
  expect(elapsed).toBeGreaterThanOrEqual(deadlineMs - 20)
  expect(elapsed).toBeLessThan(deadlineMs + lateness(timer))
}

/** The byte offset just after the first `response.output_text.delta` event of an SSE fixture. */
const afterFirstDelta = (bytes: Buffer): number => {
  const start = bytes.indexOf('event: response.output_text.delta')
  if (start < 0) throw new Error('fixture has no response.output_text.delta event')
  const end = bytes.indexOf('\n\n', start)
  if (end < 0) throw new Error('unterminated delta event in fixture')
  return end + 2
}

describe.each(TRANSPORTS)('upstream timeouts (%s transport)', (transportName, makeTransport) => {
  let transport: Transport | undefined
  let harness: ResponsesHarness | undefined
  /** Releases of upstream replies held with `pause`; run after each test so no server handler waits forever. */
  const releases: Array<() => void> = []
  const silentServers: Array<{ server: Server; sockets: Set<Socket> }> = []

  /** The first-byte deadline is undici's `headersTimeout` there (a fast timer), a native timer with fetch. */
  const firstByteTimer = 'native'

  beforeAll(() => {
    transport = makeTransport()
  })

  afterAll(async () => {
    await transport?.close()
  })

  afterEach(async () => {
    await harness?.close()
    harness = undefined
    releases.splice(0).forEach((release) => release())
    for (const { server, sockets } of silentServers.splice(0)) {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })

  /** A promise that stays pending until the end of the test. */
  const heldUntilTestEnds = () =>
    new Promise<void>((resolve) => {
      releases.push(resolve)
    })

  const start = async (upstream: NonNullable<GatewayOptions['upstream']>, providers: string[] = ['openai'], extra: Partial<GatewayOptions> = {}) =>
    (harness = await createResponsesHarness(
      Object.fromEntries(providers.map((id) => [id, {}])),
      { upstream, ...(transport ? { transport } : {}), ...extra },
    ))

  it('first-byte timeout, non-streaming: 524 timeout, promptly, and the upstream connection is closed', async () => {
    const { upstreams } = await start({ firstByteTimeoutMs: 200 })
    const upstream = upstreams.openai!
    upstream.setHandler(() => ({ shouldHang: true }))
    const aborted = upstream.nextClientAbort()

    const started = performance.now()
    const response = await harness!.post({ model: 'openai/gpt-4.1', input: 'hi' })
    const elapsed = performance.now() - started

    expect(response.status).toBe(524)
    expect(response.headers.get('content-type')).toContain('application/json')
    const body = await response.json()
    expect(body.error).toEqual({
      code: 524,
      message: 'OpenAI: No answer in time (first byte)',
      metadata: { error_type: 'timeout', provider_name: 'openai' },
    })
    // Not before the deadline, and well before anything like a default timeout.
    expectDeadline(elapsed, 200, firstByteTimer)

    await within(aborted, 1_000, 'the upstream connection closing')
    expect(upstream.requests).toHaveLength(1)
    expect(upstream.abortCount()).toBe(1)
  })

  it('first-byte timeout, streaming before the commit deadline: a clean HTTP 524, not an event stream', async () => {
    const { upstreams } = await start({ firstByteTimeoutMs: 200 })
    const upstream = upstreams.openai!
    upstream.setHandler(() => ({ shouldHang: true }))
    const aborted = upstream.nextClientAbort()

    const started = performance.now()
    const response = await harness!.post({ model: 'openai/gpt-4.1', input: 'hi', stream: true })
    const elapsed = performance.now() - started

    expect(response.status).toBe(524)
    expect(response.headers.get('content-type')).toContain('application/json')
    const body = await response.json()
    expect(body.error).toMatchObject({ code: 524, metadata: { error_type: 'timeout', provider_name: 'openai' } })
    expect(body.error.message).toBe('OpenAI: No answer in time (first byte)')
    expectDeadline(elapsed, 200, firstByteTimer)
    await within(aborted, 1_000, 'the upstream connection closing')
  })

  it('first-byte timeout falls back to the next model before the first byte', async () => {
    const { upstreams } = await start({ firstByteTimeoutMs: 200 }, ['openai', 'anthropic'])
    upstreams.openai!.setHandler(() => ({ shouldHang: true }))
    upstreams.anthropic!.setHandler(() => jsonFixture('anthropic', 'text.json'))
    const aborted = upstreams.openai!.nextClientAbort()

    const started = performance.now()
    const response = await harness!.post(
      { model: 'openai/gpt-4.1', models: ['anthropic/claude-sonnet-4.5'], input: 'hi' },
      { 'x-service-metadata': 'enabled' },
    )
    const elapsed = performance.now() - started

    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body).toMatchObject({ status: 'completed', model: 'anthropic/claude-sonnet-4.5', error: null })
    expect(body).not.toHaveProperty('error_type')
    expect(body.output[0].content[0].text).toContain('Paris')
    expect(body.service_metadata).toMatchObject({ attempt: 2, strategy: 'fallback', requested: 'openai/gpt-4.1' })
    // The fallback waited for the first attempt's deadline, no longer.
    expectDeadline(elapsed, 200, firstByteTimer)

    await within(aborted, 1_000, 'the timed-out upstream connection closing')
    expect(upstreams.openai!.requests).toHaveLength(1)
    expect(upstreams.anthropic!.requests).toHaveLength(1)
    expect(upstreams.anthropic!.abortCount()).toBe(0)
  })

  it('total timeout mid-stream: content, then an in-band response.failed (timeout), then [DONE]', async () => {
    const { upstreams } = await start({ firstByteTimeoutMs: 10_000, totalTimeoutMs: 300 })
    const upstream = upstreams.openai!
    const sse = fixture('openai', 'text.sse')
    const split = afterFirstDelta(sse)
    const held = heldUntilTestEnds()
    upstream.setHandler((): UpstreamReply => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
      chunks: [sse.subarray(0, split), sse.subarray(split)],
      pause: { after: 1, until: held },
    }))
    const aborted = upstream.nextClientAbort()

    const started = performance.now()
    const response = await harness!.post({ model: 'openai/gpt-4.1', input: 'hi', stream: true })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toContain('text/event-stream')
    const { events } = await readSseEvents(response)
    const elapsed = performance.now() - started

    const types = events.map((event) => (event.data === '[DONE]' ? '[DONE]' : event.data.type))
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.failed',
      '[DONE]',
    ])
    // Every event but [DONE] names its type on the `event:` line too, and sequence numbers count up from 0.
    expect(events.slice(0, -1).map((event) => event.event)).toEqual(types.slice(0, -1))
    expect(events.slice(0, -1).map((event) => event.data.sequence_number)).toEqual([0, 1, 2, 3, 4, 5])

    const delta = events[4]!.data
    expect(typeof delta.delta).toBe('string')
    expect(delta.delta.length).toBeGreaterThan(0)

    const failed = events[5]!.data.response
    expect(failed).toMatchObject({
      status: 'failed',
      model: 'openai/gpt-4.1',
      error_type: 'timeout',
      error: { code: 'server_error', message: expect.stringContaining("The provider's answer ran past the total timeout") },
    })
    expectDeadline(elapsed, 300, 'native')

    await within(aborted, 1_000, 'the upstream connection closing')
    expect(upstream.abortCount()).toBe(1)
  })

  it('total timeout on a non-streaming body that starts but never ends: 524 timeout', async () => {
    const { upstreams } = await start({ firstByteTimeoutMs: 10_000, totalTimeoutMs: 300 })
    const upstream = upstreams.openai!
    const json = fixture('openai', 'text.json')
    const half = Math.floor(json.length / 2)
    const held = heldUntilTestEnds()
    upstream.setHandler((): UpstreamReply => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      chunks: [json.subarray(0, half), json.subarray(half)],
      pause: { after: 1, until: held },
    }))
    const aborted = upstream.nextClientAbort()

    const started = performance.now()
    const response = await harness!.post({ model: 'openai/gpt-4.1', input: 'hi' })
    const elapsed = performance.now() - started

    expect(response.status).toBe(524)
    const body = await response.json()
    expect(body.error).toEqual({
      code: 524,
      message: 'OpenAI: No answer in time (total)',
      metadata: { error_type: 'timeout', provider_name: 'openai' },
    })
    expectDeadline(elapsed, 300, 'native')

    await within(aborted, 1_000, 'the upstream connection closing')
    expect(upstream.requests).toHaveLength(1)
  })

  /**
   * A connect timeout on loopback: the upstream is `https://` and its server accepts the TCP connection
   * but never answers the TLS ClientHello, so the handshake (part of "connect" for undici) never ends.
   * The fetch transport does not apply `connectTimeoutMs` at all: there the first-byte deadline fires, and the
   * client is told `(first byte)`.
   */
  it(`stalled connection (TLS handshake never answered): 524 timeout, ${transportName === 'undici' ? 'connect' : 'first byte'} phase`, async () => {
    const sockets = new Set<Socket>()
    let resolveClosed!: () => void
    const closed = new Promise<void>((resolve) => {
      resolveClosed = resolve
    })
    const server = createServer((socket) => {
      sockets.add(socket)
      // Read (and ignore) the ClientHello, so the end of the connection is seen.
      socket.resume()
      socket.on('error', () => {})
      socket.on('close', () => {
        sockets.delete(socket)
        resolveClosed()
      })
    })
    silentServers.push({ server, sockets })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo

    const connectTimeoutMs = 150
    const firstByteTimeoutMs = 400
    await start({ connectTimeoutMs, firstByteTimeoutMs }, ['openai'], {
      providers: { openai: { baseURL: `https://127.0.0.1:${port}`, apiKey: 'sk-shared-openai-0123456789abcdef' } },
    })

    const started = performance.now()
    const response = await harness!.post({ model: 'openai/gpt-4.1', input: 'hi' })
    const elapsed = performance.now() - started

    expect(response.status).toBe(524)
    const body = await response.json()
    const phase = transportName === 'undici' ? 'connect' : 'first byte'
    expect(body.error).toEqual({
      code: 524,
      message: `OpenAI: No answer in time (${phase})`,
      metadata: { error_type: 'timeout', provider_name: 'openai' },
    })
    if (transportName === 'undici') {
      expectDeadline(elapsed, connectTimeoutMs, 'undici-fast')
      // undici destroyed the half-open connection when its connect timeout fired.
      await within(closed, 1_000, 'the stalled connection closing')
    } else {
      expectDeadline(elapsed, firstByteTimeoutMs, 'native')
      // Not asserted: aborting a global-fetch request mid-handshake leaves the socket to the global dispatcher's own
      // connect timeout (10 s), so the stalled connection is not closed promptly with this transport (it closes ~10 s later).
    }
  })
})
