import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGateway } from '../../src/gateway/gateway'
import { StorageConflictError } from '../../src/core/errors'
import { updateRecord } from '../../src/repositories/mutate'
import type { StorageDriver } from '../../src/storage/contract'
import { memoryStorage } from '../../src/storage/memory'
import { createReadCache, READ_CACHE_GENERATION_KEY } from '../../src/storage/read-cache'
import { openSqliteStorage } from '../../src/storage/sqlite'
import { describeStorageContract } from './contract'

// In one process the cache is invisible: every contract case passes through it unchanged.
describeStorageContract('memory behind the read cache', () => createReadCache(memoryStorage(), { collections: () => true }).storage)

/** A store that counts the reads that reach it, and can be made to fail its generation reads or to wait. */
const countingStore = (inner: StorageDriver = memoryStorage()) => {
  const reads = { count: 0, generations: 0 }
  let failGenerations = false
  let readGate: Promise<void> | undefined
  const store: StorageDriver = {
    ...inner,
    name: 'counting',
    get: async (collection, id) => {
      reads.count++
      const value = await inner.get(collection, id)
      if (readGate) await readGate
      return value as never
    },
    findByUnique: async (collection, key) => {
      reads.count++
      return inner.findByUnique(collection, key) as never
    },
    list: async (collection, query) => {
      reads.count++
      return inner.list(collection, query) as never
    },
    readTallies: async (keys) => {
      reads.generations++
      if (failGenerations) throw new Error('store down')
      return inner.readTallies(keys)
    },
    create: (collection, input) => inner.create(collection, input),
    createMany: (collection, inputs) => inner.createMany(collection, inputs),
    update: (collection, id, version, input) => inner.update(collection, id, version, input),
    delete: (collection, id, version) => inner.delete(collection, id, version),
    settle: (settlements) => inner.settle(settlements),
    close: () => inner.close(),
  }
  return {
    store,
    reads,
    failGenerations: (value: boolean) => {
      failGenerations = value
    },
    holdReads: () => {
      let open!: () => void
      readGate = new Promise((resolve) => (open = resolve))
      return () => {
        readGate = undefined
        open()
      }
    },
  }
}

/** Turns of the event loop as a test runs them: `end` is the end of the current one. */
const turns = () => {
  const pending: Array<() => void> = []
  return { afterTurn: (run: () => void) => void pending.push(run), end: () => pending.splice(0).forEach((run) => run()) }
}

const clock = () => {
  let time = 1_000
  return { now: () => time, advance: (ms: number) => (time += ms) }
}

