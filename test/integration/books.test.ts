/**
 * Books that balance (docs/decisions.md): three gateway processes (the built runner) on one Redis, PostgreSQL or
 * MariaDB, a loopback upstream answering Chat Completions and Responses, JSON and streamed. Under concurrent load what
 * the counters hold equals what the usage ledger recorded and what the clients were told, to the nano-dollar; a small
 * limit raced from three processes is never passed; and a stream broken off after content is charged an estimate that
 * its record marks; server-tool loops raced from three processes each pass a small limit by one turn at most. (Run after
 * `npm run build`.)
 */

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { booksClient, COST_NANO, fixtureAnswer, inPool, LOOP_MODEL, LOOP_TURN_NANO, nanoOf, QUESTIONS, sum, writeBooksConfig, type Answer, type Question } from '../helpers/books'
import { breaksAfterDeltas } from '../helpers/interrupted-stream'
import { startRunners, type RunningProcess } from '../helpers/process'
import { PROCESS_STORES, requireServer, uniqueNamespace } from '../helpers/stores'
import { startUpstream, type Upstream } from '../helpers/upstream'

const OPERATOR_KEY = `operator-${uniqueNamespace('key')}`
/** Settlements land just after their answers; a poll waits this long at most. */
const SETTLED = { timeout: 15_000, interval: 50 }

