/**
 * A background response survives kill -9 of the process running it: three gateway processes share one store (Redis,
 * PostgreSQL, MariaDB, a SQLite file); the one that accepted the run is killed while the upstream is mid-answer, and
 * the two others' sweeps race to take the run over once its lease ran out: one wins, runs it again from the start and
 * completes it. The run is billed once, by the process that finished it, and a poll from either survivor reads one
 * answer. The processes run `fixtures/background-gateway.mjs` (the built package on short leases; run `npm run build`
 * first).
 */

import { resolve } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { booksClient } from '../helpers/books'
import { startListening, type RunningProcess } from '../helpers/process'
import { PROCESS_STORES, requireServer, uniqueNamespace } from '../helpers/stores'
import { sseFixture, startUpstream, type Upstream } from '../helpers/upstream'

const FIXTURE = resolve(__dirname, 'fixtures/background-gateway.mjs')
const KEY = `background-${uniqueNamespace('key')}`
const ENCRYPTION_KEY = 'ab'.repeat(32)
/** Short leases, so a dead holder's lease runs out within the test's wait. */
const LEASE = { LEASE_TTL_MS: '1500', SWEEP_MS: '300' }
const WAIT = { timeout: 30_000, interval: 100 }

describe.each(PROCESS_STORES)('a background run across two gateway processes on one $name', (store) => {
  const namespace = uniqueNamespace('background')
  const client = booksClient(KEY)
  const processes: RunningProcess[] = []
  let upstream: Upstream
  let releaseFirst: () => void = () => {}

  beforeAll(async () => {
    await requireServer(store.port)
    // The first call is held after its first chunks (the process running it dies meanwhile); a later one answers whole.
    const held = new Promise<void>((resolve) => (releaseFirst = resolve))
    let calls = 0
    upstream = await startUpstream(() => {
      const reply = sseFixture('openai-chat', 'text.sse')
      return ++calls === 1 ? { ...reply, pause: { after: 3, until: held } } : reply
    })
  })
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((running) => running.stop('SIGTERM')))
  })
  afterAll(async () => {
    releaseFirst()
    await upstream?.close()
    await store.drop(namespace)
  })

  const startGateway = async () => {
    const running = await startListening('node', [FIXTURE], {
      env: { ...store.env(namespace), ...LEASE, UPSTREAM_URL: upstream.url, MANAGEMENT_KEY: KEY, ENCRYPTION_KEY },
    })
    processes.push(running)
    return running
  }

  const poll = async (gateway: RunningProcess, key: string, id: string) => {
    const response = await fetch(`${gateway.url}/api/v1/responses/${id}`, { headers: { authorization: `Bearer ${key}` } })
    expect(response.status).toBe(200)
    return (await response.json()) as { id: string; status: string; output: Array<{ content?: Array<{ text?: string }> }> }
  }

  it('is taken over by one of the other processes after kill -9, run again from the start once and billed once', async () => {
    const [accepting, survivor, other] = await Promise.all([startGateway(), startGateway(), startGateway()])
    const { key, hash } = await client.createKey(survivor, 'background')
    const created = await fetch(`${accepting.url}/api/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/priced', input: 'Hi', background: true }),
    })
    expect(created.status).toBe(200)
    const queued = (await created.json()) as { id: string; status: string }
    expect(queued.status).toBe('queued')

    // Under way in the accepting process, its upstream call held mid-answer: then that process dies.
    await vi.waitFor(() => expect(upstream.requests).toHaveLength(1), WAIT)
    await vi.waitFor(async () => expect((await poll(survivor, key, queued.id)).status).toBe('in_progress'), WAIT)
    await accepting.stop('SIGKILL')

    await vi.waitFor(async () => expect((await poll(survivor, key, queued.id)).status).toBe('completed'), WAIT)
    const done = await poll(survivor, key, queued.id)
    expect(done.id).toBe(queued.id)
    expect(done.output.flatMap((item) => item.content ?? []).map((part) => part.text ?? '').join('')).not.toBe('')
    expect((await poll(other, key, queued.id)).status).toBe('completed')
    // The lost call and one re-run: two sweeps raced for the run and only one took it.
    expect(upstream.requests).toHaveLength(2)
    // One usage record, at one answer's cost: the lost run was never billed.
    await vi.waitFor(async () => expect((await client.ledgerOfKey(survivor, hash)).requests).toBe(1), WAIT)
    const ledger = await client.ledgerOfKey(survivor, hash)
    expect(ledger.costNano).toBeGreaterThan(0)
    expect(await client.usageNano(survivor, hash)).toBe(ledger.costNano)
  })
})
