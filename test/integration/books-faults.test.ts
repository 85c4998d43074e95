/**
 * Books that balance through faults (docs/decisions.md): three gateway processes (the built runner) reach one Redis,
 * PostgreSQL or MariaDB through a loopback TCP proxy, with spend holds leased for 3 s. A process killed with SIGKILL
 * while its streams hold credit has those holds released by the others once their lease runs out, and its restart
 * does not bring them back; one killed under load leaves key usage equal to the ledger once the others took it for
 * dead and sent again what its records carry; a store that goes away, or whose answers are lost, in the middle of a load leaves key usage
 * equal to the usage ledger once it is back. (Run after `npm run build`.)
 */

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { booksClient, fixtureAnswer, inPool, QUESTIONS, sum, WORST_NANO, writeBooksConfig, type Answer } from '../helpers/books'
import { bodyReader, hangsAfterFirstDelta } from '../helpers/interrupted-stream'
import { startRunner, startRunners, type RunningProcess } from '../helpers/process'
import { NETWORKED_STORES, requireServer, uniqueNamespace } from '../helpers/stores'
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy'
import { startUpstream, type Upstream } from '../helpers/upstream'

const OPERATOR_KEY = `operator-${uniqueNamespace('key')}`
const LEASE_MS = 3_000
/** Settlements land just after their answers, or once the store is back; a poll waits this long at most. */
const SETTLED = { timeout: 20_000, interval: 100 }
/** Far above every driver timeout: a request that takes this long has hung. */
const HANG_MS = 30_000

