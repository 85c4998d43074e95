import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express, { type ErrorRequestHandler } from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { toExpressHandler } from '../../../src/adapters/express'
import { BodyAlreadyConsumedError } from '../../../src/adapters/node-bridge'
import type { FetchHandler } from '../../../src/core/types'

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

  it('passes a body already read by express.json() to next(err) without calling the gateway', async () => {
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

    const response = await fetch(`${base}/ai/api/v1/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"m"}',
    })

    // Express's default error handler answers.
    expect(response.status).toBe(500)
    expect(requests).toHaveLength(0)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBeInstanceOf(BodyAlreadyConsumedError)
    expect((errors[0] as Error).message).toBe(
      'modelgate: the request body was already read by another middleware (such as express.json()); ' +
        'mount modelgate before body parsers',
    )
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
