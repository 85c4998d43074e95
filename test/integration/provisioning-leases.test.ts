/**
 * Provisioning survives kill -9: three gateway processes share one Redis, then one PostgreSQL; the
 * process running a provisioning is killed mid-run, and another takes the run over, through its
 * periodic sweep or through a provision call. A single process on the embedded store recovers its
 * own run after a restart. The processes run `fixtures/provisioning-gateway.mjs` (the built package
 * with a test runtime that hangs on demand and names the process in the hostname it assigns).
 */

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { startListening, type RunningProcess } from '../helpers/process'
import { PROCESS_STORES, requireServer, uniqueNamespace } from '../helpers/stores'

const FIXTURE = resolve(__dirname, 'fixtures/provisioning-gateway.mjs')
const KEY = `provisioning-${uniqueNamespace('key')}`
/** Short leases, so a dead holder's lease runs out within the test's wait. */
const LEASE = { LEASE_TTL_MS: '1500', HEARTBEAT_MS: '300' }
const WAIT = { timeout: 30_000, interval: 100 }

const processes: RunningProcess[] = []
afterEach(async () => {
  await Promise.all(processes.splice(0).map((running) => running.stop('SIGTERM')))
})

const startGateway = async (name: string, env: Record<string, string>) => {
  const running = await startListening('node', [FIXTURE], {
    env: { ...env, ...LEASE, PROCESS_NAME: name, MANAGEMENT_KEY: KEY },
  })
  processes.push(running)
  return running
}

const send = (gateway: RunningProcess, method: string, path: string, json?: unknown) =>
  fetch(`${gateway.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  })

const readIntern = async (gateway: RunningProcess, id: string) => {
  const response = await send(gateway, 'GET', `/interns/${id}`)
  expect(response.status).toBe(200)
  return (await response.json()) as { status: string; hostname: string | null }
}

/** Creates an intern that hangs while `holder` provisions it, starts provisioning there and waits until it is under way. */
const provisioningHeldBy = async (holder: RunningProcess, holderName: string, observer: RunningProcess, name: string) => {
  const created = await send(holder, 'POST', '/interns', { name, instructions: `hang in ${holderName}` })
  expect(created.status).toBe(201)
  const { id } = (await created.json()) as { id: string }
  expect((await send(holder, 'POST', `/interns/${id}/provision`)).status).toBe(202)
  await vi.waitFor(async () => expect((await readIntern(observer, id)).status).toBe('provisioning'), WAIT)
  return id
}

describe.each(PROCESS_STORES)('provisioning across three gateway processes on one $name', (store) => {
  const namespace = uniqueNamespace('leases')

  beforeAll(() => requireServer(store.port))
  afterAll(() => store.drop(namespace))

  it('kill -9 of the process provisioning an intern: another process takes over and it reaches running', async () => {
    const env = { ...store.env(namespace), SWEEP_MS: '200' }
    const [a, b, c] = await Promise.all([startGateway('a', env), startGateway('b', env), startGateway('c', env)])
    const id = await provisioningHeldBy(a!, 'a', b!, 'swept')

    await a!.stop('SIGKILL')
    await vi.waitFor(async () => expect((await readIntern(c!, id)).status).toBe('running'), WAIT)
    expect((await readIntern(b!, id)).hostname).toMatch(/^swept\.(b|c)\.test$/)
  })

  it('a provision call on an abandoned run does the work itself', async () => {
    // No sweeps: only the provision call can take the run over.
    const env = { ...store.env(namespace), SWEEP_MS: 'off' }
    const [a, b, c] = await Promise.all([startGateway('a', env), startGateway('b', env), startGateway('c', env)])
    const id = await provisioningHeldBy(a!, 'a', c!, 'posted')

    await a!.stop('SIGKILL')
    // Calls while the dead holder's lease lasts change nothing; the first one after it starts a run in b.
    await vi.waitFor(async () => {
      const current = await readIntern(c!, id)
      if (current.status === 'running') return expect(current.hostname).toBe('posted.b.test')
      expect((await send(b!, 'POST', `/interns/${id}/provision`)).status).toBe(202)
      throw new Error(`the intern is still ${current.status}`)
    }, WAIT)
  })
})

describe('provisioning on the embedded store', () => {
  let directory: string
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'modelgate-leases-'))
  })
  afterAll(() => rm(directory, { recursive: true, force: true }))

  it('a single process restarted after kill -9 takes its own abandoned run over', async () => {
    const env = { MODELGATE_STORAGE: 'file', MODELGATE_DATA_DIR: directory, SWEEP_MS: '200' }
    const first = await startGateway('first', env)
    const id = await provisioningHeldBy(first, 'first', first, 'restarted')

    await first.stop('SIGKILL')
    const restarted = await startGateway('restarted', env)
    await vi.waitFor(async () => expect(await readIntern(restarted, id)).toMatchObject({ status: 'running', hostname: 'restarted.restarted.test' }), WAIT)
  })
})
