/**
 * Settlements that wait for their usage record, and are sent again from it (docs/decisions.md, "Books that balance"):
 * an answer's settlement reaches the store only after its record, which carries it; a process killed between the two
 * leaves a record whose settlement another process sends once it takes the first for dead; and a settlement too old
 * for the store to recognise as sent is logged for the operator instead of being sent twice.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { StorageUnavailableError } from '../../../src/core/errors'
import { createSpendBook } from '../../../src/engine/spend-book'
import { createSettlementRecovery } from '../../../src/ledger/settlement-recovery'
import { createGenerationsRepository, GENERATIONS, type GenerationRecord } from '../../../src/repositories/generations'
import { createSpendRepository, spendCounter } from '../../../src/repositories/spend-counters'
import { createSpendOwnersRepository, SPEND_OWNERS } from '../../../src/repositories/spend-owners'
import type { StorageDriver } from '../../../src/storage/contract'
import { memoryStorage } from '../../../src/storage/memory'
import { createTestGateway, readEvents, scriptedProvider, type TestGateway } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'
import { createRecordingLogger } from '../../helpers/logger'
import { generationRecord } from '../../storage/generations'

const REPLY = [{ type: 'text' as const, text: 'Hello.' }, { type: 'usage' as const, inputTokens: 10, outputTokens: 5 }]
/** $1 per million in, $2 per million out: 10 in and 5 out. */
const ANSWER_NANO = 20_000

const opened: TestGateway[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map((gateway) => gateway.close()))
})

/** Every call of `store`, in order: `settle:<ids>` and `createMany:<collection>:<ids>`. */
const recordingStore = (store: StorageDriver) => {
  const calls: string[] = []
  const driver: StorageDriver = {
    ...store,
    async createMany(collection, inputs) {
      const result = await store.createMany(collection, inputs)
      calls.push(`createMany:${collection}:${inputs.map((input) => input.id).join(',')}`)
      return result
    },
    async settle(settlements) {
      await store.settle(settlements)
      calls.push(`settle:${settlements.map((settlement) => settlement.id).join(',')}`)
    },
  }
  return { driver, calls }
}

const nanoOf = (usd: number) => Math.round(usd * 1e9)

describe('a settlement that charges an answer waits for its usage record', () => {
  it.each([
    ['whole', false],
    ['streamed', true],
  ])('reaches the store after the record of a %s answer, which carries it', async (_, stream) => {
    const store = memoryStorage()
    const { driver, calls } = recordingStore(store)
    const t = await createTestGateway({ storage: driver, providers: { scripted: scriptedProvider({ reply: REPLY }) } })
    opened.push(t)
    const created = await readJson(await t.call('POST', '/keys', { json: { name: 'limited', limit: 1 } }))
    const response = await t.call('POST', '/responses', { key: created.key, json: { input: 'Hi', max_output_tokens: 10, stream } })
    expect(response.status).toBe(200)
    const id = stream ? (await readEvents(response)).at(-1)!.response.id : (await readJson(response)).id
    await t.gateway.flushSpend()

    const record = (await store.get<GenerationRecord>(GENERATIONS, id))!.data
    expect(record.cost).toBe(ANSWER_NANO / 1e9)
    const { batch, settlements } = record.spend!
    expect(batch).toMatch(/^gw_[0-9a-f-]+\|\d+$/)
    expect(settlements).toHaveLength(1)
    const [settlement] = settlements
    // The key's total and daily counters (and the others) take the answer's cost, the account's total too.
    expect(settlement!.changes).toContainEqual([`spend:key:${created.data.hash}:usage:total`, ANSWER_NANO])
    expect(settlement!.changes.every(([, amount]) => amount === ANSWER_NANO)).toBe(true)
    const written = calls.findIndex((call) => call.startsWith(`createMany:${GENERATIONS}:`) && call.includes(id))
    const settled = calls.findIndex((call) => call.startsWith('settle:') && call.includes(settlement!.id))
    expect(written).toBeGreaterThanOrEqual(0)
    expect(settled).toBeGreaterThan(written)
    expect(nanoOf((await readJson(await t.call('GET', `/keys/${created.data.hash}`))).data.usage)).toBe(ANSWER_NANO)
  })

  it('leaves the record as it was when nothing was charged (a free answer)', async () => {
    const store = memoryStorage()
    const t = await createTestGateway({ storage: store, providers: { scripted: scriptedProvider({ reply: [{ type: 'text', text: 'Free.' }, { type: 'usage', inputTokens: 0, outputTokens: 0 }] }) } })
    opened.push(t)
    const body = await readJson(await t.responses({ input: 'Hi' }))
    expect((await store.get<GenerationRecord>(GENERATIONS, body.id))!.data.spend).toBeUndefined()
  })
})

/** A store that refuses every settlement (the process dies before any lands) and, once `kill()`ed, every call. */
const dyingStore = (store: StorageDriver) => {
  let isDead = false
  const refuse = () => Promise.reject(new StorageUnavailableError('Storage is unavailable'))
  const driver = Object.fromEntries(
    Object.entries(store).map(([name, value]) => [
      name,
      typeof value !== 'function' ? value : name === 'close' ? async () => {} : (...args: unknown[]) => (isDead || name === 'settle' ? refuse() : (value as (...a: unknown[]) => unknown).apply(store, args)),
    ]),
  ) as unknown as StorageDriver
  return { driver, kill: () => (isDead = true) }
}

