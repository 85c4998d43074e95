import { describe, expect, it } from 'vitest'
import { createGateway } from '../../../src/gateway/gateway'
import { GatewayError, InternalError, NotFoundError, renderError, toRenderedError } from '../../../src/core/errors'
import { silentLogger, type Logger } from '../../../src/core/logger'
import type { StorageDriver } from '../../../src/storage/contract'
import { memoryStorage } from '../../../src/storage/memory'
import { createTestGateway, readJson } from '../../helpers/gateway'

describe('routing', () => {
  it('answers 404 in the spec body for unknown paths, inside and outside the base path', async () => {
    const t = await createTestGateway()
    for (const path of ['http://gateway.test/api/v1/nope', 'http://gateway.test/elsewhere', 'http://gateway.test/api/v10/keys']) {
      const response = await t.gateway.fetch(new Request(path, { headers: { authorization: `Bearer ${t.managementKey}` } }))
      expect(response.status, path).toBe(404)
      const body = await readJson(response)
      expect(body).toEqual({ error: { code: 404, message: `No route for GET ${new URL(path).pathname}` } })
    }
  })

  it('answers 404 before authentication, so unknown paths reveal nothing about keys', async () => {
    const t = await createTestGateway()
    const response = await t.call('GET', '/nope', { key: null })
    expect(response.status).toBe(404)
  })

  it('speaks the intern error body for unknown intern paths', async () => {
    const t = await createTestGateway()
    const response = await t.call('GET', '/interns/x/y/z')
    expect(response.status).toBe(404)
    expect(await readJson(response)).toEqual({
      error: { code: 404, message: 'No route for GET /api/v1/interns/x/y/z', metadata: { reason: 'not_found', retryable: false } },
    })
  })

  it('serves under a configurable base path', async () => {
    for (const basePath of ['/gateway', '/a/b/c', '']) {
      const t = await createTestGateway({ basePath })
      const response = await t.call('GET', '/workspaces/default')
      expect(response.status, basePath).toBe(200)
      const outside = await t.gateway.fetch(new Request('http://gateway.test/api/v1/workspaces/default'))
      if (basePath !== '') expect(outside.status).toBe(404)
    }
  })

  it('rejects an invalid base path at start-up', () => {
    expect(() => createGateway({ basePath: 'api v1' })).toThrow('options.basePath: must be a path such as /api/v1, or empty')
  })

  it('rejects a storage that does not implement the contract', () => {
    expect(() => createGateway({ storage: {} as StorageDriver })).toThrow('options.storage: must implement the StorageDriver contract')
  })

  it('rejects a load balancing it does not know, and a random source that is not a function', () => {
    expect(() => createGateway({ routing: { balancing: 'random' as 'weighted' } })).toThrow('options.routing.balancing: must be weighted or cheapest')
    expect(() => createGateway({ routing: { random: 0.5 as unknown as () => number } })).toThrow('options.routing.random: must be a function returning a number in [0, 1)')
  })
})

describe('request ids', () => {
  it('generates one for every response, success or error', async () => {
    const t = await createTestGateway()
    const ids = new Set<string>()
    for (const path of ['/workspaces/default', '/nope', '/keys?limit=0']) {
      const response = await t.call('GET', path)
      const id = response.headers.get('x-request-id')
      expect(id, path).toMatch(/^[0-9a-f-]{36}$/)
      ids.add(id!)
    }
    expect(ids.size).toBe(3)
    const unauthenticated = await t.call('GET', '/workspaces/default', { key: null })
    expect(unauthenticated.headers.get('x-request-id')).toBeTruthy()
  })

  it("keeps a caller's safe request id and replaces an unsafe one", async () => {
    const t = await createTestGateway()
    const kept = await t.call('GET', '/workspaces/default', { headers: { 'x-request-id': 'trace-123.abc:9' } })
    expect(kept.headers.get('x-request-id')).toBe('trace-123.abc:9')
    const replaced = await t.call('GET', '/workspaces/default', { headers: { 'x-request-id': 'x'.repeat(200) } })
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
  })
})

describe('unexpected failures', () => {
  it('become a generic 500 that leaks nothing, logged with the request id', async () => {
    const storage = memoryStorage()
    const logged: unknown[] = []
    const logger: Logger = { ...silentLogger, error: (message, fields) => logged.push({ message, fields }) }
    const gateway = createGateway({ storage, logger })
    const { key } = await gateway.admin.createKey({ kind: 'management' })
    const failing: StorageDriver = {
      ...storage,
      get: async () => {
        throw new Error('connect ECONNREFUSED password=hunter2 SELECT * FROM api_keys')
      },
    }
    const broken = createGateway({ storage: failing, logger })
    const response = await broken.fetch(
      new Request('http://gateway.test/api/v1/workspaces/default', { headers: { authorization: `Bearer ${key}`, 'x-request-id': 'req-1' } }),
    )
    expect(response.status).toBe(500)
    const text = await response.text()
    expect(JSON.parse(text)).toEqual({ error: { code: 500, message: 'Internal server error' } })
    expect(text).not.toContain('hunter2')
    expect(logged).toHaveLength(1)
    expect(JSON.stringify(logged[0])).toContain('req-1')
  })
})

