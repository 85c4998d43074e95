import { createHash, randomBytes } from 'node:crypto'
import http, { type IncomingHttpHeaders, type IncomingMessage, type RequestListener, type Server } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { toNodeListener } from '../../../src/adapters/node'
import { BodyAlreadyConsumedError } from '../../../src/adapters/node-bridge'
import type { ClientSignal } from '../../../src/core/client-signal'
import type { ChunkProducer, ChunkSink } from '../../../src/core/event-stream'
import { eventsReply, jsonTextReply, responseReply, setReplyHeader, type Reply } from '../../../src/core/reply'
import type { FetchHandler, ReplyHandler } from '../../../src/core/types'

interface Deferred<T> {
  promise: Promise<T>
  resolve: (value: T) => void
}

const createDeferred = <T = void>(): Deferred<T> => {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((done) => {
    resolve = done
  })
  return { promise, resolve }
}

/** A fake gateway: records every request and answers with `respond`. */
const createFakeHandler = (respond: (request: Request) => Response | Promise<Response>) => {
  const requests: Request[] = []
  const handler: FetchHandler = {
    fetch: async (request) => {
      requests.push(request)
      return respond(request)
    },
  }
  return { handler, requests }
}

/** A handler with the gateway's `reply` seam, which is handed the bridge's light disconnect signal. */
const createSignalHandler = (respond: (request: Request, signal: ClientSignal) => Promise<Response>): ReplyHandler => ({
  fetch: async () => new Response('fetch: not expected here'),
  reply: async (request, options) => responseReply(await respond(request, options!.signal!)),
})

const servers: Server[] = []

const listen = async (listener: RequestListener): Promise<{ port: number; base: string }> => {
  const server = http.createServer(listener)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { port, base: `http://127.0.0.1:${port}` }
}

afterEach(async () => {
  vi.restoreAllMocks()
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        }),
    ),
  )
})

interface RawResponse {
  status: number
  statusMessage: string
  headers: IncomingHttpHeaders
  body: Buffer
}

const readAll = async (message: IncomingMessage): Promise<Buffer> => {
  const chunks: Buffer[] = []
  for await (const chunk of message) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** A raw `http.request` client, for what `fetch` cannot send: repeated headers, HEAD bodies, a bad Host. */
const send = (
  port: number,
  options: { method?: string; path?: string; headers?: http.OutgoingHttpHeaders; body?: Buffer | string },
): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path ?? '/', headers: options.headers },
      (response) => {
        readAll(response).then(
          (body) =>
            resolve({
              status: response.statusCode ?? 0,
              statusMessage: response.statusMessage ?? '',
              headers: response.headers,
              body,
            }),
          reject,
        )
      },
    )
    request.on('error', reject)
    request.end(options.body)
  })

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex')