describe('createReadCache', () => {
  it('serves a repeated read from memory, frozen, and reads the store again after a write of this process', async () => {
    const { store, reads } = countingStore()
    const { storage: cached } = createReadCache(store, { collections: ['keys'] })
    await store.create('keys', { id: 'k', data: { name: 'one' } })
    expect((await cached.get('keys', 'k'))?.data).toEqual({ name: 'one' })
    const again = await cached.get('keys', 'k')
    expect(reads.count).toBe(1)
    expect(Object.isFrozen(again) && Object.isFrozen(again?.data)).toBe(true)

    await cached.update('keys', 'k', 1, { id: 'k', data: { name: 'two' } })
    expect((await cached.get('keys', 'k'))?.data).toEqual({ name: 'two' })
    expect(reads.count).toBe(2)
  })

  it('keeps an absent record absent until this process creates it, and caches lists and unique lookups alike', async () => {
    const { store, reads } = countingStore()
    const { storage: cached } = createReadCache(store, { collections: ['keys'] })
    expect(await cached.get('keys', 'new')).toBeNull()
    expect(await cached.get('keys', 'new')).toBeNull()
    expect(await cached.findByUnique('keys', 'slug:new')).toBeNull()
    expect((await cached.list('keys', { where: { owner: 'a' } })).totalCount).toBe(0)
    expect((await cached.list('keys', { where: { owner: 'a' } })).totalCount).toBe(0)
    expect(reads.count).toBe(3)
    await cached.create('keys', { id: 'new', data: {}, uniques: ['slug:new'], indexes: { owner: 'a' } })
    expect(await cached.get('keys', 'new')).not.toBeNull()
    expect((await cached.findByUnique('keys', 'slug:new'))?.id).toBe('new')
    expect((await cached.list('keys', { where: { owner: 'a' } })).totalCount).toBe(1)
  })

  it('reads collections it does not keep from the store every time, and their writes drop nothing', async () => {
    const { store, reads } = countingStore()
    const { storage: cached } = createReadCache(store, { collections: ['keys'] })
    await cached.create('keys', { id: 'k', data: {} })
    await cached.get('keys', 'k')
    await cached.create('generations', { id: 'g', data: {} })
    await cached.get('generations', 'g')
    await cached.get('generations', 'g')
    await cached.get('keys', 'k')
    expect(reads.count).toBe(3)
  })

  it("sees another process's write in the first request that arrives after it returned", async () => {
    const shared = memoryStorage()
    const turn = turns()
    const here = countingStore(shared)
    const cache = createReadCache(here.store, { collections: ['keys'], afterTurn: turn.afterTurn })
    const elsewhere = createReadCache(shared, { collections: ['keys'] }).storage
    await shared.create('keys', { id: 'k', data: { disabled: false } })
    await cache.revalidate()
    expect((await cache.storage.get('keys', 'k'))?.data).toEqual({ disabled: false })
    turn.end()

    await elsewhere.update('keys', 'k', 1, { id: 'k', data: { disabled: true } })
    // Without a new reading (a read outside any request, within a second of the last one) the old answer stands.
    expect((await cache.storage.get('keys', 'k'))?.data).toEqual({ disabled: false })
    await cache.revalidate()
    expect((await cache.storage.get('keys', 'k'))?.data).toEqual({ disabled: true })
    expect(here.reads.count).toBe(2)
    turn.end()
    // Nothing changed since: the next request's reading keeps the cache.
    await cache.revalidate()
    await cache.storage.get('keys', 'k')
    expect(here.reads.count).toBe(2)
    expect(await shared.readTallies([READ_CACHE_GENERATION_KEY])).toEqual([1])
  })

  it('lets the requests of one turn of the event loop share one reading of the generation, and no later one', async () => {
    const turn = turns()
    const { store, reads } = countingStore()
    const cache = createReadCache(store, { collections: ['keys'], afterTurn: turn.afterTurn })
    await Promise.all([cache.revalidate(), cache.revalidate(), cache.revalidate()])
    expect(reads.generations).toBe(1)
    turn.end()
    await cache.revalidate()
    expect(reads.generations).toBe(2)
  })

  it('reads the generation again for a read outside any request once its last reading is a second old', async () => {
    const time = clock()
    const shared = memoryStorage()
    const here = countingStore(shared)
    const { storage: cached } = createReadCache(here.store, { collections: ['keys'], clock: time.now })
    const elsewhere = createReadCache(shared, { collections: ['keys'] }).storage
    await shared.create('keys', { id: 'k', data: { name: 'old' } })
    await cached.get('keys', 'k')
    await elsewhere.update('keys', 'k', 1, { id: 'k', data: { name: 'new' } })
    await new Promise((resolve) => setImmediate(resolve))
    time.advance(999)
    expect((await cached.get('keys', 'k'))?.data).toEqual({ name: 'old' })
    time.advance(1)
    expect((await cached.get('keys', 'k'))?.data).toEqual({ name: 'new' })
  })

  it('drops an entry maxAgeMs after it was read, whatever the generation says', async () => {
    const time = clock()
    const { store, reads } = countingStore()
    const { storage: cached } = createReadCache(store, { collections: ['keys'], backgroundRevalidateMs: 10_000, maxAgeMs: 2_000, clock: time.now })
    await cached.get('keys', 'k')
    time.advance(1_999)
    await cached.get('keys', 'k')
    time.advance(1)
    await cached.get('keys', 'k')
    expect(reads.count).toBe(2)
  })

  it('does not keep what a read that overlapped a write of this process read', async () => {
    const { store, holdReads } = countingStore()
    const { storage: cached } = createReadCache(store, { collections: ['keys'] })
    await cached.create('keys', { id: 'k', data: { name: 'old' } })
    await cached.get('keys', 'other') // the first reading of the generation
    const release = holdReads()
    const slowRead = cached.get('keys', 'k')
    await new Promise((resolve) => setTimeout(resolve, 5))
    await cached.update('keys', 'k', 1, { id: 'k', data: { name: 'new' } })
    release()
    expect((await slowRead)?.data).toEqual({ name: 'old' })
    expect((await cached.get('keys', 'k'))?.data).toEqual({ name: 'new' })
  })

  it('lets a read-modify-write that lost its race to another process read the record again and succeed', async () => {
    const shared = memoryStorage()
    const here = createReadCache(shared, { collections: ['keys'] }).storage
    const elsewhere = createReadCache(shared, { collections: ['keys'] }).storage
    await shared.create('keys', { id: 'k', data: { count: 0 } })
    await here.get('keys', 'k')
    await elsewhere.update('keys', 'k', 1, { id: 'k', data: { count: 1 } })
    // The stale version loses once; the conflict drops the cache, so the retry reads version 2.
    await expect(here.update('keys', 'k', 1, { id: 'k', data: { count: 9 } })).rejects.toBeInstanceOf(StorageConflictError)
    const updated = await updateRecord<{ count: number }>(here, 'keys', 'k', (current) => ({ id: 'k', data: { count: current.data.count + 1 } }))
    expect(updated?.data).toEqual({ count: 2 })
  })

  it('fails a request whose generation cannot be read, keeps nothing meanwhile, and caches again once it can', async () => {
    const turn = turns()
    const counting = countingStore()
    const cache = createReadCache(counting.store, { collections: ['keys'], afterTurn: turn.afterTurn })
    counting.failGenerations(true)
    await expect(cache.revalidate()).rejects.toThrow('store down')
    await cache.storage.get('keys', 'k')
    await cache.storage.get('keys', 'k')
    expect(counting.reads.count).toBe(2)
    turn.end()
    counting.failGenerations(false)
    await cache.revalidate()
    await cache.storage.get('keys', 'k')
    await cache.storage.get('keys', 'k')
    expect(counting.reads.count).toBe(3)
  })

  it('keeps at most maxEntries, the oldest going first', async () => {
    const { store, reads } = countingStore()
    const { storage: cached } = createReadCache(store, { collections: ['keys'], maxEntries: 2 })
    for (const id of ['a', 'b', 'c']) await cached.get('keys', id)
    await cached.get('keys', 'c')
    await cached.get('keys', 'b')
    expect(reads.count).toBe(3)
    await cached.get('keys', 'a')
    expect(reads.count).toBe(4)
  })
})

