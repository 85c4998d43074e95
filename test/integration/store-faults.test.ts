/**
 * When the store goes away (connection refused) or stops answering mid-request (traffic swallowed),
 * a gateway process answers a clear 503 quickly, writes nothing by halves, and serves again by
 * itself once the store is back. The store sits behind a loopback TCP proxy that the test cuts.
 */

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startRunner, type RunningProcess } from '../helpers/process'
import { NETWORKED_STORES, requireServer, uniqueNamespace } from '../helpers/stores'
import { startTcpProxy } from '../helpers/tcp-proxy'

const KEY = `operator-${uniqueNamespace('key')}`
/** Far above every driver timeout: a request that takes this long has hung. */
const HANG = 20_000

describe.each(NETWORKED_STORES)('a gateway whose $name goes away', (store) => {
  const namespace = uniqueNamespace('faults')
  let proxy: Awaited<ReturnType<typeof startTcpProxy>>
  let gateway: RunningProcess

  beforeAll(async () => {
    await requireServer(store.port)
    proxy = await startTcpProxy({ targetPort: store.port })
    gateway = await startRunner({ ...store.env(namespace, proxy.port), MODELGATE_LOG_LEVEL: 'error', MODELGATE_MANAGEMENT_KEY: KEY })
  })

  afterAll(async () => {
    await gateway?.stop('SIGKILL')
    await proxy?.close()
    await store.drop(namespace)
  })

  const call = (path: string, init: { method?: string; json?: unknown } = {}) =>
    fetch(`${gateway.url}/api/v1${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${KEY}`, ...(init.json ? { 'content-type': 'application/json' } : {}) },
      body: init.json ? JSON.stringify(init.json) : undefined,
      signal: AbortSignal.timeout(HANG),
    })

  /** Polls (bounded) until the gateway answers 200 again. */
  const waitUntilServing = () =>
    vi.waitFor(
      async () => {
        const response = await call('/workspaces/default')
        await response.arrayBuffer()
        if (response.status !== 200) throw new Error('the gateway did not recover')
      },
      { timeout: 10_000, interval: 50 },
    )

  const expect503 = async (response: Response) => {
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('1')
    expect(await response.json()).toEqual({ error: { code: 503, message: 'Storage is unavailable' } })
  }

  it('serves normally through the proxy', async () => {
    expect((await call('/workspaces/default')).status).toBe(200)
  })

  it('answers 503 when the store refuses connections, then recovers by itself', async () => {
    void proxy.cut()
    await expect503(await call('/workspaces/default'))
    await expect503(await call('/workspaces', { method: 'POST', json: { name: 'During outage', slug: 'outage' } }))
    await proxy.restore()
    await waitUntilServing()
    // The refused write left nothing behind.
    expect((await call('/workspaces/outage')).status).toBe(404)
  })

  it('answers 503 when the store stops answering mid-request, then recovers by itself', async () => {
    proxy.blackhole()
    const [read, write] = await Promise.all([
      call('/workspaces/default'),
      call('/workspaces', { method: 'POST', json: { name: 'Swallowed', slug: 'swallowed' } }),
    ])
    await expect503(read)
    await expect503(write)
    await proxy.restore()
    await waitUntilServing()
    // A write whose answer was lost either happened completely or not at all.
    const after = await call('/workspaces/swallowed')
    if (after.status === 200) {
      const { data } = (await after.json()) as { data: { name: string; slug: string } }
      expect(data).toMatchObject({ name: 'Swallowed', slug: 'swallowed' })
    } else expect(after.status).toBe(404)
    // And the gateway keeps serving writes.
    expect((await call('/workspaces', { method: 'POST', json: { name: 'After', slug: 'after' } })).status).toBe(201)
  })

  it('reports not ready (503) while the store is cut, stays live, and is ready again once it is back', async () => {
    const health = (path: string) => fetch(`${gateway.url}/api/v1${path}`, { signal: AbortSignal.timeout(HANG) })
    expect((await health('/health/ready')).status).toBe(200)
    void proxy.cut()
    const notReady = await health('/health/ready')
    expect(notReady.status).toBe(503)
    const text = await notReady.text()
    expect(JSON.parse(text)).toEqual({ error: { code: 503, message: expect.stringMatching(/^Not ready: the store (is unavailable|did not answer within 2 s)$/) } })
    expect(text).not.toContain(String(proxy.port))
    expect((await health('/health')).status).toBe(200)
    await proxy.restore()
    await vi.waitFor(
      async () => {
        if ((await health('/health/ready')).status !== 200) throw new Error('not ready yet')
      },
      { timeout: 10_000, interval: 50 },
    )
  })

  it('is still alive: the process never crashed', () => {
    expect(gateway.child.exitCode).toBeNull()
  })
})