describe.each(PROCESS_STORES)('books across three gateway processes on one $name', (store) => {
  const namespace = uniqueNamespace('books')
  const client = booksClient(OPERATOR_KEY)
  let upstream: Upstream
  let directory = ''
  let gateways: RunningProcess[] = []
  /** What every key of the account was charged so far, for `GET /credits`. */
  let accountNano = 0

  beforeAll(async () => {
    await requireServer(store.port)
    upstream = await startUpstream(fixtureAnswer)
    directory = await mkdtemp(join(tmpdir(), 'modelgate-books-'))
    const config = await writeBooksConfig(directory, upstream.url)
    gateways = await startRunners(3, { ...store.env(namespace), MODELGATE_CONFIG: config, MODELGATE_LOG_LEVEL: 'warn', MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY })
  })

  afterAll(async () => {
    await Promise.all(gateways.map((gateway) => gateway.stop('SIGTERM')))
    await upstream?.close()
    await store.drop(namespace)
    if (directory) await rm(directory, { recursive: true, force: true })
  })

  /** Every process's view of the key's usage, once it equals `expected` (bounded poll). */
  const expectUsage = async (hash: string, expected: number) => {
    for (const gateway of gateways) await expect.poll(() => client.usageNano(gateway, hash), SETTLED).toBe(expected)
  }

  /** The ledger's cost of each answer, read through the three processes in turn. */
  const recordedNano = (answers: readonly Answer[]) =>
    Promise.all(
      answers.map(async (answer, index) => {
        const record = await client.record(gateways[index % 3]!, answer.id!)
        expect(record, `no record of ${answer.id}`).toBeDefined()
        expect(record!.isUsageEstimated).toBe(false)
        return record!.costNano
      }),
    )

  it('balance to the nano-dollar under load: key usage = the ledger = what clients were told, with and without a limit', async () => {
    const free = await client.createKey(gateways[0]!, 'no limit')
    const limited = await client.createKey(gateways[1]!, 'large limit', 10)
    const keys = [free, limited]
    const perKey = 75
    const results = await inPool(perKey * 2, 30, async (index) => {
      const question = QUESTIONS[Math.floor(index / 2) % QUESTIONS.length]!
      return { key: index % 2, question, answer: await client.ask(gateways[index % 3]!, keys[index % 2]!.key, question) }
    })
    expect(results.map(({ answer }) => answer.status)).toEqual(results.map(() => 200))
    for (const { question, answer } of results) {
      expect(answer.error).toBeUndefined()
      expect(answer.costNano, answer.text.slice(-300)).toBe(COST_NANO[question.model])
    }
    for (const [position, { hash }] of keys.entries()) {
      const answers = results.filter(({ key }) => key === position).map(({ answer }) => answer)
      expect(answers).toHaveLength(perKey)
      expect(new Set(answers.map((answer) => answer.id)).size).toBe(perKey)
      const told = answers.map((answer) => answer.costNano!)
      const recorded = await recordedNano(answers)
      expect(recorded).toEqual(told)
      // The ledger holds these records and no other of the key.
      expect(await client.ledgerOfKey(gateways[position % 3]!, hash)).toEqual({ requests: perKey, costNano: sum(recorded) })
      await expectUsage(hash, sum(recorded))
      accountNano += sum(recorded)
    }
    for (const gateway of gateways) await expect.poll(() => client.creditsUsageNano(gateway), SETTLED).toBe(accountNano)
  })

  it('a small limit raced from three processes is never passed, and usage = served × cost exactly', async () => {
    // Room for 16 answers at 62,300 but only 4 worst cases (236,600 or more) at once.
    const limitNano = 1_000_000
    const { key, hash } = await client.createKey(gateways[2]!, 'small limit', limitNano / 1e9)
    const requestsBefore = upstream.requests.length
    const answers = await Promise.all(
      Array.from({ length: 45 }, (_, index) => {
        const question: Question = { api: index % 2 === 0 ? 'responses' : 'chat', model: 'test/resp', stream: index % 4 < 2 }
        return client.ask(gateways[index % 3]!, key, question)
      }),
    )
    const served = answers.filter((answer) => answer.status === 200)
    const refused = answers.filter((answer) => answer.status === 402)
    expect(served.length + refused.length).toBe(answers.length)
    expect(served.length).toBeGreaterThan(0)
    expect(refused.length).toBeGreaterThan(0)
    for (const answer of refused) expect(JSON.parse(answer.text).error.metadata).toMatchObject({ limit: 'key' })
    // A refused request never reached the upstream.
    expect(upstream.requests.length - requestsBefore).toBe(served.length)
    for (const answer of served) expect(answer.costNano).toBe(COST_NANO['test/resp'])
    const usage = served.length * COST_NANO['test/resp']
    expect(sum(await recordedNano(served))).toBe(usage)
    await expectUsage(hash, usage)
    // Each request was let in only while its worst case fitted beside every other hold and settled cost, and no answer
    // cost more than its worst case: so the limit itself holds, within the limit plus one reservation.
    expect(usage).toBeLessThanOrEqual(limitNano)
    accountNano += usage
    await expect.poll(() => client.creditsUsageNano(gateways[0]!), SETTLED).toBe(accountNano)
  })

  it('a stream broken off after content is charged an estimate its record marks, and the key usage equals it', async () => {
    const { key, hash } = await client.createKey(gateways[0]!, 'broken streams', 1)
    const questions: Question[] = [
      { api: 'chat', model: 'test/chat', stream: true },
      { api: 'responses', model: 'test/resp', stream: true },
    ]
    // Three text deltas, then the connection drops: no usage from the upstream.
    upstream.setHandler((request) => breaksAfterDeltas(request.url.endsWith('/chat/completions') ? 'openai-chat' : 'openai', 3))
    try {
      const answers = await Promise.all(questions.map((question, index) => client.ask(gateways[index + 1]!, key, question)))
      const costs: number[] = []
      for (const answer of answers) {
        expect(answer.status).toBe(200)
        // The client got content, then the failure and what the gateway charged for what it delivered.
        expect(answer.error).toMatch(/stream ended early, after part of the answer was sent/)
        expect(answer.costNano).toBeGreaterThan(0)
        // Written when the stream ended, off the answer's path.
        await expect.poll(() => client.record(gateways[0]!, answer.id!), SETTLED).toBeDefined()
        const record = (await client.record(gateways[0]!, answer.id!))!
        expect(record).toMatchObject({ status: 'failed', isUsageEstimated: true, costNano: answer.costNano })
        costs.push(record.costNano)
      }
      await expectUsage(hash, sum(costs))
      accountNano += sum(costs)
      await expect.poll(() => client.creditsUsageNano(gateways[1]!), SETTLED).toBe(accountNano)
    } finally {
      upstream.setHandler(fixtureAnswer)
    }
  })
  it('server-tool loops raced from three processes stop at a small limit, each passing it by no more than one turn', async () => {
    // Room for 11 turns; twelve loops that would each run 31 turns if only their first turn were held.
    const LOOPS = 12
    const limitNano = 1_500_000
    const { key, hash } = await client.createKey(gateways[0]!, 'looping', limitNano / 1e9)
    const turnsSent = () => upstream.requests.filter((request) => request.url.includes('/loop/')).length
    const before = turnsSent()
    const body = { model: LOOP_MODEL, input: 'What time is it?', max_output_tokens: 100, tools: [{ type: 'service:datetime' }] }
    const answers = await Promise.all(
      Array.from({ length: LOOPS }, async (_, index) => {
        const response = await client.call(gateways[index % 3]!, '/responses', key, body)
        return { status: response.status, body: (await response.json()) as { status?: string; error?: { message: string; metadata?: Record<string, unknown> }; usage?: { cost: number } } }
      }),
    )
    const looped = answers.filter((answer) => answer.status === 200)
    const refused = answers.filter((answer) => answer.status === 402)
    expect(looped.length + refused.length).toBe(LOOPS)
    expect(looped.length).toBeGreaterThan(0)
    // A loop ends failed with the limit's 402 once its next turn would pass it; a loop whose first turn would is refused.
    for (const { body: answer } of looped) {
      expect(answer.status).toBe('failed')
      expect(answer.error?.message).toMatch(/API key limit reached/)
    }
    for (const { body: answer } of refused) expect(answer.error?.metadata).toMatchObject({ limit: 'key' })
    const turns = turnsSent() - before
    const usage = turns * LOOP_TURN_NANO
    // Every turn that ran was charged, once, in what its client was told, in the ledger and on the key.
    expect(sum(looped.map(({ body: answer }) => nanoOf(answer.usage!.cost)))).toBe(usage)
    await expectUsage(hash, usage)
    expect(await client.ledgerOfKey(gateways[1]!, hash)).toEqual({ requests: looped.length, costNano: usage })
    // Each turn was let in only while its worst case fitted beside every other hold: each loop passes by one turn at most.
    expect(usage).toBeLessThanOrEqual(limitNano + LOOPS * LOOP_TURN_NANO)
    expect(turns).toBeLessThan(limitNano / LOOP_TURN_NANO + LOOPS + 1)
    accountNano += usage
    await expect.poll(() => client.creditsUsageNano(gateways[2]!), SETTLED).toBe(accountNano)
  })
})
