/**
 * The usage ledger's storage cases, run on every driver (memory, file, Redis, PostgreSQL, MariaDB): records are
 * written once, listed by account and UTC day in time order across pages, swept oldest first in bounded pages,
 * and concurrent writes share one store call.
 */
import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/core/logger'
import { createLedger } from '../../src/ledger/ledger'
import { createGenerationsRepository, type GenerationRecord } from '../../src/repositories/generations'
import type { StorageDriver } from '../../src/storage/contract'

/** A record of `accountId` created at `createdAt`, with everything else plausible. */
export const generationRecord = (accountId: string, createdAt: string, overrides: Partial<GenerationRecord> = {}): GenerationRecord => ({
  id: `resp_${randomUUID().replaceAll('-', '')}`,
  createdAt,
  requestId: randomUUID(),
  accountId,
  workspaceId: `${accountId}-workspace`,
  keyHash: 'a'.repeat(64),
  userId: 'user-1',
  api: 'responses',
  requestedModel: 'test/model',
  model: 'test/model',
  provider: 'alpha',
  endpoint: 'test-model',
  isByok: false,
  isStreamed: false,
  status: 'completed',
  httpStatus: 200,
  errorType: null,
  finishReason: 'stop',
  nativeFinishReason: 'completed',
  tokens: { input: 10, output: 5, cached: 0, reasoning: 0 },
  isUsageEstimated: false,
  cost: 0.00002,
  upstreamCost: null,
  byokFee: 0,
  latencyMs: 120,
  timeToFirstTokenMs: null,
  generationTimeMs: 100,
  attempts: [{ provider: 'alpha', model: 'test/model', endpoint: 'test-model', isByok: false, status: 200, latencyMs: 100 }],
  endUser: null,
  session: null,
  trace: null,
  routing: { requested: 'test/model', strategy: 'direct', attempts: 1, endpointsPlanned: 1, region: 'default' },
  ...overrides,
})

const collect = async <T>(items: AsyncIterable<T>): Promise<T[]> => {
  const all: T[] = []
  for await (const item of items) all.push(item)
  return all
}

/** Counts the driver's createMany calls. */
const countingBatches = (driver: StorageDriver) => {
  const batches: number[] = []
  const counted: StorageDriver = {
    ...driver,
    name: driver.name,
    createMany: (collection, inputs) => {
      batches.push(inputs.length)
      return driver.createMany(collection, inputs)
    },
  }
  return { counted, batches }
}

