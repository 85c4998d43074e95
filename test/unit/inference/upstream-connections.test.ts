import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { toNodeListener } from '../../../src/adapters/node'
import { undiciTransport } from '../../../src/transport/undici'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { fixture, jsonFixture, sseFixture, type Upstream, type UpstreamReply } from '../../helpers/upstream'

/** One provider of each wire family, with a model that routes to it and how its upstream tells a stream apart. */
const FAMILIES = [
  { provider: 'openai', folder: 'openai', model: 'openai/gpt-4.1', isStream: (json: any, url: string) => json?.stream === true && !url.includes(':') },
  { provider: 'groq', folder: 'openai-chat', model: 'meta-llama/llama-3.3-70b-instruct', isStream: (json: any) => json?.stream === true },
  { provider: 'anthropic', folder: 'anthropic', model: 'anthropic/claude-sonnet-4.5', isStream: (json: any) => json?.stream === true },
  { provider: 'google-ai-studio', folder: 'gemini', model: 'google/gemini-2.5-flash', isStream: (_json: any, url: string) => url.includes(':streamGenerateContent') },
] as const

/** The first events of an SSE fixture, up to and including its first text delta. */
const throughFirstDelta = (sse: Buffer): Buffer => sse.subarray(0, sse.indexOf('\n\n', sse.indexOf('event: response.output_text.delta')) + 2)

// A streamed answer ends for the client at the upstream's final event, and the upstream body is read to its end
// right after; a client that sends its next request at once would get a second connection for that reason alone.
// So each exchange waits for the event it means: the one connection is open and idle again. (Waiting for "every
// connection free" also passed when the connection had been cut, which hid a stream that abandoned its body.)
const connectionIdle = (upstream: Upstream) =>
  vi.waitFor(() => expect(transport.stats()[upstream.url]).toMatchObject({ connected: 1, free: 1, running: 0 }))

let harness: ResponsesHarness | undefined
const transport = undiciTransport()

afterEach(async () => {
  await harness?.close()
  harness = undefined
})

describe('upstream connections (undici transport)', () => {
  for (const family of FAMILIES) {
    it(`${family.provider}: streamed and whole answers leave the connection reusable`, async () => {
      harness = await createResponsesHarness({ [family.provider]: {} }, { transport })
      const upstream = harness.upstreams[family.provider]!
      upstream.setHandler((request) =>
        family.isStream(request.json, request.url) ? sseFixture(family.folder, 'text.sse', 64) : jsonFixture(family.folder, 'text.json'),
      )
      const body = { model: family.model, input: 'hi', ...(family.provider === 'groq' ? { provider: { only: ['groq'] } } : {}) }

      for (let round = 0; round < 3; round++) {
        const streamed = await readSseEvents(await harness.post({ ...body, stream: true }))
        expect(streamed.events.at(-2)?.event).toBe('response.completed')
        await connectionIdle(upstream)
        const whole = await harness.post(body)
        expect(whole.status).toBe(200)
        await whole.json()
        await connectionIdle(upstream)
      }

      // Six exchanges, none cut off, one after another over the one keep-alive connection.
      expect(upstream.requests).toHaveLength(6)
      expect(upstream.abortCount()).toBe(0)
      expect(upstream.connectionCount()).toBe(1)
    })
  }

  it('answers the client as soon as the upstream sends its final event, even if the body stays open', async () => {
    harness = await createResponsesHarness({ openai: {} }, { transport })
    let release!: () => void
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const chunks = [fixture('openai', 'text.sse'), ': still here\n\n']
    harness.upstreams.openai!.setHandler((): UpstreamReply => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks,
      pause: { after: 1, until: held },
    }))

    const { events } = await readSseEvents(await harness.post({ model: 'openai/gpt-4.1', input: 'hi', stream: true }))

    expect(events.at(-2)?.event).toBe('response.completed')
    expect(events.at(-1)?.data).toBe('[DONE]')

    // Meanwhile the gateway kept reading; once the upstream ends its body, the connection is whole and reused.
    release()
    await connectionIdle(harness.upstreams.openai!)
    harness.upstreams.openai!.setHandler(() => jsonFixture('openai', 'text.json'))
    expect((await harness.post({ model: 'openai/gpt-4.1', input: 'hi' })).status).toBe(200)
    expect(harness.upstreams.openai!.abortCount()).toBe(0)
    expect(harness.upstreams.openai!.connectionCount()).toBe(1)
  })

  it('chat family: a body whose end arrives after [DONE] is read to its end, not cut', async () => {
    harness = await createResponsesHarness({ groq: {} }, { transport })
    const upstream = harness.upstreams.groq!
    let release!: () => void
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    // `[DONE]` goes out, and the end of the body only once the client has its whole answer.
    upstream.setHandler((): UpstreamReply => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [fixture('openai-chat', 'text.sse'), ': trailing comment\n\n'],
      pause: { after: 1, until: held },
    }))
    const body = { model: 'meta-llama/llama-3.3-70b-instruct', input: 'hi', provider: { only: ['groq'] }, stream: true }

    const { events } = await readSseEvents(await harness.post(body))
    expect(events.at(-2)?.event).toBe('response.completed')
    release()
    await connectionIdle(upstream)
    upstream.setHandler(() => sseFixture('openai-chat', 'text.sse', 64))
    expect((await readSseEvents(await harness.post(body))).events.at(-2)?.event).toBe('response.completed')

    expect(upstream.abortCount()).toBe(0)
    expect(upstream.connectionCount()).toBe(1)
  })

  describe('behind the Node bridge, a client that goes away aborts the upstream exchange at once', () => {
    const cases = [
      { name: 'whole answer, upstream still thinking', stream: false, reply: (): UpstreamReply => ({ shouldHang: true }) },
      {
        name: 'streamed answer, mid-stream',
        stream: true,
        reply: (): UpstreamReply => ({
          status: 200,
          headers: { 'content-type': 'text/event-stream' },
          chunks: [throughFirstDelta(fixture('openai', 'text.sse')), 'x'],
          pause: { after: 1, until: new Promise(() => {}) },
        }),
      },
    ]
    for (const { name, stream, reply } of cases) {
      it(name, async () => {
        harness = await createResponsesHarness({ openai: {} }, { transport })
        harness.upstreams.openai!.setHandler(reply)
        const aborted = harness.upstreams.openai!.nextClientAbort()
        const server = http.createServer(toNodeListener(harness.gateway))
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
        try {
          const { port } = server.address() as AddressInfo
          const body = JSON.stringify({ model: 'openai/gpt-4.1', input: 'hi', stream })
          const request = http.request({
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/api/v1/responses',
            headers: { authorization: `Bearer ${harness.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          })
          request.on('error', () => {})
          request.on('response', (response) => response.once('data', () => request.destroy()))
          request.end(body)
          if (!stream) {
            await vi.waitFor(() => expect(harness!.upstreams.openai!.requests).toHaveLength(1))
            request.destroy()
          }

          await aborted
        } finally {
          server.closeAllConnections()
          await new Promise<void>((resolve) => server.close(() => resolve()))
        }
      })
    }
  })
})
