import { connect } from 'node:net'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { toNodeListener } from '../../../src/adapters/node'
import { createGateway } from '../../../src/gateway/gateway'
import { memoryStorage } from '../../../src/storage/memory'
import { createRecordingLogger } from '../../helpers/logger'
import { closeServer } from '../../helpers/servers'

describe('a client that disconnects mid-body', () => {
  const servers: Server[] = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map(closeServer))
  })

  /**
   * Sends the head and part of a body, then leaves: while the gateway reads the body (`when: 'reading'`), or
   * before it starts to (`'before-reading'`: authentication is held until the server saw the connection close).
   */
  const disconnectMidBody = async (framing: string, partialBody: string, when: 'reading' | 'before-reading' = 'reading') => {
    const { logger, entries } = createRecordingLogger()
    const storage = memoryStorage()
    const gateway = createGateway({ storage, logger })
    const { key } = await gateway.admin.createKey({ kind: 'management', name: 'ops' })
    let releaseAuthentication = () => {}
    const authenticationHeld = new Promise<void>((resolve) => (releaseAuthentication = resolve))
    if (when === 'before-reading') {
      const get = storage.get.bind(storage)
      storage.get = (async (collection: string, id: string) => {
        if (collection === 'api_keys') await authenticationHeld
        return get(collection, id)
      }) as typeof storage.get
    }
    const server = createServer(toNodeListener(gateway))
    servers.push(server)
    let incoming: IncomingMessage | undefined
    server.on('request', (req: IncomingMessage) => (incoming = req))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1')
    socket.on('error', () => {})
    socket.write(
      `POST /api/v1/keys HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n${framing}\r\n\r\n${partialBody}`,
    )
    if (when === 'reading') {
      // The bridge listens for body data once the gateway reads the body.
      await vi.waitFor(() => expect(incoming?.listenerCount('data')).toBeGreaterThan(0))
      socket.destroy()
    } else {
      await vi.waitFor(() => expect(incoming).toBeDefined())
      socket.destroy()
      await vi.waitFor(() => expect(incoming!.destroyed).toBe(true))
      releaseAuthentication()
    }
    await vi.waitFor(() => expect(entries.some((entry) => entry.message === 'client disconnected')).toBe(true))
    return entries
  }

  it('is logged once at debug level, without a stack, for a body with Content-Length', async () => {
    const entries = await disconnectMidBody('Content-Length: 1000', '{"name":')
    expect(entries.filter((entry) => entry.level === 'error' || entry.level === 'warn')).toEqual([])
    const [entry] = entries.filter((candidate) => candidate.message === 'client disconnected')
    expect(entry).toEqual({ level: 'debug', message: 'client disconnected', fields: { requestId: expect.any(String), method: 'POST' } })
  })

  it('is logged once at debug level for a chunked body', async () => {
    const entries = await disconnectMidBody('Transfer-Encoding: chunked', '8\r\n{"name":\r\n')
    expect(entries.filter((entry) => entry.level === 'error' || entry.level === 'warn')).toEqual([])
    expect(entries.filter((entry) => entry.message === 'client disconnected')).toHaveLength(1)
  })

  it('is logged at debug level when the client left before the gateway started reading the body', async () => {
    for (const framing of ['Content-Length: 1000', 'Transfer-Encoding: chunked']) {
      const entries = await disconnectMidBody(framing, framing.startsWith('Content') ? '{"name":' : '8\r\n{"name":\r\n', 'before-reading')
      expect(entries.filter((entry) => entry.level === 'error' || entry.level === 'warn'), framing).toEqual([])
    }
  })
})
