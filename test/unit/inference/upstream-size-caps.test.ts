/**
 * Hostile upstreams that answer without end: one endless SSE event, and whole JSON answers of hundreds of MiB,
 * generated lazily (with backpressure) so the test process never holds them. The gateway must stop reading at
 * about its cap, drop the connection, answer 502 (or fail in-band once a stream has started), and keep its
 * memory bounded.
 */

import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import type { GatewayOptions } from '../../../src/gateway/options'
import { TRANSPORTS, useTransport } from '../../helpers/transports'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { fixture } from '../../helpers/upstream'

const MIB = 1024 * 1024
const CHUNK = Buffer.alloc(64 * 1024, 'a')
/** Loopback socket buffers and the transport's small read-ahead: what may pass the cap before the drop is seen. */
const IN_FLIGHT = 16 * MIB
/** Peak memory growth allowed: measured at 15-60 MB here, where the unbounded reads took 800 MB and 4.9 GB. */
const RSS_BOUND = 160 * MIB

interface Hostile {
  url: string
  /** Per request: bytes of body written when the gateway dropped the connection (or the total, had it not). */
  written: Array<Promise<{ bytes: number; isCutOff: boolean }>>
  close(): Promise<void>
}

/** Serves `head` then filler up to `totalBytes`, writing only as fast as the gateway reads. */
const startHostile = async (reply: { contentType: string; head: Buffer | string; totalBytes: number; declareLength?: boolean; holdBody?: boolean }): Promise<Hostile> => {
  const written: Hostile['written'] = []
  const server: Server = createServer((req, res: ServerResponse) => {
    req.resume()
    written.push(
      new Promise((resolve) => {
        let bytes = 0
        res.on('close', () => resolve({ bytes, isCutOff: !res.writableFinished }))
        res.writeHead(200, {
          'content-type': reply.contentType,
          ...(reply.declareLength ? { 'content-length': String(reply.totalBytes) } : {}),
        })
        if (reply.holdBody) return void res.flushHeaders()
        bytes += Buffer.byteLength(reply.head)
        res.write(reply.head)
        const pump = () => {
          while (bytes < reply.totalBytes && !res.destroyed) {
            bytes += CHUNK.byteLength
            if (!res.write(CHUNK)) return void res.once('drain', pump)
          }
          if (!res.destroyed) res.end()
        }
        pump()
      }),
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    written,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** Peak resident memory while `run` runs, above what it was before. */
const rssGrowthDuring = async <T>(run: () => Promise<T>): Promise<{ result: T; growth: number }> => {
  globalThis.gc?.()
  const before = process.memoryUsage.rss()
  let peak = before
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss())
  }, 5)
  try {
    const result = await run()
    peak = Math.max(peak, process.memoryUsage.rss())
    return { result, growth: peak - before }
  } finally {
    clearInterval(sampler)
  }
}

const JSON_HEAD = '{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"'
/** The stream's opening events up to its first text delta, then a delta event that never ends. */
const sseHead = () => {
  const sse = fixture('openai', 'text.sse')
  const opening = sse.subarray(0, sse.indexOf('\n\n', sse.indexOf('event: response.output_text.delta')) + 2)
  return Buffer.concat([opening, Buffer.from('event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"')])
}


describe.each(TRANSPORTS)('upstream size caps (%s transport)', (_name, makeTransport) => {
  const transport = useTransport(makeTransport)
  let harness: ResponsesHarness | undefined
  let hostile: Hostile | undefined

  afterEach(async () => {
    await harness?.close()
    await hostile?.close()
    harness = undefined
    hostile = undefined
  })

  const start = async (upstream: NonNullable<GatewayOptions['upstream']> = {}) =>
    (harness = await createResponsesHarness(
      { openai: {} },
      {
        upstream,
        ...transport.options(),
        providers: { openai: { baseURL: hostile!.url, apiKey: 'sk-shared-openai-0123456789abcdef' } },
      },
    ))

  it('one endless SSE event after content: in-band failure at about the default 8 MiB, connection dropped, memory bounded', async () => {
    hostile = await startHostile({ contentType: 'text/event-stream', head: sseHead(), totalBytes: 100 * MIB })
    await start()

    const { result: events, growth } = await rssGrowthDuring(async () => {
      const response = await harness!.post({ model: 'openai/gpt-4.1', input: 'hi', stream: true })
      expect(response.status).toBe(200)
      return (await readSseEvents(response)).events
    })

    expect(events.at(-2)!.data).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error_type: 'provider_unavailable', error: { code: 'server_error', message: 'OpenAI: The provider sent an event larger than the gateway accepts (8 MiB)' } },
    })
    expect(events.at(-1)!.data).toBe('[DONE]')
    const { bytes, isCutOff } = await hostile.written[0]!
    expect(isCutOff).toBe(true)
    expect(bytes).toBeGreaterThan(8 * MIB)
    expect(bytes).toBeLessThan(8 * MIB + IN_FLIGHT)
    expect(growth).toBeLessThan(RSS_BOUND)
  })

  it('an endless SSE event before any content: a clean 502', async () => {
    hostile = await startHostile({ contentType: 'text/event-stream', head: 'data: {"type":"response.created","response":{"id":"', totalBytes: 64 * MIB })
    await start({ maxEventBytes: 2 * MIB })

    const response = await harness!.post({ model: 'openai/gpt-4.1', input: 'hi', stream: true })

    expect(response.status).toBe(502)
    expect(await response.json()).toEqual({
      error: {
        code: 502,
        message: 'OpenAI: The provider sent an event larger than the gateway accepts (2 MiB)',
        metadata: { error_type: 'provider_unavailable', provider_name: 'openai' },
      },
    })
    const { bytes, isCutOff } = await hostile.written[0]!
    expect(isCutOff).toBe(true)
    expect(bytes).toBeLessThan(2 * MIB + IN_FLIGHT)
  })

  it('8 concurrent 300 MiB JSON answers: each a 502 at about the cap, connections dropped, memory bounded', async () => {
    hostile = await startHostile({ contentType: 'application/json', head: JSON_HEAD, totalBytes: 300 * MIB })
    await start({ maxResponseBytes: 4 * MIB })

    const { result: responses, growth } = await rssGrowthDuring(() =>
      Promise.all(Array.from({ length: 8 }, async () => {
        const response = await harness!.post({ model: 'openai/gpt-4.1', input: 'hi' })
        return { status: response.status, body: await response.json() }
      })),
    )

    for (const { status, body } of responses) {
      expect(status).toBe(502)
      expect(body).toEqual({
        error: {
          code: 502,
          message: "OpenAI: The provider's answer is larger than the gateway accepts (4 MiB)",
          metadata: { error_type: 'provider_unavailable', provider_name: 'openai' },
        },
      })
    }
    const written = await Promise.all(hostile.written)
    expect(written).toHaveLength(8)
    for (const { bytes, isCutOff } of written) {
      expect(isCutOff).toBe(true)
      expect(bytes).toBeLessThan(4 * MIB + IN_FLIGHT)
    }
    expect(growth).toBeLessThan(RSS_BOUND)
  })

  it('a declared content-length over the cap is refused on the headers alone', async () => {
    // The body never comes: only the announced length can end this request.
    hostile = await startHostile({ contentType: 'application/json', head: JSON_HEAD, totalBytes: 300 * MIB, declareLength: true, holdBody: true })
    await start({ maxResponseBytes: 4 * MIB })

    const response = await harness!.post({ model: 'openai/gpt-4.1', input: 'hi' })

    expect(response.status).toBe(502)
    expect((await response.json()).error.message).toBe("OpenAI: The provider's answer is larger than the gateway accepts (4 MiB)")
    expect(await hostile.written[0]).toEqual({ bytes: 0, isCutOff: true })
  })

  it('an answer exactly at the cap passes; one byte over is refused', async () => {
    const json = fixture('openai', 'text.json')
    hostile = await startHostile({ contentType: 'application/json', head: json, totalBytes: json.length, declareLength: true })
    await start({ maxResponseBytes: json.length })
    expect((await harness!.post({ model: 'openai/gpt-4.1', input: 'hi' })).status).toBe(200)
    await harness!.close()

    await start({ maxResponseBytes: json.length - 1 })
    expect((await harness!.post({ model: 'openai/gpt-4.1', input: 'hi' })).status).toBe(502)
  })
})