describe('toRequest (through toNodeListener)', () => {
  it('maps method, URL, query and headers', async () => {
    const { handler, requests } = createFakeHandler(() => new Response(null, { status: 204 }))
    const { port } = await listen(toNodeListener(handler))

    const response = await send(port, {
      method: 'PUT',
      path: '/api/v1/things?x=1&y=a%20b',
      headers: { 'x-custom': 'value', 'x-multi': ['1', '2'], cookie: ['a=1', 'b=2'], 'content-length': '0' },
    })

    expect(response.status).toBe(204)
    const [request] = requests
    expect(request?.method).toBe('PUT')
    expect(request?.url).toBe(`http://127.0.0.1:${port}/api/v1/things?x=1&y=a%20b`)
    expect(request?.headers.get('x-custom')).toBe('value')
    expect(request?.headers.get('x-multi')).toBe('1, 2')
    expect(request?.headers.get('cookie')).toBe('a=1; b=2')
    expect(request?.headers.get('host')).toBe(`127.0.0.1:${port}`)
    expect(request?.body).toBeNull()
  })

  it('keeps a path that starts with // as a path', async () => {
    const { handler, requests } = createFakeHandler(() => new Response(null, { status: 204 }))
    const { port } = await listen(toNodeListener(handler))

    await send(port, { path: '//other.example/x?y=1' })

    expect(requests[0]?.url).toBe(`http://127.0.0.1:${port}//other.example/x?y=1`)
  })

  it('ignores forwarded headers and falls back to the socket address for a malformed Host', async () => {
    const { handler, requests } = createFakeHandler(() => new Response(null, { status: 204 }))
    const { port } = await listen(toNodeListener(handler))

    await send(port, {
      path: '/a',
      headers: { host: 'evil.example/x?', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'proxy.example' },
    })

    expect(requests[0]?.url).toBe(`http://127.0.0.1:${port}/a`)
  })

  it('uses forwarded headers when shouldTrustProxy is set, the entries the proxy appended after the client’s', async () => {
    const { handler, requests } = createFakeHandler(() => new Response(null, { status: 204 }))
    const { port } = await listen(toNodeListener(handler, { shouldTrustProxy: true }))

    await send(port, {
      path: '/a?b=1',
      headers: { 'x-forwarded-proto': 'http, https', 'x-forwarded-host': 'client-chosen.example, api.example.com' },
    })

    expect(requests[0]?.url).toBe('https://api.example.com/a?b=1')
  })

  it('streams a 5 MB POST body to the handler intact', async () => {
    const payload = randomBytes(5 * 1024 * 1024)
    const { handler } = createFakeHandler(async (request) => {
      const reader = request.body!.getReader()
      const hash = createHash('sha256')
      let length = 0
      let chunkCount = 0
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        hash.update(value)
        length += value.byteLength
        chunkCount += 1
      }
      return Response.json({ length, chunkCount, hash: hash.digest('hex') })
    })
    const { base } = await listen(toNodeListener(handler))

    const response = await fetch(`${base}/upload`, { method: 'POST', body: payload })
    const result = (await response.json()) as { length: number; chunkCount: number; hash: string }

    expect(result.length).toBe(payload.byteLength)
    expect(result.hash).toBe(sha256(payload))
    expect(result.chunkCount).toBeGreaterThan(1)
  })

  it('lets the handler read the body while the client is still sending it', async () => {
    const firstChunkRead = createDeferred<string>()
    const { handler } = createFakeHandler(async (request) => {
      const reader = request.body!.getReader()
      const first = await reader.read()
      firstChunkRead.resolve(new TextDecoder().decode(first.value))
      let rest = ''
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        rest += new TextDecoder().decode(value)
      }
      return new Response(`rest=${rest}`)
    })
    const { port } = await listen(toNodeListener(handler))

    const responseBody = new Promise<string>((resolve, reject) => {
      const request = http.request(
        { host: '127.0.0.1', port, method: 'POST', path: '/', headers: { 'transfer-encoding': 'chunked' } },
        (response) => readAll(response).then((body) => resolve(body.toString()), reject),
      )
      request.on('error', reject)
      request.write('first')
      // The rest is only sent once the handler has seen the first chunk.
      void firstChunkRead.promise.then(() => request.end('second'))
    })

    expect(await firstChunkRead.promise).toBe('first')
    expect(await responseBody).toBe('rest=second')
  })

  it('aborts request.signal when the client disconnects mid-request', async () => {
    const handlerCalled = createDeferred()
    const aborted = createDeferred()
    const bodyFailed = createDeferred<unknown>()
    const { handler } = createFakeHandler(async (request) => {
      request.signal.addEventListener('abort', () => aborted.resolve())
      const reader = request.body!.getReader()
      await reader.read()
      handlerCalled.resolve()
      await reader.read().then(
        () => bodyFailed.resolve(undefined),
        (error: unknown) => bodyFailed.resolve(error),
      )
      return new Response('unreachable')
    })
    const { port } = await listen(toNodeListener(handler))

    const request = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/',
      headers: { 'content-length': '1000' },
    })
    request.on('error', () => {})
    request.write('partial')
    await handlerCalled.promise
    request.destroy()

    await aborted.promise
    expect(await bodyFailed.promise).toBeInstanceOf(Error)
  })

  it('aborts request.signal when the client disconnects while the handler is working', async () => {
    const handlerCalled = createDeferred<Request>()
    const { handler } = createFakeHandler(
      (request) =>
        new Promise<Response>((resolve) => {
          handlerCalled.resolve(request)
          request.signal.addEventListener('abort', () => resolve(new Response('late')))
        }),
    )
    const { port } = await listen(toNodeListener(handler))

    const request = http.request({ host: '127.0.0.1', port, path: '/slow' })
    request.on('error', () => {})
    request.end()
    const seen = await handlerCalled.promise
    expect(seen.signal.aborted).toBe(false)
    request.destroy()

    await new Promise((resolve) => seen.signal.addEventListener('abort', resolve, { once: true }))
    expect(seen.signal.aborted).toBe(true)
  })

  it('does not abort request.signal after a completed response', async () => {
    const { handler, requests } = createFakeHandler(() => new Response('done'))
    const { base } = await listen(toNodeListener(handler))

    const response = await fetch(base)
    expect(await response.text()).toBe('done')

    expect(requests[0]?.signal.aborted).toBe(false)
  })

  it('keeps a keep-alive connection usable after a response that ignored the request body', async () => {
    const { handler, requests } = createFakeHandler(
      (request) => new Response(null, { status: request.method === 'POST' ? 401 : 204 }),
    )
    const { port } = await listen(toNodeListener(handler))
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    const sendWithAgent = (method: string, body?: Buffer) =>
      new Promise<number>((resolve, reject) => {
        const request = http.request({ host: '127.0.0.1', port, method, path: '/', agent }, (response) => {
          response.resume()
          response.on('end', () => resolve(response.statusCode ?? 0))
        })
        request.on('error', reject)
        request.end(body)
      })

    try {
      expect(await sendWithAgent('POST', randomBytes(1024 * 1024))).toBe(401)
      // The unread megabyte must not block the next request on the same socket.
      expect(await sendWithAgent('GET')).toBe(204)
      expect(requests).toHaveLength(2)
    } finally {
      agent.destroy()
    }
  })

  it('answers 400 without calling the handler for a method Request refuses', async () => {
    const { handler, requests } = createFakeHandler(() => new Response('no'))
    const { port } = await listen(toNodeListener(handler))

    const response = await send(port, { method: 'TRACE', path: '/' })

    expect(response.status).toBe(400)
    expect(response.body.byteLength).toBe(0)
    expect(requests).toHaveLength(0)
  })
})

