/**
 * The runner's server while it drains (src/cli/draining-server.ts): a keep-alive connection is closed as soon as its
 * last response ended, a pipelined request already received is still answered first, and a response started while
 * draining says `Connection: close`. Raw sockets on loopback, so the test sees exactly what goes over the wire.
 */

import { once } from 'node:events'
import { connect, type AddressInfo, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createDrainingServer, type DrainingServer } from '../../../src/cli/draining-server'
import { gate } from '../../../src/testing'

let draining: DrainingServer | undefined
const sockets: Socket[] = []
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy()
  if (draining) {
    draining.server.closeAllConnections()
    await new Promise((resolve) => draining!.server.close(resolve))
  }
  draining = undefined
})

/** A server whose `/held` answers once `release` is opened; every other path at once. Records the paths it started. */
const start = async () => {
  const release = gate()
  const started: string[] = []
  draining = createDrainingServer((request, response) => {
    started.push(request.url!)
    const answer = () => response.end(`answer to ${request.url}`)
    if (request.url === '/held') void release.then(answer)
    else answer()
  })
  await new Promise<void>((resolve) => draining!.server.listen(0, '127.0.0.1', resolve))
  return { release, started, port: (draining.server.address() as AddressInfo).port }
}

/** A keep-alive connection that collects everything the server sends; `closed` resolves when the server ends it. */
const connection = async (port: number) => {
  const socket = connect(port, '127.0.0.1')
  sockets.push(socket)
  await once(socket, 'connect')
  let received = ''
  socket.setEncoding('utf8').on('data', (text: string) => (received += text))
  const closed = once(socket, 'close')
  return {
    send: (path: string) => socket.write(`GET ${path} HTTP/1.1\r\nHost: gateway.test\r\nConnection: keep-alive\r\n\r\n`),
    received: () => received,
    closed,
  }
}

/** The responses in what a connection received, each as its head (lower-cased) and body. */
const responsesIn = (text: string) =>
  text
    .split(/(?=HTTP\/1\.1 )/)
    .filter(Boolean)
    .map((response) => {
      const [head, body] = response.split('\r\n\r\n') as [string, string]
      return { head: head.toLowerCase(), body }
    })

/** Waits until `condition` holds, yielding to the event loop (bounded in turns). */
const until = async (condition: () => boolean) => {
  for (let turns = 0; !condition(); turns++) {
    if (turns > 5_000) throw new Error('condition never held')
    await new Promise((resolve) => setImmediate(resolve))
  }
}

describe('a draining server', () => {
  it('closes a keep-alive connection idle when draining starts', async () => {
    const { port } = await start()
    const client = await connection(port)
    client.send('/quick')
    await until(() => client.received().includes('answer to /quick'))
    draining!.drain()
    await client.closed
  })

  it('answers a request in flight, then closes its keep-alive connection at once', async () => {
    const { port, release, started } = await start()
    const client = await connection(port)
    client.send('/held')
    await until(() => started.length === 1)
    draining!.drain()
    release.open()
    await client.closed
    const [response] = responsesIn(client.received())
    expect(response!.body).toBe('answer to /held')
    // Its headers were not out when draining started, but it was started before: the close is the server's own.
    expect(response!.head).toContain('connection: keep-alive')
  })

  it('answers a request pipelined behind one in flight with Connection: close, then closes', async () => {
    const { port, release, started } = await start()
    const client = await connection(port)
    client.send('/held')
    await until(() => started.length === 1)
    draining!.drain()
    // Received while draining, on a connection that is busy: it is answered, and says the connection ends.
    client.send('/next')
    await until(() => started.length === 2)
    release.open()
    await client.closed
    const responses = responsesIn(client.received())
    expect(responses.map((response) => response.body)).toEqual(['answer to /held', 'answer to /next'])
    expect(responses[1]!.head).toContain('connection: close')
  })

  it('leaves keep-alive connections alone until it drains', async () => {
    const { port } = await start()
    const client = await connection(port)
    let isClosed = false
    void client.closed.then(() => (isClosed = true))
    for (const path of ['/one', '/two']) {
      client.send(path)
      await until(() => client.received().includes(`answer to ${path}`))
    }
    expect(isClosed).toBe(false)
    expect(responsesIn(client.received()).every((response) => response.head.includes('connection: keep-alive'))).toBe(true)
  })
})