describe('a process killed between its records and their settlements', () => {
  it('has them sent by another process once it stopped beating: key usage equals the ledger, the hold is gone', async () => {
    const store = memoryStorage()
    const victimStore = dyingStore(store)
    // Leases of a second: a process beats every 333 ms and is taken for dead a second after its last beat.
    const spend = { leaseMs: 1_000 }
    const victim = await createTestGateway({ storage: victimStore.driver, spend, providers: { scripted: scriptedProvider({ reply: REPLY }) } })
    const created = await readJson(await victim.call('POST', '/keys', { json: { name: 'limited', limit: 1 } }))
    const answers = await Promise.all(
      [false, true, false].map(async (stream) => {
        const response = await victim.call('POST', '/responses', { key: created.key, json: { input: 'Hi', max_output_tokens: 10, stream } })
        expect(response.status).toBe(200)
        return stream ? (await readEvents(response)).at(-1)!.response.id : (await readJson(response)).id
      }),
    )
    // Recorded, held, never settled: then the process is gone.
    for (const id of answers) expect((await store.get<GenerationRecord>(GENERATIONS, id))!.data.spend?.settlements).toHaveLength(1)
    victimStore.kill()

    const survivor = await createTestGateway({ storage: store, spend, providers: { scripted: scriptedProvider({ reply: REPLY }) } })
    opened.push(survivor)
    const usage = async () => nanoOf((await readJson(await survivor.call('GET', `/keys/${created.data.hash}`))).data.usage)
    await expect.poll(usage, { timeout: 10_000, interval: 100 }).toBe(3 * ANSWER_NANO)
    // The victim's record goes once what it left was sent (the survivor's stays): nothing is left to send again.
    await expect.poll(async () => (await store.list(SPEND_OWNERS)).items.length, { timeout: 10_000, interval: 100 }).toBe(1)
    expect(await usage()).toBe(3 * ANSWER_NANO)
  })
})

describe('sending settlements again', () => {
  const T0 = Date.parse('2026-03-14T12:00:00.000Z')
  const at = new Date(T0)
  const counter = spendCounter('key', 'recovered', 'usage', 'total', at)

  /** A dead process's record and one usage record of it carrying a settlement of 700 nano-dollars, and a live process's recovery at `now`. */
  const deadProcess = async (now: () => number) => {
    const store = memoryStorage()
    const owners = createSpendOwnersRepository(store)
    const generations = createGenerationsRepository(store)
    const logging = createRecordingLogger()
    const period = Math.floor(T0 / 10_000)
    await owners.beat({ owner: 'gw_dead', heartbeatAt: T0, settledThrough: period - 1 })
    await generations.store([
      { ...generationRecord('acct', at.toISOString(), { id: 'gen-1' }), spend: { batch: `gw_dead|${period}`, settlements: [{ id: 'sp_1', changes: [[counter.key, 700]] }] } },
    ])
    const book = createSpendBook({ repository: createSpendRepository(store), logger: logging.logger })
    const recovery = createSettlementRecovery({ generations, owners, book, logger: logging.logger, now, settlementMemoryMs: 60_000, beatMs: 1_000 })
    const read = async () => (await createSpendRepository(store).read([counter]))[0]
    const close = async () => {
      await book.close()
      await recovery.close()
    }
    return { store, owners, recovery, logging, read, close, book }
  }

  it('sends them once while the store remembers settled ids, and removes the dead process', async () => {
    const dead = await deadProcess(() => T0 + 20_000)
    try {
      await dead.recovery.recover()
      await dead.book.flush()
      expect(await dead.read()).toBe(700)
      expect((await dead.owners.list()).map(({ record }) => record.owner)).not.toContain('gw_dead')
      // Found again (another process recovering at the same time): the store applies the settlement once.
      await dead.owners.beat({ owner: 'gw_dead', heartbeatAt: T0, settledThrough: Math.floor(T0 / 10_000) - 1 })
      await dead.recovery.recover()
      await dead.book.flush()
      expect(await dead.read()).toBe(700)
    } finally {
      await dead.close()
    }
  })

  it('logs them for the operator instead when the store may have forgotten that they landed', async () => {
    const dead = await deadProcess(() => T0 + 120_000)
    try {
      expect(await dead.recovery.recover()).toBe(0)
      await dead.book.flush()
      expect(await dead.read()).toBe(0)
      const logged = dead.logging.entries.find((entry) => entry.message.startsWith('spend settlements of a stopped gateway process may not have landed'))
      expect(logged?.level).toBe('error')
      expect(JSON.stringify(logged?.fields)).toContain('gen-1')
      expect((await dead.owners.list()).map(({ record }) => record.owner)).not.toContain('gw_dead')
    } finally {
      await dead.close()
    }
  })

  it('leaves a process alone while it beats', async () => {
    const dead = await deadProcess(() => T0 + 2_000)
    try {
      await dead.recovery.recover()
      await dead.book.flush()
      expect(await dead.read()).toBe(0)
      expect((await dead.owners.list()).map(({ record }) => record.owner)).toContain('gw_dead')
    } finally {
      await dead.close()
    }
  })
})