describe('the lazy Request (through toNodeListener)', () => {
  it('is a Request whose text() reads the socket once and then reports the body used', async () => {
    const seen: Record<string, unknown> = {}
    const { handler } = createFakeHandler(async (request) => {
      seen.isRequest = request instanceof Request
      seen.bodyUsedBefore = request.bodyUsed
      seen.text = await request.text()
      seen.bodyUsedAfter = request.bodyUsed
      seen.secondRead = await request.text().then(
        () => 'read again',
        (error: unknown) => (error instanceof TypeError ? 'TypeError' : String(error)),
      )
      return new Response(null, { status: 204 })
    })
    const { port } = await listen(toNodeListener(handler))

    await send(port, { method: 'POST', path: '/', headers: { 'content-type': 'text/plain' }, body: 'héllo wörld' })

    expect(seen).toEqual({ isRequest: true, bodyUsedBefore: false, text: 'héllo wörld', bodyUsedAfter: true, secondRead: 'TypeError' })
  })

  it('reads a chunked body through arrayBuffer() and json()', async () => {
    const { handler } = createFakeHandler(async (request) => {
      const copy = request.clone()
      const bytes = new Uint8Array(await request.arrayBuffer())
      const parsed = await copy.json()
      return Response.json({ length: bytes.byteLength, parsed })
    })
    const { port } = await listen(toNodeListener(handler))

    const answer = await new Promise<string>((resolve, reject) => {
      const request = http.request(
        { host: '127.0.0.1', port, method: 'POST', path: '/', headers: { 'transfer-encoding': 'chunked' } },
        (response) => readAll(response).then((body) => resolve(body.toString()), reject),
      )
      request.on('error', reject)
      request.write('{"a":')
      request.end('[1,2,3]}')
    })

    expect(JSON.parse(answer)).toEqual({ length: 13, parsed: { a: [1, 2, 3] } })
  })

  it('answers the rest of the Request interface from a full Request built on demand', async () => {
    const seen: Record<string, unknown> = {}
    const { handler } = createFakeHandler(async (request) => {
      seen.cache = request.cache
      seen.redirect = request.redirect
      const form = await request.formData()
      seen.field = form.get('name')
      seen.bodyUsed = request.bodyUsed
      return new Response(null, { status: 204 })
    })
    const { port } = await listen(toNodeListener(handler))

    await send(port, {
      method: 'POST',
      path: '/',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'name=modelgate&x=1',
    })

    expect(seen).toEqual({ cache: 'default', redirect: 'follow', field: 'modelgate', bodyUsed: true })
  })

  it('rejects a fast read when the client disconnects before the body is complete', async () => {
    const failure = createDeferred<unknown>()
    const reading = createDeferred()
    const { handler } = createFakeHandler(async (request) => {
      const read = request.arrayBuffer()
      reading.resolve()
      await read.then(
        () => failure.resolve('resolved'),
        (error: unknown) => failure.resolve(error),
      )
      return new Response('unreachable')
    })
    const { port } = await listen(toNodeListener(handler))

    const request = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers: { 'content-length': '1000' } })
    request.on('error', () => {})
    request.write('partial')
    await reading.promise
    request.destroy()

    expect(await failure.promise).toBeInstanceOf(Error)
  })
})

