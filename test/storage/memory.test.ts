import { describe, expect, it } from 'vitest'
import { GENERATION_CONTENTS, GENERATIONS } from '../../src/repositories/generations'
import { DEFAULT_MAX_RECORDS, memoryStorage } from '../../src/storage/memory'
import { createRecordingLogger } from '../helpers/logger'
import { describeStorageContract } from './contract'
import { describeGenerationLedger } from './generations'
import { describeAuditLog } from './audit-log'
import { describeStoredResponses } from './stored-responses'
import { describePresets } from './presets'

describeStorageContract('memory', () => memoryStorage())

describeGenerationLedger('memory', () => memoryStorage())

describePresets('memory', () => memoryStorage())
describeAuditLog('memory', () => memoryStorage())
describeStoredResponses('memory', () => memoryStorage())

let fakeTime = 1_700_000_000_000
describeStorageContract('memory with a fake clock', () => memoryStorage({ now: () => fakeTime }), {
  now: () => fakeTime,
  advanceTime: (ms) => {
    fakeTime += ms
  },
})

describe('memoryStorage', () => {
  it('lists in order however far out of order records arrive, and after the front of a long list is deleted', async () => {
    const storage = memoryStorage()
    const key = (index: number) => String(index).padStart(5, '0')
    // Newest first: past a few thousand records each one lands far from the end, and the list is sorted when read.
    for (let index = 9_999; index >= 0; index -= 100) {
      const batch = Array.from({ length: 100 }, (_, offset) => index - offset)
      await storage.createMany('generations', batch.map((at) => ({ id: `g${key(at)}`, data: {}, sortKey: key(at), indexes: { day: at % 2 ? 'odd' : 'even' } })))
    }
    const first = await storage.list('generations', { limit: 3 })
    expect(first.items.map((item) => item.id)).toEqual(['g00000', 'g00001', 'g00002'])
    expect(first.totalCount).toBe(10_000)
    const odd = await storage.list('generations', { where: { day: 'odd' }, offset: 4_998 })
    expect(odd.items.map((item) => item.id)).toEqual(['g09997', 'g09999'])
    // The retention sweep's pattern: delete the oldest, then a late record arrives just behind the newest.
    for (const item of (await storage.list('generations', { limit: 500 })).items) await storage.delete('generations', item.id)
    await storage.create('generations', { id: 'g-late', data: {}, sortKey: key(9_998), indexes: { day: 'even' } })
    const rest = await storage.list('generations', { offset: 9_497 })
    expect(rest.items.map((item) => item.id)).toEqual(['g09997', 'g-late', 'g09998', 'g09999'])
    expect((await storage.list('generations', { where: { day: 'even' }, limit: 1 })).items[0]?.id).toBe('g00500')
    expect((await storage.list('generations', { where: { day: 'even' } })).totalCount).toBe(4_751)
    await storage.close()
  })

  it('is named memory', async () => {
    const storage = memoryStorage()
    expect(storage.name).toBe('memory')
    await storage.close()
  })

  it('keeps handed-over data without a copy, and freezes it all through before any read hands it out', async () => {
    const storage = memoryStorage()
    const data = { name: 'kept', tags: ['a'], nested: { count: 1 } }
    const copied = { name: 'copied', nested: { count: 2 } }
    await storage.createMany('widgets', [{ id: 'w1', data, isDataHandedOver: true }])
    await storage.create('widgets', { id: 'w2', data: copied })
    const [read, listed, other] = [await storage.get('widgets', 'w1'), (await storage.list('widgets')).items[0], await storage.get('widgets', 'w2')]
    expect(read?.data).toBe(data)
    expect(listed).toBe(read)
    expect(other?.data).not.toBe(copied)
    for (const value of [read, read!.data, data.tags, data.nested, read!.indexes, read!.uniques, other, other!.data]) expect(Object.isFrozen(value)).toBe(true)
    expect(() => {
      data.nested.count = 5
    }).toThrow(TypeError)
    await storage.close()
  })

  it('keeps at most maxRecords of a capped collection, dropping the oldest first, and warns once', async () => {
    const recording = createRecordingLogger()
    const storage = memoryStorage({ maxRecords: { generations: 5 }, logger: recording.logger })
    const record = (at: number) => ({ id: `g${at}`, data: { at }, sortKey: String(at).padStart(3, '0'), indexes: { day: at % 2 ? 'odd' : 'even' }, uniques: [`u${at}`] })
    await storage.createMany('generations', [4, 2, 3].map(record))
    await storage.create('generations', record(1))
    expect(recording.entries).toEqual([])
    // Past the cap the oldest (in list order: sortKey, then id) go, whatever order the newest arrive in.
    await storage.createMany('generations', [6, 5, 7].map(record))
    await storage.create('generations', record(0))
    const kept = await storage.list('generations')
    expect(kept.items.map((item) => item.id)).toEqual(['g3', 'g4', 'g5', 'g6', 'g7'])
    expect(kept.totalCount).toBe(5)
    expect((await storage.list('generations', { where: { day: 'even' } })).items.map((item) => item.id)).toEqual(['g4', 'g6'])
    expect(await storage.get('generations', 'g2')).toBeNull()
    // A dropped record's unique key is free again; other collections are not capped.
    expect(await storage.findByUnique('generations', 'u1')).toBeNull()
    await storage.createMany('widgets', Array.from({ length: 8 }, (_, index) => ({ id: `w${index}`, data: {} })))
    expect((await storage.list('widgets')).totalCount).toBe(8)
    expect(recording.entries).toEqual([
      {
        level: 'warn',
        message: expect.stringContaining('the memory store keeps at most 5 records in "generations" and drops the oldest'),
        fields: { collection: 'generations', maxRecords: 5 },
      },
    ])
    await storage.close()
  })

  it("caps the usage ledger's collections by default, and nothing else", async () => {
    expect(DEFAULT_MAX_RECORDS).toEqual({ [GENERATIONS]: 100_000, [GENERATION_CONTENTS]: 10_000 })
    const recording = createRecordingLogger()
    const storage = memoryStorage({ logger: recording.logger })
    for (let index = 0; index < 100_100; index += 1_000) {
      await storage.createMany(
        GENERATIONS,
        Array.from({ length: 1_000 }, (_, offset) => ({ id: `g${index + offset}`, data: {}, sortKey: String(index + offset).padStart(6, '0') })),
      )
    }
    const page = await storage.list(GENERATIONS, { limit: 1 })
    expect(page.totalCount).toBe(100_000)
    expect(page.items[0]?.id).toBe('g1000')
    expect(recording.entries.map((entry) => entry.fields)).toEqual([{ collection: GENERATIONS, maxRecords: 100_000 }])
    const unbounded = memoryStorage({ maxRecords: {} })
    await unbounded.createMany(GENERATION_CONTENTS, Array.from({ length: 10_001 }, (_, index) => ({ id: `c${index}`, data: {} })))
    expect((await unbounded.list(GENERATION_CONTENTS, { limit: 0 })).totalCount).toBe(10_001)
    await Promise.all([storage.close(), unbounded.close()])
  })

  it('rejects a cap that is not a positive integer per collection', () => {
    for (const maxRecords of [[], null, { generations: 0 }, { generations: 1.5 }, { generations: '5' }]) {
      expect(() => memoryStorage({ maxRecords: maxRecords as never }), JSON.stringify(maxRecords)).toThrow('memoryStorage: options.maxRecords')
    }
  })

  it('rejects a clock that is not a function', () => {
    expect(() => memoryStorage({ now: 5 as unknown as () => number })).toThrow(TypeError)
  })

  it('expires a counter exactly at expiresAt by its injected clock', async () => {
    let time = 1_000
    const storage = memoryStorage({ now: () => time })
    expect(await storage.increment('rate', 2, 100)).toEqual({ value: 2, expiresAt: 1_100 })
    time = 1_099
    expect(await storage.increment('rate', 1, 100)).toEqual({ value: 3, expiresAt: 1_100 })
    time = 1_100
    expect(await storage.increment('rate', 1, 100)).toEqual({ value: 1, expiresAt: 1_200 })
    await storage.close()
  })

  it('keeps many short-lived counters correct across its lazy sweeps', async () => {
    let time = 0
    const storage = memoryStorage({ now: () => time })
    for (let round = 0; round < 3; round++) {
      for (let index = 0; index < 1_500; index++) {
        expect((await storage.increment(`round-${round}-${index}`, 1, 10)).value).toBe(1)
      }
      expect((await storage.increment(`round-${round}-0`, 1, 10)).value).toBe(2)
      time += 10
    }
    expect((await storage.increment('round-0-0', 1, 10)).value).toBe(1)
    await storage.close()
  })
})
