import http, { type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { createUpstreamGuard, DestinationRefusedError, type HostResolver } from '../../../src/core/upstream-guard'
import { UpstreamTimeoutSignal, UpstreamTooLargeSignal, type UpstreamTimeouts } from '../../../src/transport/contract'
import { undiciTransport } from '../../../src/transport/undici'

const transport = undiciTransport()
const servers: Server[] = []
const TIMEOUTS: UpstreamTimeouts = { connectMs: 5_000, firstByteMs: 5_000, idleMs: 60_000, totalMs: 60_000 }

const serve = async (handler: http.RequestListener): Promise<string> => {
  const server = http.createServer(handler)
  server.keepAliveTimeout = 10_000
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const post = (url: string, signal = new AbortController().signal, timeouts = TIMEOUTS) =>
  transport({ url: `${url}/v1/responses?x=1`, method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":"é"}' }, { signal, timeouts })

afterEach(async () => {
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
afterAll(() => transport.close())

describe('undiciTransport', () => {
  it('sends method, path, query, headers and body, and reads the answer as text', async () => {
    let seen: { method?: string; url?: string; type?: string; body?: string } = {}
    const url = await serve((req, res) => {
      let body = ''
      req.setEncoding('utf8')
      req.on('data', (chunk: string) => (body += chunk))
      req.on('end', () => {
        seen = { method: req.method, url: req.url, type: req.headers['content-type'], body }
        res.writeHead(201, { 'content-type': 'application/json', 'x-upstream': 'yes' }).end('{"ok":"ü"}')
      })
    })

    const response = await post(url)

    expect(seen).toEqual({ method: 'POST', url: '/v1/responses?x=1', type: 'application/json', body: '{"a":"é"}' })
    expect(response.status).toBe(201)
    expect(response.headers.get('x-upstream')).toBe('yes')
    expect(await response.text!()).toBe('{"ok":"ü"}')
  })

  it('hands the body over chunk by chunk as it arrives', async () => {
    let sendRest!: () => void
    const url = await serve((req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: one\n\n')
      sendRest = () => res.end('data: two\n\n')
    })

    const response = await post(url)
    const iterator = response.body[Symbol.asyncIterator]()
    expect(Buffer.from((await iterator.next()).value!).toString()).toBe('data: one\n\n')
    sendRest()
    let rest = ''
    for (let result = await iterator.next(); !result.done; result = await iterator.next()) rest += Buffer.from(result.value).toString()
    expect(rest).toBe('data: two\n\n')
  })

  it('stops reading from the upstream while the consumer does not keep up', async () => {
    const total = 32 * 1024 * 1024
    const written = { bytes: 0, isBlocked: false }
    const url = await serve((req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'application/octet-stream' })
      const chunk = Buffer.alloc(64 * 1024, 0x61)
      const pump = () => {
        written.isBlocked = false
        while (written.bytes < total) {
          written.bytes += chunk.byteLength
          if (!res.write(chunk)) {
            written.isBlocked = true
            return void res.once('drain', pump)
          }
        }
        res.end()
      }
      pump()
    })

    const response = await post(url)
    const iterator = response.body[Symbol.asyncIterator]()
    await iterator.next()
    // The upstream comes to a standstill, blocked on 'drain', while nobody reads. Without backpressure it would
    // instead write all 32 MB and end, and this wait would time out.
    let lastSeen = -1
    await vi.waitFor(
      () => {
        const isStill = written.isBlocked && written.bytes === lastSeen
        lastSeen = written.bytes
        if (!isStill) throw new Error('the upstream is still writing')
      },
      { timeout: 10_000, interval: 50 },
    )

    // Socket buffers hold a few MB at most; the rest waits upstream until the consumer reads again.
    expect(written.bytes).toBeLessThan(total / 2)
    let received = 64 * 1024
    for (let result = await iterator.next(); !result.done; result = await iterator.next()) received += result.value.byteLength
    expect(received).toBeGreaterThanOrEqual(total - 64 * 1024)
  })

  it('fails with the signal reason before the headers, and ends the upstream exchange', async () => {
    let resolveClosed!: () => void
    const closed = new Promise<void>((resolve) => {
      resolveClosed = resolve
    })
    let resolveReceived!: () => void
    const received = new Promise<void>((resolve) => {
      resolveReceived = resolve
    })
    const url = await serve((req, res) => {
      req.resume()
      res.on('close', () => resolveClosed())
      resolveReceived()
    })
    const controller = new AbortController()

    const pending = post(url, controller.signal)
    await received
    controller.abort(new Error('client went away'))

    await expect(pending).rejects.toThrow('client went away')
    await closed
  })

  it('fails reading the body once the signal aborts after the headers', async () => {
    const url = await serve((req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: first\n\n')
    })
    const controller = new AbortController()

    const response = await post(url, controller.signal)
    const iterator = response.body[Symbol.asyncIterator]()
    await iterator.next()
    const next = iterator.next()
    controller.abort(new Error('client went away'))

    await expect(next).rejects.toThrow('client went away')
  })

  it('makes reading fail with the reason given to cancel', async () => {
    const url = await serve((req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: first\n\n')
    })

    const response = await post(url)
    const iterator = response.body[Symbol.asyncIterator]()
    await iterator.next()
    await response.cancel(new UpstreamTimeoutSignal('total'))

    await expect(iterator.next()).rejects.toBeInstanceOf(UpstreamTimeoutSignal)
  })

  it('times the first byte from the moment the request is sent, on time', async () => {
    const url = await serve((req) => req.resume())

    const started = performance.now()
    const failure = await post(url, undefined, { ...TIMEOUTS, firstByteMs: 150 }).catch((error: unknown) => error)
    const elapsed = performance.now() - started

    expect(failure).toBeInstanceOf(UpstreamTimeoutSignal)
    expect((failure as UpstreamTimeoutSignal).phase).toBe('first_byte')
    expect(elapsed).toBeGreaterThanOrEqual(140)
    expect(elapsed).toBeLessThan(600)
  })

  it('passes error statuses through with their body', async () => {
    const url = await serve((req, res) => {
      req.resume()
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' }).end('{"error":{"message":"slow down"}}')
    })

    const response = await post(url)

    expect(response.status).toBe(429)
    expect(response.headers.get('retry-after')).toBe('7')
    expect(await response.text!()).toBe('{"error":{"message":"slow down"}}')
  })

  describe('guarded exchanges (a caller chose the host)', () => {
    const AZURE_NAME = 'fabrikam.openai.azure.com'
    const lookups: string[] = []
    const toLoopback: HostResolver = async (hostname) => {
      lookups.push(hostname)
      return [{ address: '127.0.0.1', family: 4 }]
    }
    const send = (url: string, guard: ReturnType<typeof createUpstreamGuard>) =>
      transport({ url, method: 'POST', headers: {}, body: '{}' }, { signal: new AbortController().signal, timeouts: TIMEOUTS, guard })

    it('resolves as it connects, once, and connects to the address it checked', async () => {
      lookups.length = 0
      const seen: string[] = []
      const url = await serve((req, res) => {
        req.resume()
        seen.push(String(req.headers.host))
        res.writeHead(200).end('ok')
      })
      const port = new URL(url).port
      const guard = createUpstreamGuard({ resolve: toLoopback, allowPrivateNetworks: ['127.0.0.0/8'] })

      expect(await (await send(`http://${AZURE_NAME}:${port}/x`, guard)).text!()).toBe('ok')

      // The name was looked up once, by the guard, and the socket went where that answer said (the server is on loopback).
      expect(lookups).toEqual([AZURE_NAME])
      expect(seen).toEqual([`${AZURE_NAME}:${port}`])
      expect(transport.hasConnectGuard).toBe(true)
    })

    it('refuses before connecting when the name resolves to an address the policy does not allow', async () => {
      lookups.length = 0
      let requests = 0
      const url = await serve((req, res) => {
        requests++
        req.resume()
        res.writeHead(200).end('internal')
      })

      const failure = await send(`http://${AZURE_NAME}:${new URL(url).port}/x`, createUpstreamGuard({ resolve: toLoopback })).catch((error: unknown) => error)

      expect(failure).toBeInstanceOf(DestinationRefusedError)
      expect((failure as DestinationRefusedError).reason).toBe('the host must resolve to public addresses only')
      expect(lookups).toEqual([AZURE_NAME])
      expect(requests).toBe(0)
    })
  })

  it('stops reading a whole body past maxBytes, and refuses a declared length over it at once', async () => {
    const url = await serve((req, res) => {
      req.resume()
      if (req.url?.includes('declared')) return void res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) }).flushHeaders()
      res.writeHead(200).end(Buffer.alloc(256 * 1024, 0x61))
    })
    const request = (path: string) => transport({ url: `${url}${path}`, method: 'POST', headers: {}, body: '' }, { signal: new AbortController().signal, timeouts: TIMEOUTS })

    await expect((await request('/large')).text!(64 * 1024)).rejects.toBeInstanceOf(UpstreamTooLargeSignal)
    await expect((await request('/declared')).text!(64 * 1024)).rejects.toBeInstanceOf(UpstreamTooLargeSignal)
    expect((await (await request('/large')).text!(256 * 1024)).length).toBe(256 * 1024)
  })

  it('rejects when nothing listens at the address', async () => {
    const url = await serve(() => {})
    await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()))

    await expect(post(url)).rejects.toBeInstanceOf(Error)
  })
})