describe('the light disconnect signal (through toNodeListener)', () => {
  it('tells its listeners when the client goes away mid-request, and not after a listener was removed', async () => {
    const seen = { calls: 0, removedCalls: 0, aborted: false, reason: undefined as unknown }
    const handlerCalled = createDeferred()
    const notified = createDeferred()
    const handler = createSignalHandler(
      (_request, signal) =>
        new Promise<Response>((resolve) => {
          const removed = () => seen.removedCalls++
          signal.addEventListener('abort', removed)
          signal.removeEventListener('abort', removed)
          signal.addEventListener('abort', () => {
            seen.calls++
            seen.aborted = signal.aborted
            seen.reason = signal.reason
            notified.resolve()
            resolve(new Response('late'))
          })
          handlerCalled.resolve()
        }),
    )
    const { port } = await listen(toNodeListener(handler))

    const request = http.request({ host: '127.0.0.1', port, path: '/slow' })
    request.on('error', () => {})
    request.end()
    await handlerCalled.promise
    request.destroy()
    await notified.promise

    expect(seen).toMatchObject({ calls: 1, removedCalls: 0, aborted: true })
    expect(seen.reason).toBeInstanceOf(Error)
  })

  it('reads as aborted when the client left before anyone listened, and not after a completed response', async () => {
    const signals: ClientSignal[] = []
    const clientGone = createDeferred()
    const handler = createSignalHandler(async (request, signal) => {
      signals.push(signal)
      if (request.url.endsWith('/wait')) await clientGone.promise
      return new Response('done')
    })
    const { port, base } = await listen(toNodeListener(handler))

    expect(await (await fetch(`${base}/quick`)).text()).toBe('done')
    const request = http.request({ host: '127.0.0.1', port, path: '/wait' })
    request.on('error', () => {})
    request.end()
    await vi.waitFor(() => expect(signals).toHaveLength(2))
    request.destroy()
    await vi.waitFor(() => expect(signals[1]!.aborted).toBe(true))
    clientGone.resolve()

    expect(signals[0]!.aborted).toBe(false)
  })
})

describe('JSON answers of a gateway (through toNodeListener)', () => {
  it('goes out in one piece with a Content-Length, and without a body for HEAD', async () => {
    const { createGateway } = await import('../../../src/gateway/gateway')
    const gateway = createGateway({ logger: false })
    const { port } = await listen(toNodeListener(gateway))

    const response = await send(port, { path: '/api/v1/keys', headers: { authorization: 'Bearer nope' } })
    const head = await send(port, { method: 'HEAD', path: '/api/v1/keys', headers: { authorization: 'Bearer nope' } })

    expect(response.status).toBe(401)
    expect(response.headers['content-type']).toBe('application/json')
    expect(response.headers['content-length']).toBe(String(response.body.byteLength))
    expect(response.headers['transfer-encoding']).toBeUndefined()
    expect(JSON.parse(response.body.toString())).toMatchObject({ error: { code: 401 } })
    expect(head.body.byteLength).toBe(0)
    await gateway.close()
  })
})

/** The bytes of one GET answered on a fresh connection, up to the end of the body (`Connection: close`). */
const rawExchange = (port: number): Promise<string> =>
  new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'))
    const chunks: Buffer[] = []
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')))
    socket.on('error', reject)
  })