describe('renderError', () => {
  it('renders the standard body with metadata when given', () => {
    expect(toRenderedError(new NotFoundError('Nope', { metadata: { hint: 'x' } }), 'standard').body).toEqual({
      error: { code: 404, message: 'Nope', metadata: { hint: 'x' } },
    })
  })

  it('renders intern reasons and retryable, omitting metadata on 401 and 403', () => {
    const render = (error: GatewayError) => toRenderedError(error, 'intern').body
    expect(render(new GatewayError(400, 'bad'))).toEqual({ error: { code: 400, message: 'bad', metadata: { reason: 'invalid_body', retryable: false } } })
    expect(render(new GatewayError(408, 'slow'))).toEqual({ error: { code: 408, message: 'slow', metadata: { reason: 'timeout', retryable: true } } })
    expect(render(new GatewayError(409, 'taken', { reason: 'name_taken' }))).toEqual({
      error: { code: 409, message: 'taken', metadata: { reason: 'name_taken', retryable: false } },
    })
    expect(render(new GatewayError(413, 'big'))).toEqual({ error: { code: 413, message: 'big', metadata: { reason: 'payload_too_large', retryable: false } } })
    expect(render(new GatewayError(415, 'type'))).toEqual({
      error: { code: 415, message: 'type', metadata: { reason: 'unsupported_media_type', retryable: false } },
    })
    expect(render(new InternalError('boom'))).toEqual({ error: { code: 500, message: 'boom', metadata: { reason: 'internal_error', retryable: true } } })
    expect(render(new GatewayError(502, 'later', { reason: 'upstream_unavailable', retryable: true }))).toEqual({
      error: { code: 502, message: 'later', metadata: { reason: 'upstream_unavailable', retryable: true } },
    })
    expect(render(new GatewayError(401, 'who'))).toEqual({ error: { code: 401, message: 'who' } })
    expect(render(new GatewayError(403, 'no', { reason: 'no_acting_user' }))).toEqual({ error: { code: 403, message: 'no' } })
  })

  it('masks non-gateway exceptions and sets headers', async () => {
    const response = renderError(new TypeError('secret detail'), 'standard', { 'x-request-id': 'r' })
    expect(response.status).toBe(500)
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(response.headers.get('x-request-id')).toBe('r')
    expect(await response.json()).toEqual({ error: { code: 500, message: 'Internal server error' } })
  })
})

describe('rate limits', () => {
  it('lets each key make `requests` calls per window, then answers 429 with rate-limit headers', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z')
    const storage = memoryStorage({ now: () => clock })
    const gateway = createGateway({ storage, logger: silentLogger, rateLimit: { requests: 3, windowSeconds: 60 }, now: () => new Date(clock) })
    const first = await gateway.admin.createKey({ kind: 'management' })
    const second = await gateway.admin.createKey({ kind: 'management' })
    const get = (key: string) =>
      gateway.fetch(new Request('http://gateway.test/api/v1/workspaces/default', { headers: { authorization: `Bearer ${key}` } }))
    for (let index = 0; index < 3; index++) {
      const response = await get(first.key)
      expect(response.status).toBe(200)
      expect(response.headers.get('x-ratelimit-limit')).toBeNull()
    }
    const limited = await get(first.key)
    expect(limited.status).toBe(429)
    expect(await readJson(limited)).toEqual({ error: { code: 429, message: 'Rate limit exceeded: 3 requests per 60 seconds' } })
    expect(limited.headers.get('retry-after')).toBe('60')
    expect(limited.headers.get('x-ratelimit-limit')).toBe('3')
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0')
    expect(limited.headers.get('x-ratelimit-reset')).toBe(String(clock + 60_000))
    // Another key has its own budget; a new window resets the first.
    expect((await get(second.key)).status).toBe(200)
    clock += 60_000
    expect((await get(first.key)).status).toBe(200)
  })

  it('never counts unauthenticated requests against a key', async () => {
    const gateway = createGateway({ logger: silentLogger, rateLimit: { requests: 1, windowSeconds: 60 } })
    const { key } = await gateway.admin.createKey({ kind: 'management' })
    for (let index = 0; index < 3; index++) {
      expect((await gateway.fetch(new Request('http://gateway.test/api/v1/workspaces/default'))).status).toBe(401)
    }
    const ok = await gateway.fetch(new Request('http://gateway.test/api/v1/workspaces/default', { headers: { authorization: `Bearer ${key}` } }))
    expect(ok.status).toBe(200)
  })
})

describe('storage outages', () => {
  it('answer 503 in the spec body with Retry-After, without leaking the cause', async () => {
    const { StorageUnavailableError } = await import('../../../src/core/errors')
    const storage = memoryStorage()
    const seed = createGateway({ storage, logger: silentLogger })
    const { key } = await seed.admin.createKey({ kind: 'management' })
    const down: StorageDriver = {
      ...storage,
      get: async () => {
        throw new StorageUnavailableError('Storage is unavailable', { cause: new Error('ECONNREFUSED 10.0.0.1:6379 password=x') })
      },
    }
    const gateway = createGateway({ storage: down, logger: silentLogger })
    const response = await gateway.fetch(new Request('http://gateway.test/api/v1/workspaces/default', { headers: { authorization: `Bearer ${key}` } }))
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('1')
    expect(await response.text()).toBe('{"error":{"code":503,"message":"Storage is unavailable"}}')
  })
})