describe.each(NETWORKED_STORES)('books through faults: three gateway processes on one $name', (store) => {
  const namespace = uniqueNamespace('faults')
  const client = booksClient(OPERATOR_KEY)
  let upstream: Upstream
  let proxy: TcpProxy
  let directory = ''
  let env: Record<string, string> = {}
  let gateways: RunningProcess[] = []

  beforeAll(async () => {
    await requireServer(store.port)
    upstream = await startUpstream(fixtureAnswer)
    proxy = await startTcpProxy({ targetPort: store.port })
    directory = await mkdtemp(join(tmpdir(), 'modelgate-books-faults-'))
    env = {
      ...store.env(namespace, proxy.port),
      MODELGATE_CONFIG: await writeBooksConfig(directory, upstream.url),
      MODELGATE_SPEND_LEASE_MS: String(LEASE_MS),
      MODELGATE_LOG_LEVEL: 'error',
      MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY,
    }
    gateways = await startRunners(3, env)
  })

  afterAll(async () => {
    await Promise.all(gateways.map((gateway) => gateway.stop('SIGKILL')))
    await upstream?.close()
    await proxy?.close()
    await store.drop(namespace)
    if (directory) await rm(directory, { recursive: true, force: true })
  })

  /** The ledger's costs of the generations `ids` (absent ones count 0), read through the second process. */
  const ledgerNano = async (ids: readonly string[]) => sum(await Promise.all(ids.map(async (id) => (await client.record(gateways[1]!, id))?.costNano ?? 0)))

  it('a process killed with SIGKILL mid-stream: its holds come back within the lease, and its restart does not bring them back', async () => {
    const { key, hash } = await client.createKey(gateways[1]!, 'held by the victim', 1)
    upstream.setHandler(() => hangsAfterFirstDelta('openai'))
    const victim = gateways[0]!
    const streams = 10
    const requestsBefore = upstream.requests.length
    const opened = await Promise.all(Array.from({ length: streams }, () => client.open(victim, key, { api: 'responses', model: 'test/resp', stream: true })))
    const readers = opened.map((response) => {
      expect(response.status).toBe(200)
      return bodyReader(response.body!)
    })
    // Each stream delivered its first delta: every request holds its worst case, and the upstream was asked once each.
    await Promise.all(readers.map((reader) => reader.until('response.output_text.delta')))
    const ids = opened.map((_, index) => /"id":"(resp_[0-9a-f]+)"/.exec(readers[index]!.seen())![1]!)
    expect(upstream.requests.length - requestsBefore).toBe(streams)
    expect(await client.usageNano(gateways[1]!, hash)).toBe(streams * WORST_NANO)

    expect(await victim.stop('SIGKILL')).toBeNull()
    await Promise.all(readers.map((reader) => reader.rest().catch(() => '')))
    // Nothing was settled: the victim died before its answers ended, so the ledger has no record of them either.
    expect(await ledgerNano(ids)).toBe(0)
    // The survivors release expired holds every half lease: the holds are gone a lease and a half after the last renewal.
    await expect.poll(() => client.usageNano(gateways[1]!, hash), { timeout: 3 * LEASE_MS, interval: 100 }).toBe(0)

    upstream.setHandler(fixtureAnswer)
    const restarted = await startRunner(env)
    gateways[0] = restarted
    // The restarted process starts with a sweep of its own and renews no hold of its predecessor's.
    const answer = await client.ask(restarted, key, { api: 'responses', model: 'test/resp', stream: false })
    expect(answer.status).toBe(200)
    for (const gateway of gateways) await expect.poll(() => client.usageNano(gateway, hash), SETTLED).toBe(answer.costNano)
    expect(await ledgerNano([...ids, answer.id!])).toBe(answer.costNano)
  })

  it('a process killed with SIGKILL under load: once the others take it for dead, key usage equals the ledger', async () => {
    const { key, hash } = await client.createKey(gateways[2]!, 'load on the victim', 10)
    const victim = gateways[0]!
    let answered = 0
    // Whole and streamed answers from the victim, until it dies under them; a request it took down with it fails.
    const load = inPool(90, 15, async (index) => {
      const question = QUESTIONS[index % QUESTIONS.length]!
      const answer = await client.ask(victim, key, question, AbortSignal.timeout(HANG_MS)).catch(() => undefined)
      answered++
      return answer
    })
    await vi.waitFor(() => expect(answered).toBeGreaterThanOrEqual(25), { timeout: HANG_MS, interval: 5 })
    expect(await victim.stop('SIGKILL')).toBeNull()
    const answers = (await load).filter((answer): answer is Answer => answer?.status === 200 && !answer.isCut)
    expect(answers.length).toBeGreaterThanOrEqual(25)
    // Every answer a client got whole is in the ledger; once the survivors took the victim for dead (three beats of a
    // third of a lease) and its holds' leases ran out, the counters hold exactly what the ledger does.
    expect(await ledgerNano(answers.map((answer) => answer.id!))).toBe(sum(answers.map((answer) => answer.costNano!)))
    const gap = async () => (await client.usageNano(gateways[1]!, hash)) - (await client.ledgerOfKey(gateways[2]!, hash)).costNano
    await expect.poll(gap, { timeout: 6 * LEASE_MS, interval: 100 }).toBe(0)
    gateways[0] = await startRunner(env)
    expect(await client.usageNano(gateways[0], hash)).toBe((await client.ledgerOfKey(gateways[0], hash)).costNano)
  })

  /**
   * Runs a load of `total` requests, `width` at a time, on a limited key and a free one, spread over the processes;
   * `fault` starts once a third of them were answered, and the store is restored once six requests failed during it.
   */
  const loadThrough = async (fault: () => void, total = 90, width = 15) => {
    const limited = await client.createKey(gateways[0]!, 'limited, through a fault', 10)
    const free = await client.createKey(gateways[1]!, 'free, through a fault')
    const keys = [limited, free]
    let answered = 0
    let failedDuringFault = 0
    let isFaulty = false
    const load = inPool(total, width, async (index) => {
      const question = QUESTIONS[Math.floor(index / 2) % QUESTIONS.length]!
      const answer = await client.ask(gateways[index % 3]!, keys[index % 2]!.key, question, AbortSignal.timeout(HANG_MS))
      answered++
      if (isFaulty && (answer.status !== 200 || answer.isCut)) failedDuringFault++
      return { key: index % 2, question, answer }
    })
    await vi.waitFor(() => expect(answered).toBeGreaterThanOrEqual(total / 3), { timeout: HANG_MS, interval: 20 })
    isFaulty = true
    fault()
    try {
      await vi.waitFor(() => expect(failedDuringFault).toBeGreaterThanOrEqual(6), { timeout: HANG_MS, interval: 20 })
    } finally {
      isFaulty = false
      await proxy.restore()
    }
    const results = await load
    // The drivers reconnect by themselves: each process is ready again before the books are read through it.
    for (const gateway of gateways) {
      await expect.poll(async () => (await client.call(gateway, '/health/ready', OPERATOR_KEY)).status, SETTLED).toBe(200)
    }
    // Refused for the outage (a stream whose record could not be written ends broken: docs/decisions.md, Usage
    // ledger), or answered whole: nothing else.
    for (const { question, answer } of results) {
      if (answer.status === 503) expect(JSON.parse(answer.text)).toEqual({ error: { code: 503, message: 'Storage is unavailable' } })
      else if (answer.isCut) expect(question.stream).toBe(true)
    }
    const unexpected = results.filter(({ answer }) => answer.status !== 503 && !answer.isCut && !(answer.costNano! > 0))
    expect(unexpected.map(({ question, answer }) => `${question.api} ${question.stream ? 'stream' : 'whole'} ${answer.status}: ${answer.text.slice(-400)}`)).toEqual([])
    for (const [position, { hash }] of keys.entries()) {
      const answers = results.filter(({ key }) => key === position).map(({ answer }) => answer)
      const whole = answers.filter((answer) => answer.status === 200 && !answer.isCut)
      // Every answer a client got whole was recorded at what it was told, whichever process wrote it and when.
      const told = whole.map((answer) => answer.costNano!)
      const recorded = await Promise.all(whole.map(async (answer, index) => (await client.record(gateways[index % 3]!, answer.id!))?.costNano))
      expect(recorded).toEqual(told)
      // A stream broken off because its record could not be written was paid for: its record lands once the store is back.
      for (const answer of answers.filter((answer) => answer.isCut && answer.id !== undefined)) {
        await expect.poll(async () => (await client.record(gateways[0]!, answer.id!))?.costNano, SETTLED).toBeGreaterThan(0)
      }
      // So does that of a whole answer its client was told 503 (the store failed under its record's write). Once
      // every settlement and every record has landed, once, and every hold is released, key usage is the ledger's sum.
      const gap = async () => (await client.usageNano(gateways[position]!, hash)) - (await client.ledgerOfKey(gateways[2]!, hash)).costNano
      await expect.poll(gap, SETTLED).toBe(0)
      const ledger = await client.ledgerOfKey(gateways[0]!, hash)
      expect(ledger.requests).toBeGreaterThanOrEqual(whole.length)
      expect(ledger.costNano).toBeGreaterThanOrEqual(sum(told))
      for (const gateway of gateways) expect(await client.usageNano(gateway, hash)).toBe(ledger.costNano)
    }
  }

  it('the store refusing connections mid-load: requests get 503, and once it is back key usage equals the ledger', async () => {
    await loadThrough(() => void proxy.cut())
  })

  it("the store's answers lost mid-load (writes landed, their clients timed out): once it is back key usage equals the ledger", async () => {
    await loadThrough(() => proxy.dropReplies())
  })
})