describe('the head of a gateway reply (through toNodeListener)', () => {
  const replyHandler = (make: () => Reply): ReplyHandler => ({ fetch: async () => new Response('not expected'), reply: async () => make() })
  const withoutDate = (raw: string) => raw.replace(/\r\nDate: [^\r]*/, '')

  it('goes out byte for byte as the same fields read through a Headers object would', async () => {
    const make = () => {
      const reply = jsonTextReply('{"a":"é"}', 201, { 'X-B': ' two\t', 'x-a': 'one', 'X-A': 'uno', 'content-type': 'text/plain' })
      return setReplyHeader(setReplyHeader(reply, 'x-request-id', 'r1'), 'X-B', 'three')
    }
    const asFields = await listen(toNodeListener(replyHandler(make)))
    const asHeaders = await listen(
      toNodeListener(
        replyHandler(() => {
          const reply = make()
          if (reply.kind === 'response') throw new Error('unexpected')
          // Reading `headers` turns the fields into a Headers object, which the bridge then iterates.
          expect([...reply.headers]).toEqual([
            ['content-type', 'application/json'],
            ['x-a', 'one, uno'],
            ['x-b', 'three'],
            ['x-request-id', 'r1'],
          ])
          return reply
        }),
      ),
    )

    const [fromFields, fromHeaders] = await Promise.all([rawExchange(asFields.port), rawExchange(asHeaders.port)])

    expect(withoutDate(fromFields)).toBe(withoutDate(fromHeaders))
    expect(fromFields).toContain('HTTP/1.1 201 Created\r\ncontent-type: application/json\r\nx-a: one, uno\r\nx-b: three\r\nx-request-id: r1\r\n')
    expect(fromFields).toContain('Content-Length: 10\r\n')
  })

  it('refuses a field Headers refuses, when the reply is made', () => {
    expect(() => jsonTextReply('{}', 200, { 'x-bad': 'a\r\nb' })).toThrow(TypeError)
    expect(() => jsonTextReply('{}', 200, { 'bad name': 'a' })).toThrow(TypeError)
    const reply = jsonTextReply('{}', 200)
    expect(() => setReplyHeader(reply, 'x-bad', 'a\nb')).toThrow(TypeError)
  })
})

describe('event streams of a gateway (through toNodeListener)', () => {
  /** A handler that answers with an event producer through the gateway's `reply` seam. */
  const eventStreamHandler = (produce: ChunkProducer): ReplyHandler => ({
    fetch: async () => new Response('fetch: not expected here'),
    reply: async () => eventsReply(produce, { 'content-type': 'text/event-stream' }),
  })

  it('writes each event to the socket as it is produced, headers with the first', async () => {
    let sink!: ChunkSink
    const started = createDeferred()
    const { port } = await listen(
      toNodeListener(
        eventStreamHandler((given) => {
          sink = given
          sink.write('data: one\n\n')
          started.resolve()
          return () => {}
        }),
      ),
    )

    const response = await fetch(`http://127.0.0.1:${port}/`)
    await started.promise
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    const reader = response.body!.getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: one\n\n')

    sink.write('data: two\n\n')
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: two\n\n')
    sink.close()
    expect((await reader.read()).done).toBe(true)
  })

  it('sends what was produced, then cuts the connection, when the producer fails before anything was flushed', async () => {
    const { port } = await listen(
      toNodeListener(
        eventStreamHandler((sink) => {
          sink.write('data: produced\n\n')
          // In the same turn: nothing has gone to the socket yet (a record that could not be written, say).
          queueMicrotask(() => sink.fail(new Error('record not written')))
          return () => {}
        }),
      ),
    )
    const response = await fetch(`http://127.0.0.1:${port}/`)
    expect(response.status).toBe(200)
    const reader = response.body!.getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: produced\n\n')
    // The body never ends cleanly: the client learns it broke off.
    await expect(reader.read()).rejects.toThrow()
  })

  it('answers 500 when the producer fails before it produced anything', async () => {
    const { port } = await listen(toNodeListener(eventStreamHandler((sink) => (queueMicrotask(() => sink.fail(new Error('failed at once'))), () => {}))))
    const response = await fetch(`http://127.0.0.1:${port}/`)
    expect(response.status).toBe(500)
    expect(await response.text()).toBe('')
  })

  it('makes the producer wait while the client does not read, and stops it when the client goes away', async () => {
    const state = { written: 0, waits: 0, waiting: createDeferred(), stopped: createDeferred() }
    const { port } = await listen(
      toNodeListener(
        eventStreamHandler((sink) => {
          let isStopped = false
          const chunk = `data: ${'x'.repeat(64 * 1024)}\n\n`
          const run = async () => {
            while (!isStopped && state.written < 10_000) {
              state.written++
              if (!sink.write(chunk)) {
                state.waits++
                state.waiting.resolve()
                await sink.ready()
              }
            }
          }
          void run()
          return () => {
            isStopped = true
            state.stopped.resolve()
          }
        }),
      ),
    )

    const request = http.request({ host: '127.0.0.1', port, path: '/' })
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      request.on('response', resolve)
      request.on('error', reject)
      request.end()
    })
    response.pause()
    await state.waiting.promise

    // 10,000 events of 64 KiB would be 640 MiB: the socket filled up long before, and the producer waited.
    expect(state.waits).toBeGreaterThan(0)
    expect(state.written).toBeLessThan(1_000)
    request.destroy()
    await state.stopped.promise
  })
})