describe("the gateway's read cache on a shared SQLite file", () => {
  let directory: string
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'modelgate-read-cache-'))
  })
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true })
  })

  it('stops a revoked key in the next request, in the gateway that revoked it and in another one on the store', async () => {
    const path = join(directory, 'gateways.db')
    const here = createGateway({ storage: await openSqliteStorage({ path }), logger: false })
    const elsewhere = createGateway({ storage: await openSqliteStorage({ path }), logger: false })
    try {
      const { key, record } = await here.admin.createKey({ name: 'revoked soon' })
      const keyStatus = (gateway: typeof here) =>
        gateway.fetch(new Request('http://gateway.test/api/v1/key', { headers: { authorization: `Bearer ${key}` } })).then((response) => response.status)
      expect(await keyStatus(elsewhere)).toBe(200)
      expect(await keyStatus(elsewhere)).toBe(200)
      await here.admin.revokeKey(undefined, record.hash)
      expect(await keyStatus(here)).toBe(401)
      expect(await keyStatus(elsewhere)).toBe(401)
    } finally {
      await here.close()
      await elsewhere.close()
    }
  })

  it('reads the records from the store every time with readCache: false', async () => {
    const path = join(directory, 'uncached.db')
    const gateway = createGateway({ storage: await openSqliteStorage({ path }), logger: false, readCache: false })
    try {
      const { key } = await gateway.admin.createKey({ name: 'uncached' })
      const response = await gateway.fetch(new Request('http://gateway.test/api/v1/key', { headers: { authorization: `Bearer ${key}` } }))
      expect(response.status).toBe(200)
      expect(await gateway.storage.readTallies([READ_CACHE_GENERATION_KEY])).toEqual([0])
    } finally {
      await gateway.close()
    }
  })
})
