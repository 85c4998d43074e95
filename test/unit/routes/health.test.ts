import { describe, expect, it } from 'vitest'
import { createGateway } from '../../../src/gateway/gateway'
import { StorageUnavailableError } from '../../../src/core/errors'
import { silentLogger } from '../../../src/core/logger'
import type { StorageDriver } from '../../../src/storage/contract'
import { memoryStorage } from '../../../src/storage/memory'
import { createTestGateway, readJson } from '../../helpers/gateway'

const SECRET_URL = 'redis://:hunter2-secret@127.0.0.1:6379'

/** A store whose reads fail (`down`) or never answer (`silent`), as a driver reports an outage. */
const brokenStorage = (mode: 'down' | 'silent'): StorageDriver => {
  const storage = memoryStorage()
  return {
    ...storage,
    name: 'redis',
    get: () => (mode === 'down' ? Promise.reject(new StorageUnavailableError('Storage is unavailable', { cause: new Error(SECRET_URL) })) : new Promise(() => {})),
    findByUnique: () =>
      mode === 'down' ? Promise.reject(new StorageUnavailableError('Storage is unavailable', { cause: new Error(SECRET_URL) })) : new Promise(() => {}),
  }
}

describe('health checks', () => {
  it('answers liveness and readiness without a key, under the base path, never cached', async () => {
    const t = await createTestGateway()
    for (const [path, body] of [
      ['/health', { status: 'ok' }],
      ['/health/ready', { status: 'ready', checks: { storage: 'ok' } }],
    ] as const) {
      const response = await t.call('GET', path, { key: null })
      expect(response.status, path).toBe(200)
      expect(response.headers.get('cache-control')).toBe('no-store')
      expect(response.headers.get('x-request-id')).toBeTruthy()
      expect(await readJson(response)).toEqual(body)
    }
    // Outside the base path they are not served (the host owns its root).
    expect((await t.gateway.fetch(new Request('http://gateway.test/health'))).status).toBe(404)
  })

  it('readiness reports the host\'s event-loop monitor, and a slow loop without going unready', async () => {
    const delay = { p50Ms: 1, p99Ms: 180.5, maxMs: 2400, windowSeconds: 10, thresholdMs: 100, isSlow: true }
    const routes: string[] = []
    const eventLoop = { read: () => delay, track: (route: string) => (routes.push(route), () => {}) }
    const gateway = createGateway({ logger: silentLogger, eventLoop })
    const response = await gateway.fetch(new Request('http://gateway.test/api/v1/health/ready'))
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({
      status: 'ready',
      checks: { storage: 'ok', event_loop: { status: 'slow', delay_p50_ms: 1, delay_p99_ms: 180.5, delay_max_ms: 2400, window_seconds: 10, threshold_ms: 100 } },
    })
    expect(routes).toEqual(['GET /health/ready'])
  })

  it('names the worker process that answered when the host said which one it is', async () => {
    const health = async (worker: number, path: string) =>
      readJson(await createGateway({ worker, logger: silentLogger }).fetch(new Request(`http://gateway.test/api/v1${path}`)))
    expect(await health(3, '/health')).toEqual({ status: 'ok', worker: 3 })
    expect(await health(3, '/health/ready')).toEqual({ status: 'ready', checks: { storage: 'ok' }, worker: 3 })
    expect(await health(0, '/health')).toEqual({ status: 'ok', worker: 0 })
    for (const [worker, rule] of [
      [-1, 'must be 0 or more'],
      [1.5, 'must be a whole number'],
    ] as const) {
      expect(() => createGateway({ worker, logger: silentLogger })).toThrow(`options.worker: ${rule}`)
    }
    expect(() => createGateway({ worker: '2' as never, logger: silentLogger })).toThrow('options.worker:')
  })

  it('ignores a key, even an invalid one, and is not rate-limited', async () => {
    const gateway = createGateway({ logger: silentLogger, rateLimit: { requests: 1, windowSeconds: 60 } })
    for (let index = 0; index < 3; index++) {
      const response = await gateway.fetch(new Request('http://gateway.test/api/v1/health', { headers: { authorization: 'Bearer nope' } }))
      expect(response.status).toBe(200)
    }
  })

  it('answers 405 with Allow for other methods', async () => {
    const t = await createTestGateway()
    const response = await t.call('POST', '/health', { key: null })
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('GET')
  })

  it('is not ready (503) while the store is down, and says nothing about where the store is', async () => {
    const gateway = createGateway({ storage: brokenStorage('down'), logger: silentLogger })
    expect((await gateway.fetch(new Request('http://gateway.test/api/v1/health'))).status).toBe(200)
    const response = await gateway.fetch(new Request('http://gateway.test/api/v1/health/ready'))
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('1')
    expect(response.headers.get('cache-control')).toBe('no-store')
    const text = await response.text()
    expect(JSON.parse(text)).toEqual({ error: { code: 503, message: 'Not ready: the store is unavailable' } })
    expect(text).not.toContain('hunter2')
    expect(text).not.toContain('redis')
  })

  it('is not ready (503) when the store does not answer within 2 s', async () => {
    const gateway = createGateway({ storage: brokenStorage('silent'), logger: silentLogger })
    const response = await gateway.fetch(new Request('http://gateway.test/api/v1/health/ready'))
    expect(response.status).toBe(503)
    expect(await readJson(response)).toEqual({ error: { code: 503, message: 'Not ready: the store did not answer within 2 s' } })
  })
})