describe('writeResponse (through toNodeListener)', () => {
  it('writes status, status text, headers and each set-cookie', async () => {
    const { handler } = createFakeHandler(
      () =>
        new Response('ok', {
          status: 201,
          statusText: 'Made It',
          headers: [
            ['set-cookie', 'a=1'],
            ['set-cookie', 'b=2; Path=/; HttpOnly'],
            ['x-request-id', 'req_1'],
            ['content-type', 'text/plain'],
          ],
        }),
    )
    const { port } = await listen(toNodeListener(handler))

    const response = await send(port, { path: '/' })

    expect(response.status).toBe(201)
    expect(response.statusMessage).toBe('Made It')
    expect(response.headers['set-cookie']).toEqual(['a=1', 'b=2; Path=/; HttpOnly'])
    expect(response.headers['x-request-id']).toBe('req_1')
    expect(response.headers['content-type']).toBe('text/plain')
    // A body that is complete at once goes out with a length rather than chunked.
    expect(response.headers['content-length']).toBe('2')
    expect(response.body.toString()).toBe('ok')
  })

  it('delivers a 5 MB response body intact', async () => {
    const payload = randomBytes(5 * 1024 * 1024)
    const { handler } = createFakeHandler(() => {
      let offset = 0
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (offset >= payload.byteLength) return controller.close()
          controller.enqueue(payload.subarray(offset, offset + 256 * 1024))
          offset += 256 * 1024
        },
      })
      return new Response(body, { headers: { 'content-type': 'application/octet-stream' } })
    })
    const { base } = await listen(toNodeListener(handler))

    const response = await fetch(base)
    const received = new Uint8Array(await response.arrayBuffer())

    expect(received.byteLength).toBe(payload.byteLength)
    expect(sha256(received)).toBe(sha256(payload))
  })

  it('sends SSE headers and each event before the stream ends', async () => {
    let controller!: ReadableStreamDefaultController<Uint8Array>
    const { handler } = createFakeHandler(() => {
      const body = new ReadableStream<Uint8Array>({
        start(streamController) {
          controller = streamController
        },
      })
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
    })
    const { base } = await listen(toNodeListener(handler))
    const encoder = new TextEncoder()
    const decoder = new TextDecoder()

    // Nothing has been enqueued yet, so the headers must have been flushed on their own.
    const response = await fetch(`${base}/stream`)
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    const reader = response.body!.getReader()

    controller.enqueue(encoder.encode('data: one\n\n'))
    const first = await reader.read()
    expect(decoder.decode(first.value)).toBe('data: one\n\n')

    controller.enqueue(encoder.encode('data: two\n\n'))
    controller.close()
    let rest = ''
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      rest += decoder.decode(value)
    }
    expect(rest).toBe('data: two\n\n')
  })

  it('flushes headers of a stalled stream that has no content-length', async () => {
    let controller!: ReadableStreamDefaultController<Uint8Array>
    const { handler } = createFakeHandler(() => {
      const body = new ReadableStream<Uint8Array>({
        start(streamController) {
          controller = streamController
        },
      })
      return new Response(body, { headers: { 'content-type': 'application/x-ndjson' } })
    })
    const { base } = await listen(toNodeListener(handler))

    const response = await fetch(base)
    expect(response.status).toBe(200)
    const reader = response.body!.getReader()

    controller.enqueue(new TextEncoder().encode('{"a":1}\n'))
    const first = await reader.read()
    expect(new TextDecoder().decode(first.value)).toBe('{"a":1}\n')
    controller.close()
    expect((await reader.read()).done).toBe(true)
  })

  it('cancels the response body when the client disconnects mid-stream', async () => {
    const cancelled = createDeferred<unknown>()
    const handlerSignal = createDeferred<AbortSignal>()
    const { handler } = createFakeHandler((request) => {
      handlerSignal.resolve(request.signal)
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('data: first\n\n'))
        },
        cancel(reason) {
          cancelled.resolve(reason)
        },
      })
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
    })
    const { base } = await listen(toNodeListener(handler))

    const client = new AbortController()
    const response = await fetch(base, { signal: client.signal })
    const reader = response.body!.getReader()
    const first = await reader.read()
    expect(new TextDecoder().decode(first.value)).toBe('data: first\n\n')
    client.abort()

    await cancelled.promise
    const signal = await handlerSignal.promise
    expect(signal.aborted).toBe(true)
  })

  it('sends no body for HEAD and cancels the response body', async () => {
    const cancelled = createDeferred()
    const { handler, requests } = createFakeHandler(() => {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('hello'))
        },
        cancel() {
          cancelled.resolve()
        },
      })
      return new Response(body, { headers: { 'content-length': '5', 'x-a': 'b' } })
    })
    const { port } = await listen(toNodeListener(handler))

    const response = await send(port, { method: 'HEAD', path: '/thing' })

    expect(requests[0]?.method).toBe('HEAD')
    expect(response.status).toBe(200)
    expect(response.headers['content-length']).toBe('5')
    expect(response.headers['x-a']).toBe('b')
    expect(response.body.byteLength).toBe(0)
    await cancelled.promise
  })

  it('cuts the connection when the body stream fails after the headers went out', async () => {
    let controller!: ReadableStreamDefaultController<Uint8Array>
    const errorLog = vi.spyOn(console, 'error').mockImplementation(() => {})
    const { handler } = createFakeHandler(() => {
      const body = new ReadableStream<Uint8Array>({
        start(streamController) {
          controller = streamController
        },
      })
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
    })
    const { base } = await listen(toNodeListener(handler))

    const response = await fetch(base)
    const reader = response.body!.getReader()
    controller.enqueue(new TextEncoder().encode('data: partial\n\n'))
    await reader.read()
    controller.error(new Error('upstream said sk-secret-123'))

    await expect(reader.read()).rejects.toThrow()
    expect(errorLog).toHaveBeenCalledWith('modelgate: the response body stream failed (Error)')
  })

  it('answers 500 with an empty body when the handler throws, without logging its message', async () => {
    const errorLog = vi.spyOn(console, 'error').mockImplementation(() => {})
    const handler: FetchHandler = {
      fetch: async () => {
        throw new Error('connection string postgres://user:sk-secret@db')
      },
    }
    const { port } = await listen(toNodeListener(handler))

    const response = await send(port, { path: '/' })

    expect(response.status).toBe(500)
    expect(response.body.byteLength).toBe(0)
    expect(errorLog).toHaveBeenCalledTimes(1)
    expect(String(errorLog.mock.calls[0]?.[0])).not.toContain('sk-secret')
  })
})

