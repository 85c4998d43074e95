/**
 * A loopback upstream that speaks a provider's wire format byte for byte: it replays recorded
 * fixtures (`test/fixtures/providers/<provider>/<case>.json|.sse`) and records what the gateway sent,
 * so tests assert both directions.
 */

import { readFileSync } from 'node:fs'
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'

export interface RecordedRequest {
  method: string
  /** Path and query, as received. */
  url: string
  headers: IncomingHttpHeaders
  /** Raw body text. */
  text: string
  /** Parsed JSON body, or undefined. */
  json: any
}

export interface UpstreamReply {
  status?: number
  headers?: Record<string, string>
  /** A whole body, sent at once. */
  body?: string | Uint8Array
  /** A body sent chunk by chunk; each chunk is flushed before the next. */
  chunks?: Array<string | Uint8Array>
  /** Wait for this before sending the chunks after index `pauseAfter` (to test incremental delivery). */
  pause?: { after: number; until: Promise<void> }
  /** Destroy the socket after sending the chunks (a connection dropped mid-stream). */
  shouldDestroyAfter?: boolean
  /** Never answer (for timeouts and client aborts). */
  shouldHang?: boolean
}

export type UpstreamHandler = (request: RecordedRequest) => UpstreamReply | Promise<UpstreamReply>

export interface Upstream {
  /** `http://127.0.0.1:<port>` */
  url: string
  requests: RecordedRequest[]
  /** Replaces the handler for the next requests. */
  setHandler(handler: UpstreamHandler): void
  /** Resolves when a request's socket was closed by the client before the reply ended. */
  nextClientAbort(): Promise<RecordedRequest>
  /** TCP connections the gateway has opened to this upstream so far. */
  connectionCount(): number
  /** Replies the gateway cut off by closing the connection before they ended. */
  abortCount(): number
  close(): Promise<void>
}

const FIXTURES = join(__dirname, '..', 'fixtures', 'providers')

/** Reads a fixture file as bytes (exactly as recorded). */
export const fixture = (provider: string, name: string): Buffer => readFileSync(join(FIXTURES, provider, name))

/** A JSON fixture reply. */
export const jsonFixture = (provider: string, name: string, status = 200): UpstreamReply => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: fixture(provider, name),
})

/** A SearXNG engine answering every search with the recorded results of test/fixtures/search/searxng-search.json. */
export const startSearxngFixture = (): Promise<Upstream> => {
  const results = readFileSync(join(__dirname, '..', 'fixtures', 'search', 'searxng-search.json'), 'utf8')
  return startUpstream(() => ({ headers: { 'content-type': 'application/json' }, body: results }))
}

/**
 * An SSE fixture reply, split into chunks at awkward places (mid-line, mid-UTF-8 sequence) so
 * adapters are proven to parse across any chunk boundary.
 */
export const sseFixture = (provider: string, name: string, chunkSize = 7): UpstreamReply => {
  const bytes = fixture(provider, name)
  const chunks: Uint8Array[] = []
  for (let offset = 0; offset < bytes.length; offset += chunkSize) chunks.push(bytes.subarray(offset, offset + chunkSize))
  return { status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, chunks }
}

const write = (res: ServerResponse, chunk: string | Uint8Array) =>
  new Promise<void>((resolve, reject) => res.write(chunk, (error) => (error ? reject(error) : resolve())))

export const startUpstream = async (handler: UpstreamHandler = () => ({ status: 500, body: 'no handler' })): Promise<Upstream> => {
  let current = handler
  const requests: RecordedRequest[] = []
  const abortWaiters: Array<(request: RecordedRequest) => void> = []
  let aborts = 0

  const server = createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const chunk of req) parts.push(chunk as Buffer)
    const text = Buffer.concat(parts).toString('utf8')
    let json: unknown
    try {
      json = text ? JSON.parse(text) : undefined
    } catch {
      json = undefined
    }
    const recorded: RecordedRequest = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, text, json }
    requests.push(recorded)
    res.on('close', () => {
      if (res.writableFinished) return
      aborts++
      abortWaiters.splice(0).forEach((resolve) => resolve(recorded))
    })
    try {
      const reply = await current(recorded)
      if (reply.shouldHang) return
      res.writeHead(reply.status ?? 200, reply.headers ?? {})
      if (reply.body !== undefined) return void res.end(reply.body)
      res.flushHeaders()
      for (const [index, chunk] of (reply.chunks ?? []).entries()) {
        if (reply.pause && index === reply.pause.after) await reply.pause.until
        if (res.destroyed) return
        await write(res, chunk)
      }
      if (reply.shouldDestroyAfter) return void res.destroy()
      res.end()
    } catch (error) {
      if (!res.headersSent) res.writeHead(500)
      res.end(String(error))
    }
  })
  // Well above undici's keep-alive threshold, which drops connections whose server hint is shorter than it.
  server.keepAliveTimeout = 10_000
  let connections = 0
  server.on('connection', () => connections++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    setHandler(next) {
      current = next
    },
    nextClientAbort: () => new Promise((resolve) => abortWaiters.push(resolve)),
    connectionCount: () => connections,
    abortCount: () => aborts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/**
 * An OpenAI upstream for the semantic cache's tests: `/embeddings` answers each input with `vectorOf(text)`, every
 * other call the plain text fixture.
 */
export const embeddingsOrTextUpstream =
  (vectorOf: (text: string) => number[]): UpstreamHandler =>
  (request) => {
    if (!request.url.endsWith('/embeddings')) return jsonFixture('openai', 'text.json')
    const input = request.json.input as string[]
    return {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        object: 'list',
        data: input.map((text, index) => ({ object: 'embedding', index, embedding: vectorOf(text) })),
        model: request.json.model,
        usage: { prompt_tokens: 5, total_tokens: 5 },
      }),
    }
  }
