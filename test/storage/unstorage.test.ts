import { createStorage, type Storage } from 'unstorage'
import { describe, expect, it } from 'vitest'
import { isGatewayError } from '../../src/core/errors'
import { unstorageStorage, type UnstorageStorageOptions } from '../../src/storage/unstorage'
import { describeStorageContract } from './contract'

describeStorageContract('unstorage (memory driver, one process)', () => unstorageStorage({ storage: createStorage() }))

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
    for (const call of [driver.get('widgets', 'w1'), driver.list('widgets'), driver.increment('hits', 1, 1_000)]) {
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
})