describe('a body that something else already read', () => {
  /** Stands in for a body parser that runs before modelgate. */
  const withBodyParser =
    (listener: RequestListener): RequestListener =>
    (req, res) => {
      void readAll(req).then((body) => {
        ;(req as IncomingMessage & { body?: unknown }).body = JSON.parse(body.toString() || 'null')
        listener(req, res)
      })
    }

  it('answers 500 with the error body saying how to fix it, logs the message once and never calls the handler', async () => {
    const errorLog = vi.spyOn(console, 'error').mockImplementation(() => {})
    const { handler, requests } = createFakeHandler(() => new Response('no'))
    const { port } = await listen(withBodyParser(toNodeListener(handler)))

    const first = await send(port, { method: 'POST', path: '/', body: '{"a":1}' })
    const second = await send(port, { method: 'POST', path: '/', body: '{"a":2}' })

    for (const response of [first, second]) {
      expect(response.status).toBe(500)
      expect(JSON.parse(Buffer.from(response.body).toString('utf8'))).toEqual({ error: { code: 500, message: new BodyAlreadyConsumedError().message } })
    }
    expect(requests).toHaveLength(0)
    expect(errorLog).toHaveBeenCalledTimes(1)
    expect(errorLog).toHaveBeenCalledWith(new BodyAlreadyConsumedError().message)
  })

  it('is not checked for GET', async () => {
    const { handler, requests } = createFakeHandler(() => new Response('fine'))
    const { port } = await listen(withBodyParser(toNodeListener(handler)))

    const response = await send(port, { path: '/' })

    expect(response.status).toBe(200)
    expect(requests).toHaveLength(1)
  })
})
