import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express, { type ErrorRequestHandler } from 'express'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { toExpressHandler } from '../../../src/adapters/express'
import { BodyAlreadyConsumedError } from '../../../src/adapters/node-bridge'
import type { FetchHandler } from '../../../src/core/types'
import { createGateway } from '../../../src/gateway/gateway'

/** A fake gateway that echoes what it received. */
const createEchoHandler = () => {
  const requests: Request[] = []
  const handler: FetchHandler = {
    fetch: async (request) => {
      requests.push(request)
      const url = new URL(request.url)
      const body = request.body ? await request.text() : null
      return Response.json({ method: request.method, path: `${url.pathname}${url.search}`, body })
    },
  }
  return { handler, requests }
}

const servers: Server[] = []

const listen = async (app: express.Express): Promise<string> => {
  const server = await new Promise<Server>((resolve) => {
    const started: Server = app.listen(0, '127.0.0.1', () => resolve(started))
  })
  servers.push(server)
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

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

describe('toExpressHandler', () => {
  it('sees paths relative to the mount point', async () => {
    const { handler, requests } = createEchoHandler()
    const app = express()
    app.use('/ai', toExpressHandler(handler))
    const base = await listen(app)

    const response = await fetch(`${base}/ai/api/v1/x?y=1`)

    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ method: 'GET', path: '/api/v1/x?y=1', body: null })
    expect(requests[0]?.url).toBe(`${base}/api/v1/x?y=1`)
  })

  it('leaves routes outside the mount point to Express', async () => {
    const { handler, requests } = createEchoHandler()
    const app = express()
    app.use('/ai', toExpressHandler(handler))
    app.get('/health', (_req, res) => {
      res.send('host')
    })
    const base = await listen(app)

    const response = await fetch(`${base}/health`)

    expect(await response.text()).toBe('host')
    expect(requests).toHaveLength(0)
  })

  it('streams a POST body through when mounted before express.json()', async () => {
    const { handler } = createEchoHandler()
    const app = express()
    app.use('/ai', toExpressHandler(handler))
    app.use(express.json())
    const base = await listen(app)

    const response = await fetch(`${base}/ai/api/v1/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"m"}',
    })

    expect(await response.json()).toEqual({ method: 'POST', path: '/api/v1/chat', body: '{"model":"m"}' })
  })

  it('answers a body already read by express.json() with a JSON error saying how to fix it, without calling the handler', async () => {
    const errorLog = vi.spyOn(console, 'error').mockImplementation(() => {})
    const { handler, requests } = createEchoHandler()
    const errors: unknown[] = []
    const recordError: ErrorRequestHandler = (error, _req, _res, next) => {
      errors.push(error)
      next(error)
    }
    const app = express()
    app.use(express.json())
    app.use('/ai', toExpressHandler(handler))
    app.use(recordError)
    const base = await listen(app)

    const send = () => fetch(`${base}/ai/api/v1/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m"}' })
    const responses = [await send(), await send()]

    for (const response of responses) {
      expect(response.status).toBe(500)
      expect(response.headers.get('content-type')).toMatch(/^application\/json/)
      expect(await response.json()).toEqual({ error: { code: 500, message: new BodyAlreadyConsumedError().message } })
    }
    expect(new BodyAlreadyConsumedError().message).toBe(
      'modelgate: the request body was already read by another middleware (such as express.json()); ' +
        "mount modelgate before body parsers, or give them only your own routes (app.use('/app', express.json()))",
    )
    expect(requests).toHaveLength(0)
    // Answered by the adapter, not Express's HTML error page; the log hears it once.
    expect(errors).toHaveLength(0)
    expect(errorLog).toHaveBeenCalledTimes(1)
    errorLog.mockRestore()
  })

  it.each([
    ['/ai/api/v1/chat/completions', { error: { code: 500, message: new BodyAlreadyConsumedError().message } }],
    ['/ai/api/v1/messages', { type: 'error', error: { type: 'api_error', message: new BodyAlreadyConsumedError().message } }],
  ])('answers %s of a real gateway behind express.json() in that route\'s error body', async (path, body) => {
    const errorLog = vi.spyOn(console, 'error').mockImplementation(() => {})
    const gateway = createGateway({ logger: false })
    const app = express()
    app.use(express.json())
    app.use('/ai', toExpressHandler(gateway))
    const base = await listen(app)

    const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m"}' })

    expect(response.status).toBe(500)
    expect(response.headers.get('x-request-id')).toBeTruthy()
    expect(await response.json()).toEqual(body)
    errorLog.mockRestore()
    await gateway.close()
  })

  it('serves GET normally even with express.json() in front', async () => {
    const { handler } = createEchoHandler()
    const app = express()
    app.use(express.json())
    app.use('/ai', toExpressHandler(handler))
    const base = await listen(app)

    const response = await fetch(`${base}/ai/api/v1/models`)

    expect(await response.json()).toEqual({ method: 'GET', path: '/api/v1/models', body: null })
  })

  it('does not load express when the adapter module is imported', async () => {
    const { readFile } = await import('node:fs/promises')
    const source = await readFile(new URL('../../../src/adapters/express.ts', import.meta.url), 'utf8')

    expect(source).not.toMatch(/^import (?!type )[^\n]*from 'express'/m)
  })
})
