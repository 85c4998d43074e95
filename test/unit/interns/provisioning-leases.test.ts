/**
 * Provisioning leases on one memory store shared by two gateways (two "processes") with one fake
 * clock. A gateway "dies" by losing the store: its heartbeat can no longer renew its lease, as after
 * a kill -9. Interval timers (heartbeats, sweeps) are faked so they run only when a test says so.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createGateway, type Gateway } from '../../../src/gateway/gateway'
import { StorageUnavailableError } from '../../../src/core/errors'
import { silentLogger } from '../../../src/core/logger'
import type { GatewayOptions } from '../../../src/gateway/options'
import type { InternRuntime } from '../../../src/interns/runtime'
import { INTERNS, type InternRecord } from '../../../src/repositories/interns'
import type { StorageDriver } from '../../../src/storage/contract'
import { memoryStorage } from '../../../src/storage/memory'
import { callAs, readJson, TEST_ENCRYPTION_KEY } from '../../helpers/gateway'

const LEASE_TTL_MS = 30_000
const HEARTBEAT_MS = 10_000
const SWEEP_MS = 15_000

const gate = () => {
  let open!: () => void
  const promise = new Promise<void>((resolve) => (open = resolve))
  return { promise, open }
}

/** A runtime named after its gateway; `hold` keeps provisioning at its first step until opened. */
const namedRuntime = (name: string) => {
  const state = { calls: [] as string[], hold: null as ReturnType<typeof gate> | null, settled: Promise.resolve() as Promise<unknown> }
  const runtime: InternRuntime = {
    provision(intern, report) {
      state.calls.push(intern.id)
      const held = state.hold
      const work = (async () => {
        await report({ label: 'Allocating a sandbox', number: 1, total: 2 })
        if (held) await held.promise
        await report({ label: 'Starting the agent', number: 2, total: 2 })
        return { hostname: `${intern.name}.${name}.test` }
      })()
      state.settled = work.catch(() => undefined)
      return work
    },
    async suspend() {},
    async destroy() {},
    async chat() {
      throw new Error('not used')
    },
  }
  return { runtime, state }
}

/** The shared store as one gateway sees it; `cut()` makes every call fail, as for a process that died. */
const connection = (inner: StorageDriver) => {
  let isCut = false
  const storage = new Proxy(inner, {
    get(target, property) {
      // The store outlives each gateway: the test closes it once.
      if (property === 'close') return async () => {}
      const value: unknown = Reflect.get(target, property)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) =>
        isCut ? Promise.reject(new StorageUnavailableError('Storage is unavailable')) : (value as (...args: unknown[]) => unknown).apply(target, args)
    },
  })
  return {
    storage,
    cut: () => {
      isCut = true
    },
  }
}

let time = Date.parse('2025-06-01T12:00:00.000Z')
const clock = {
  now: () => new Date(time),
  advance: (ms: number) => {
    time += ms
  },
}

let shared = memoryStorage()
const gateways: Gateway[] = []
let key = ''

const startGateway = (name: string, options: Partial<GatewayOptions> = {}) => {
  const { runtime, state } = namedRuntime(name)
  const link = connection(shared)
  const gateway = createGateway({
    storage: link.storage,
    logger: silentLogger,
    encryptionKeys: [TEST_ENCRYPTION_KEY],
    internRuntime: runtime,
    now: clock.now,
    internProvisioning: { leaseTtlMs: LEASE_TTL_MS, heartbeatIntervalMs: HEARTBEAT_MS, sweepIntervalMs: SWEEP_MS },
    ...options,
  })
  gateways.push(gateway)
  return { gateway, call: callAs(gateway, key), state, cut: link.cut }
}

const readIntern = async (id: string) => (await shared.get<InternRecord>(INTERNS, id))!.data

/** Creates an intern through `through` and starts provisioning it there, held at its first step. */
const provisioningIn = async (through: ReturnType<typeof startGateway>) => {
  through.state.hold = gate()
  const intern = await readJson(await through.call('POST', '/interns', { name: 'ada' }))
  expect((await through.call('POST', `/interns/${intern.id}/provision`)).status).toBe(202)
  await vi.waitFor(async () => expect((await readIntern(intern.id)).status).toBe('provisioning'))
  return intern.id as string
}

beforeEach(async () => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
  shared = memoryStorage()
  const admin = createGateway({ storage: connection(shared).storage, logger: silentLogger, internProvisioning: { sweepIntervalMs: false } })
  key = (await admin.admin.createKey({ kind: 'management', name: 'member' })).key
  await admin.admin.setAccountFlags(undefined, { interns: true })
})

afterEach(async () => {
  await Promise.all(gateways.splice(0).map((gateway) => gateway.close()))
  await shared.close()
  vi.useRealTimers()
})

