import { connect, type Socket } from 'node:net'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { toNodeListener } from '../../../src/adapters/node'
import { createGateway, type Gateway } from '../../../src/gateway/gateway'
import { silentLogger } from '../../../src/core/logger'
import { BASE, readJson } from '../../helpers/gateway'
import { closeServer } from '../../helpers/servers'

/** Short enough to keep the suite fast; the tests wait for the answer, never for a fixed time. */
const TIMEOUT_MS = 200

/** A body stream that sends `first` and then stalls for good, recording whether the gateway cancelled it. */
const stallingStream = (first: string) => {
  const state = { cancelled: false }
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(first))
    },
    cancel() {
      state.cancelled = true
    },
  })
  return { stream, state }
}

const setUp = async () => {
  const gateway = createGateway({ logger: silentLogger, requestBodyTimeoutMs: TIMEOUT_MS })
  const { key } = await gateway.admin.createKey({ kind: 'management', name: 'ops' })
  const regular = await gateway.admin.createKey({ kind: 'regular', name: 'app' })
  return { gateway, key, regularKey: regular.key }
}

const post = (gateway: Gateway, path: string, key: string, body: ReadableStream<Uint8Array>, headers: Record<string, string> = {}) =>
  gateway.fetch(
    new Request(`${BASE}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body,
      // @ts-expect-error Node's fetch needs duplex for stream bodies
      duplex: 'half',
    }),
  )

describe('a request body that stops arriving (through gateway.fetch)', () => {
  it('answers 408 and closes the connection when a streamed body stalls, cancelling the stream', async () => {
    const { gateway, key } = await setUp()
    const { stream, state } = stallingStream('{"name":')
    const response = await post(gateway, '/keys', key, stream)
    expect(response.status).toBe(408)
    expect(response.headers.get('connection')).toBe('close')
    expect(await readJson(response)).toEqual({ error: { code: 408, message: 'The request body did not arrive within 200 ms' } })
    expect(state.cancelled).toBe(true)
  })

  it('answers 408 when a body with a declared length stalls', async () => {
    const { gateway, key } = await setUp()
    const { stream } = stallingStream('{"name":')
    const response = await post(gateway, '/keys', key, stream, { 'content-length': '100' })
    expect(response.status).toBe(408)
    expect(await readJson(response)).toEqual({ error: { code: 408, message: 'The request body did not arrive within 200 ms' } })
  })

  it('speaks the intern error body: reason timeout, retryable', async () => {
    const { gateway, regularKey } = await setUp()
    await gateway.admin.setAccountFlags(undefined, { interns: true })
    const { stream } = stallingStream('{"name":')
    const response = await post(gateway, '/interns', regularKey, stream)
    expect(response.status).toBe(408)
    expect(await readJson(response)).toEqual({
      error: { code: 408, message: 'The request body did not arrive within 200 ms', metadata: { reason: 'timeout', retryable: true } },
    })
  })

  it('defaults to 30 s and refuses a timeout that is not a positive whole number of ms', async () => {
    const gateway = createGateway({ logger: silentLogger })
    const { key } = await gateway.admin.createKey({ kind: 'management', name: 'ops' })
    // A body that arrives in time is served as before.
    const response = await gateway.fetch(
      new Request(`${BASE}/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: '{"name":"fine"}',
      }),
    )
    expect(response.status).toBe(201)
    expect(() => createGateway({ requestBodyTimeoutMs: 0 })).toThrow('options.requestBodyTimeoutMs: must be at least 1')
  })
})

describe('a request body that stops arriving (a real socket through the Node bridge)', () => {
  const servers: Server[] = []
  const sockets: Socket[] = []
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy()
    await Promise.all(servers.splice(0).map(closeServer))
  })

  /** Sends `head` and part of a body, then nothing more; resolves with everything the server sent until it closed. */
  const stallMidBody = async (head: string, partialBody: string) => {
    const { gateway, key } = await setUp()
    const server = createServer(toNodeListener(gateway))
    servers.push(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1')
    sockets.push(socket)
    let received = ''
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()))
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    socket.on('error', () => {})
    socket.write(`${head.replace('{key}', key)}\r\n\r\n${partialBody}`)
    await closed
    return received
  }

  const expectTimedOut = (received: string) => {
    const [head, body] = received.split('\r\n\r\n')
    expect(head).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/)
    expect(head!.toLowerCase()).toContain('connection: close')
    expect(JSON.parse(body!)).toEqual({ error: { code: 408, message: 'The request body did not arrive within 200 ms' } })
  }

  it('answers 408 and closes the socket when a body with Content-Length stalls', async () => {
    const received = await stallMidBody(
      'POST /api/v1/keys HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: 100',
      '{"name":',
    )
    expectTimedOut(received)
  })

  it('answers 408 and closes the socket when a chunked body stalls', async () => {
    const received = await stallMidBody(
      'POST /api/v1/keys HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked',
      '8\r\n{"name":\r\n',
    )
    expectTimedOut(received)
  })
})
