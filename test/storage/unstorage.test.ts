import { createStorage, type Storage } from 'unstorage'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { isGatewayError } from '../../src/core/errors'
import { SETTLEMENT_MEMORY_MS } from '../../src/storage/contract'
import { unstorageStorage, type UnstorageStorageOptions } from '../../src/storage/unstorage'
import { describeStorageContract } from './contract'

describeStorageContract('unstorage (memory driver, one process)', () => unstorageStorage({ storage: createStorage() }))

afterEach(() => {
  vi.restoreAllMocks()
})

describe('unstorageStorage', () => {
  it('rejects programmer errors with a TypeError and is named unstorage', async () => {
    const bad: unknown[] = [
      undefined,
      {},
      { storage: {} },
      { storage: createStorage(), prefix: 'a?b' },
      { storage: createStorage(), prefix: 'a/b' },
      { storage: createStorage(), prefix: 5 },
    ]
    for (const options of bad) expect(() => unstorageStorage(options as UnstorageStorageOptions)).toThrow(TypeError)
    const driver = unstorageStorage({ storage: createStorage() })
    expect(driver.name).toBe('unstorage')
    await driver.close()
  })

  it('keeps every key under its prefix, with each part encoded', async () => {
    const storage = createStorage()
    const driver = unstorageStorage({ storage, prefix: 'app:cache:' })
    await driver.create('odd/coll?', { id: '../x:y', data: {}, uniques: ['slug:a.b'] })
    await driver.increment('rate/limit', 1, 60_000)
    expect((await storage.getKeys()).sort()).toEqual([
      'app:cache:_counter:rate%2Flimit',
      'app:cache:odd%2Fcoll%3F:r:%2E%2E%2Fx%3Ay',
      'app:cache:odd%2Fcoll%3F:u:slug%3Aa%2Eb',
    ])
    expect((await driver.findByUnique('odd/coll?', 'slug:a.b'))?.id).toBe('../x:y')
    await driver.close()
  })

  it('ignores a unique key entry whose record does not claim it, as left by a write that failed halfway', async () => {
    const storage = createStorage()
    const driver = unstorageStorage({ storage })
    await storage.setItem('modelgate:widgets:u:slug%3Aa', { id: 'gone' })
    expect(await driver.findByUnique('widgets', 'slug:a')).toBeNull()
    expect((await driver.create('widgets', { id: 'w1', data: {}, uniques: ['slug:a'] })).version).toBe(1)
    expect((await driver.findByUnique('widgets', 'slug:a'))?.id).toBe('w1')
    await driver.close()
  })

  it('turns a failing backend into StorageUnavailableError and leaves the storage open on close', async () => {
    const failure = new Error('backend down')
    const storage: Storage = createStorage({
      driver: {
        name: 'failing',
        hasItem: () => Promise.reject(failure),
        getItem: () => Promise.reject(failure),
        getKeys: () => Promise.reject(failure),
      },
    })
    const driver = unstorageStorage({ storage })
    const tallyCalls = [
      driver.hold({ id: 'h1', owner: 'o', leaseMs: 1_000, changes: [{ key: 'spend:a', amount: 1, ttlMs: 1_000 }] }),
      driver.settle([{ id: 'h1', changes: [] }]),
      driver.renewHolds(['h1'], 1_000),
      driver.releaseExpiredHolds(10),
      driver.readTallies(['spend:a']),
    ]
    for (const call of [driver.get('widgets', 'w1'), driver.list('widgets'), driver.increment('hits', 1, 1_000), ...tallyCalls]) {
      const error = await call.then(
        () => undefined,
        (thrown: unknown) => thrown,
      )
      expect(isGatewayError(error)).toBe(true)
      expect(error).toMatchObject({ status: 503, message: 'Storage is unavailable', cause: failure })
    }
    await driver.close()
    await expect(driver.get('widgets', 'w1')).rejects.toMatchObject({ status: 503, message: 'Storage is closed' })
  })

  describe('tallies', () => {
    const DAY_MS = 86_400_000
    const change = (key: string, amount: number, ttlMs = DAY_MS) => ({ key, amount, ttlMs })

    it('keeps tallies, holds and settled ids under their own encoded keys, apart from counters', async () => {
      const storage = createStorage()
      const driver = unstorageStorage({ storage, prefix: 'app:' })
      await driver.increment('spend:k/1', 5, DAY_MS)
      await driver.hold({ id: 'req.1', owner: 'gateway-a', leaseMs: 60_000, changes: [change('spend:k/1', 100)] })
      await driver.settle([{ id: 'req_2', changes: [change('spend:k/1', 3)] }])
      expect((await storage.getKeys()).sort()).toEqual([
        'app:_counter:spend%3Ak%2F1',
        'app:_hold:req%2E1',
        'app:_settled:req%5F2',
        'app:_tally:spend%3Ak%2F1',
      ])
      expect(await storage.getItem('app:_hold:req%2E1')).toMatchObject({ id: 'req.1', owner: 'gateway-a', changes: [change('spend:k/1', 100)] })
      expect(await driver.readTallies(['spend:k/1'])).toEqual([103])
      expect((await driver.increment('spend:k/1', 0, DAY_MS)).value).toBe(5)
      await driver.close()
    })

    it('carries the spend counters an older version kept into tallies once, and leaves other counters alone', async () => {
      const storage = createStorage()
      const at = Date.now()
      await storage.setItem('modelgate:_counter:spend%3Akey%3Ak1%3Ausage%3Atotal', { value: 400, expiresAt: at + DAY_MS })
      await storage.setItem('modelgate:_counter:spend%3Akey%3Ak1%3Ausage%3Ad1970-01-01', { value: 30, expiresAt: at - 1 })
      await storage.setItem('modelgate:_counter:rate%3Ak1', { value: 3, expiresAt: at + 60_000 })
      const first = unstorageStorage({ storage })
      expect(await first.readTallies(['spend:key:k1:usage:total', 'spend:key:k1:usage:d1970-01-01', 'rate:k1'])).toEqual([400, 0, 0])
      expect(await storage.getItem('modelgate:_counter:spend%3Akey%3Ak1%3Ausage%3Atotal')).toBeNull()
      expect(await storage.getItem('modelgate:_counter:spend%3Akey%3Ak1%3Ausage%3Ad1970-01-01')).toBeNull()
      expect((await first.increment('rate:k1', 0, 60_000)).value).toBe(3)
      // The tally keeps the counter's expiry.
      const [held] = await first.hold({ id: 'h1', owner: 'o', leaseMs: 60_000, changes: [change('spend:key:k1:usage:total', 80)] })
      expect(held).toEqual({ value: 480, expiresAt: at + DAY_MS })
      await first.close()
      const second = unstorageStorage({ storage })
      expect(await second.readTallies(['spend:key:k1:usage:total'])).toEqual([480])
      await second.close()
    })

    it('sweeps expired tallies and settled ids from a backend that keeps keys forever', async () => {
      const storage = createStorage()
      const driver = unstorageStorage({ storage })
      let time = Date.now()
      vi.spyOn(Date, 'now').mockImplementation(() => time)
      await driver.settle([{ id: 'old', changes: [change('spend:short', 1, 1_000)] }])
      await driver.hold({ id: 'held', owner: 'o', leaseMs: 1_000, changes: [change('spend:long', 1)] })
      time += SETTLEMENT_MEMORY_MS
      const batch = Array.from({ length: 1_024 }, (_, index) => ({ id: `s${index}`, changes: [change('spend:long', 1)] }))
      await driver.settle(batch)
      const keys = await storage.getKeys()
      expect(keys).not.toContain('modelgate:_settled:old')
      expect(keys).not.toContain('modelgate:_tally:spend%3Ashort')
      expect(keys.filter((key) => key.startsWith('modelgate:_settled:'))).toHaveLength(1_024)
      // Holds are never swept, only released: the expired one still gives back what it added.
      expect(keys).toContain('modelgate:_hold:held')
      expect(await driver.readTallies(['spend:long'])).toEqual([1_025])
      expect(await driver.releaseExpiredHolds(10)).toBe(1)
      expect(await driver.readTallies(['spend:long'])).toEqual([1_024])
      await driver.close()
    })
  })
})