describe('provisioning leases', () => {
  it('a provision call takes over a run that stopped renewing its lease, and the stale run changes nothing when it wakes', async () => {
    const first = startGateway('first')
    const second = startGateway('second')
    const id = await provisioningIn(first)
    const lease = (await readIntern(id)).provisioningLease
    expect(lease).toEqual({ holder: expect.stringMatching(/^gateway-/), expiresAt: new Date(time + LEASE_TTL_MS).toISOString() })

    // While the lease is live, provisioning is idempotent: nothing starts in the second gateway.
    expect((await second.call('POST', `/interns/${id}/provision`)).status).toBe(202)
    expect(second.state.calls).toEqual([])

    // The first gateway's heartbeat never comes (a paused or dead process), and the lease runs out.
    clock.advance(LEASE_TTL_MS)
    const takeover = await second.call('POST', `/interns/${id}/provision`)
    expect(takeover.status).toBe(202)
    expect(await readJson(takeover)).toEqual({ provisioning: true })
    expect(second.state.calls).toEqual([id])
    await vi.waitFor(async () => expect((await readIntern(id)).status).toBe('running'))
    const running = await readIntern(id)
    expect(running).toMatchObject({ hostname: 'ada.second.test', progress: null, provisioningLease: null })

    // The stale run wakes: at its next step it finds itself replaced and stops, writing nothing.
    first.state.hold!.open()
    await first.state.settled
    expect(await readIntern(id)).toEqual(running)
  })

  it('a live run keeps its lease with its heartbeat, without touching updated_at', async () => {
    const first = startGateway('first')
    const second = startGateway('second', { internProvisioning: { leaseTtlMs: LEASE_TTL_MS, heartbeatIntervalMs: HEARTBEAT_MS, sweepIntervalMs: false } })
    const id = await provisioningIn(first)
    const before = await readIntern(id)

    clock.advance(20_000)
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS)
    await vi.waitFor(async () => expect((await readIntern(id)).provisioningLease?.expiresAt).toBe(new Date(time + LEASE_TTL_MS).toISOString()))
    expect((await readIntern(id)).updatedAt).toBe(before.updatedAt)

    // Past the first lease's expiry, but renewed: still the first gateway's run.
    clock.advance(20_000)
    expect((await second.call('POST', `/interns/${id}/provision`)).status).toBe(202)
    expect(second.state.calls).toEqual([])
    expect((await readIntern(id)).provisioningId).toBe(before.provisioningId)

    first.state.hold!.open()
    await vi.waitFor(async () => expect((await readIntern(id)).hostname).toBe('ada.first.test'))
  })

  it('the sweep of another gateway takes over an abandoned run without any request', async () => {
    const first = startGateway('first', { internProvisioning: { leaseTtlMs: LEASE_TTL_MS, heartbeatIntervalMs: HEARTBEAT_MS, sweepIntervalMs: false } })
    const second = startGateway('second')
    const id = await provisioningIn(first)
    // Before the lease expires the sweep leaves the run alone.
    await vi.advanceTimersByTimeAsync(SWEEP_MS)
    expect(second.state.calls).toEqual([])

    first.cut()
    clock.advance(LEASE_TTL_MS)
    await vi.advanceTimersByTimeAsync(SWEEP_MS)
    await vi.waitFor(async () => expect((await readIntern(id)).status).toBe('running'))
    expect(second.state.calls).toEqual([id])
    expect((await readIntern(id)).hostname).toBe('ada.second.test')
    first.state.hold!.open()
  })

  it('takes over a run an older version left queued without a lease', async () => {
    const one = startGateway('one')
    const intern = await readJson(await one.call('POST', '/interns', { name: 'ada' }))
    const stored = (await shared.get<InternRecord>(INTERNS, intern.id))!
    const { provisioningLease: _lease, ...legacy } = { ...stored.data, status: 'queued' as const, provisioningId: 'run-of-a-dead-process' }
    await shared.update(INTERNS, intern.id, stored.version, { id: intern.id, data: legacy, indexes: { ...stored.indexes, status: 'queued' }, uniques: stored.uniques, sortKey: stored.sortKey })

    expect((await one.call('POST', `/interns/${intern.id}/provision`)).status).toBe(202)
    await vi.waitFor(async () => expect((await readIntern(intern.id)).status).toBe('running'))
    expect(one.state.calls).toEqual([intern.id])
  })

  it('close() stops the sweeps', async () => {
    const timersBefore = vi.getTimerCount()
    const one = startGateway('one')
    // The provisioning sweep, the usage ledger's and the audit log's retention sweeps, the spend book's lease renewal
    // and release of expired holds, the beat of the settlement recovery, and the merge of measured endpoint performance.
    expect(vi.getTimerCount()).toBe(timersBefore + 7)
    await one.gateway.close()
    expect(vi.getTimerCount()).toBe(timersBefore)
  })

  it('refuses a heartbeat that is not shorter than the lease', () => {
    expect(() => createGateway({ internProvisioning: { leaseTtlMs: 1_000, heartbeatIntervalMs: 1_000 } })).toThrow(
      'heartbeatIntervalMs must be shorter than leaseTtlMs',
    )
  })
})