export function describeGenerationLedger(name: string, makeDriver: () => Promise<StorageDriver> | StorageDriver): void {
  describe(`usage ledger on ${name}`, () => {
    let driver: StorageDriver
    let accountId: string

    beforeEach(async () => {
      driver = await makeDriver()
      accountId = `account-${randomUUID()}`
    })

    afterEach(async () => {
      await driver.close()
    })

    it('writes a record once: storing it again leaves the first', async () => {
      const repository = createGenerationsRepository(driver)
      const record = generationRecord(accountId, '2031-05-01T10:00:00.000Z')
      await repository.store([record])
      await repository.store([{ ...record, cost: 99 }, generationRecord(accountId, '2031-05-01T10:00:01.000Z')])
      expect(await repository.get(record.id)).toEqual(record)
      expect(await collect(repository.list(accountId))).toHaveLength(2)
      expect(await repository.get('resp_absent')).toBeNull()
    })

    it('lists an account by UTC day or whole, oldest first, across pages', async () => {
      const repository = createGenerationsRepository(driver)
      const late = Array.from({ length: 520 }, (_, index) => generationRecord(accountId, new Date(Date.UTC(2031, 4, 2, 0, 0, 0, index)).toISOString()))
      const early = generationRecord(accountId, '2031-05-01T23:59:59.999Z')
      const foreign = generationRecord(`other-${accountId}`, '2031-05-02T12:00:00.000Z')
      await repository.store([...late.slice(260), early, foreign])
      await repository.store(late.slice(0, 260))
      const day = await collect(repository.list(accountId, '2031-05-02'))
      expect(day.map((record) => record.id)).toEqual(late.map((record) => record.id))
      const all = await collect(repository.list(accountId))
      expect(all.map((record) => record.id)).toEqual([early.id, ...late.map((record) => record.id)])
      expect(await collect(repository.list(accountId, '2031-05-03'))).toEqual([])
    })

    it('deletes the oldest expired records in bounded pages and keeps the rest', async () => {
      const repository = createGenerationsRepository(driver)
      // Older than any other case's records, so only these can be past the cutoff.
      const expired = Array.from({ length: 5 }, (_, index) => generationRecord(accountId, `2001-01-01T00:00:0${index}.000Z`))
      const kept = generationRecord(accountId, '2040-01-03T00:00:00.000Z')
      await repository.store([kept, ...expired])
      expect(await repository.deleteOlderThan('2001-01-02T00:00:00.000Z', 3)).toEqual({ deleted: 3, hasMore: true })
      expect(await repository.deleteOlderThan('2001-01-02T00:00:00.000Z', 3)).toEqual({ deleted: 2, hasMore: false })
      expect(await repository.deleteOlderThan('2001-01-02T00:00:00.000Z', 3)).toEqual({ deleted: 0, hasMore: false })
      expect((await collect(repository.list(accountId))).map((record) => record.id)).toEqual([kept.id])
    })

    it('shares one store call among records written together, and sweeps by its retention', async () => {
      const { counted, batches } = countingBatches(driver)
      let now = new Date('2002-01-10T00:00:00.000Z')
      const ledger = createLedger(createGenerationsRepository(counted), { retentionDays: 3, sweepIntervalMs: false }, () => now, silentLogger)
      const records = Array.from({ length: 40 }, (_, index) => generationRecord(accountId, new Date(Date.UTC(2002, 0, 5 + (index % 4), 12)).toISOString()))
      await Promise.all(records.map((record) => ledger.write(record)))
      expect(batches).toEqual([40])
      const repository = createGenerationsRepository(driver)
      expect(await collect(repository.list(accountId))).toHaveLength(40)
      // Retained since 2002-01-07T00:00Z: the records of the 5th and 6th go.
      expect(ledger.retainedSince()).toBe('2002-01-07T00:00:00.000Z')
      expect(await ledger.sweep()).toBe(20)
      const left = await collect(repository.list(accountId))
      expect(left.every((record) => record.createdAt >= '2002-01-07')).toBe(true)
      expect(left).toHaveLength(20)
      now = new Date('2002-02-01T00:00:00.000Z')
      expect(await ledger.sweep()).toBe(20)
      await ledger.close()
    })

    it('keeps a generation\'s content under its id, and sweeps it with its record', async () => {
      let now = new Date('2002-01-10T00:00:00.000Z')
      const repository = createGenerationsRepository(driver)
      const ledger = createLedger(repository, { retentionDays: 3, sweepIntervalMs: false }, () => now, silentLogger)
      const [old, recent] = ['2002-01-05T12:00:00.000Z', '2002-01-09T12:00:00.000Z'].map((createdAt) => generationRecord(accountId, createdAt))
      for (const record of [old!, recent!]) {
        await ledger.write(record)
        await ledger.writeContent({ id: record.id, createdAt: record.createdAt, input: { messages: [{ role: 'user', content: 'Hi' }] }, output: { completion: 'Hello', reasoning: null }, error: null })
      }
      expect((await repository.getContent(old!.id))?.output.completion).toBe('Hello')
      expect(await ledger.sweep()).toBe(1)
      expect(await repository.getContent(old!.id)).toBeNull()
      expect(await repository.getContent(recent!.id)).not.toBeNull()
      now = new Date('2002-02-01T00:00:00.000Z')
      await ledger.sweep()
      expect(await repository.getContent(recent!.id)).toBeNull()
      await ledger.close()
    })
  })
}
