/**
 * The storage front door (src/storage/checked.ts): every argument is checked once, before the driver runs, and every
 * driver factory hands out its driver behind it. What each check refuses is the contract suite's (test/storage/).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStorage } from 'unstorage'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { checkedDriver } from '../../../src/storage/checked'
import type { CounterChange, ListQuery, RecordInput, StorageDriver, TallyHold } from '../../../src/storage/contract'
import { fileStorage } from '../../../src/storage/file'
import { memoryStorage } from '../../../src/storage/memory'
import { createReadCache } from '../../../src/storage/read-cache'
import { redisStorage } from '../../../src/storage/redis'
import { sqlStorage } from '../../../src/storage/sql'
import { sqliteStorage } from '../../../src/storage/sqlite'
import { unstorageStorage } from '../../../src/storage/unstorage'

/** A driver that only writes down what reaches it and resolves with `result`. */
const recordingDriver = (options: { hasIncrementMany?: boolean } = {}) => {
  const calls: Array<[string, unknown[], unknown]> = []
  const result = Promise.resolve('result')
  const method =
    (name: string) =>
    function (this: unknown, ...args: unknown[]) {
      calls.push([name, args, this])
      return result
    }
  const names = ['create', 'createMany', 'get', 'findByUnique', 'update', 'delete', 'list', 'increment', 'hold', 'settle', 'renewHolds', 'releaseExpiredHolds', 'readTallies', 'close']
  if (options.hasIncrementMany !== false) names.push('incrementMany')
  const driver = { name: 'recording', ...Object.fromEntries(names.map((name) => [name, method(name)])) } as unknown as StorageDriver
  return { driver, calls, result }
}

const input: RecordInput = { id: 'w1', data: { name: 'one' }, indexes: { day: 'd1' }, uniques: ['slug:one'], sortKey: 'a' }
const change: CounterChange = { key: 'k', amount: 1, ttlMs: 1_000 }
const hold: TallyHold = { id: 'h1', owner: 'o', leaseMs: 1_000, changes: [change] }

describe('checkedDriver', () => {
  it('hands every well-formed call to the driver as it came, the same objects and the same promise', async () => {
    const { driver, calls, result } = recordingDriver()
    const checked = checkedDriver(driver)
    const inputs = [input]
    const query: ListQuery = { where: { day: 'd1' }, offset: 0, limit: 5 }
    const changes = [change]
    const settlements = [{ id: 's1', changes }]
    const ids = ['h1']
    const keys = ['k']
    const forwarded = [
      checked.create('widgets', input),
      checked.createMany('widgets', inputs),
      checked.get('widgets', 'w1'),
      checked.findByUnique('widgets', 'slug:one'),
      checked.update('widgets', 'w1', 1, input),
      checked.delete('widgets', 'w1'),
      checked.delete('widgets', 'w1', 2),
      checked.list('widgets'),
      checked.list('widgets', query),
      checked.increment('k', -0.5, 1_000),
      checked.incrementMany!(changes),
      checked.hold(hold),
      checked.settle(settlements),
      checked.renewHolds(ids, 1_000),
      checked.releaseExpiredHolds(10),
      checked.readTallies(keys),
      checked.close(),
    ]
    for (const promise of forwarded) expect(promise).toBe(result)
    await Promise.all(forwarded)
    expect(checked.name).toBe('recording')
    expect(calls).toEqual([
      ['create', ['widgets', input], driver],
      ['createMany', ['widgets', inputs], driver],
      ['get', ['widgets', 'w1'], driver],
      ['findByUnique', ['widgets', 'slug:one'], driver],
      ['update', ['widgets', 'w1', 1, input], driver],
      ['delete', ['widgets', 'w1', undefined], driver],
      ['delete', ['widgets', 'w1', 2], driver],
      ['list', ['widgets', undefined], driver],
      ['list', ['widgets', query], driver],
      ['increment', ['k', -0.5, 1_000], driver],
      ['incrementMany', [changes], driver],
      ['hold', [hold], driver],
      ['settle', [settlements], driver],
      ['renewHolds', [ids, 1_000], driver],
      ['releaseExpiredHolds', [10], driver],
      ['readTallies', [keys], driver],
      ['close', [], driver],
    ])
    // Nothing was copied on the way.
    expect(calls[0]![1][1]).toBe(input)
    expect(calls[1]![1][1]).toBe(inputs)
    expect(calls[10]![1][0]).toBe(changes)
  })

  it('rejects a bad argument with the contract TypeError before the driver sees the call, and never throws', async () => {
    const { driver, calls } = recordingDriver()
    const checked = checkedDriver(driver)
    const refused: Array<[() => Promise<unknown>, string]> = [
      [() => checked.create('', input), 'collection must be a non-empty string'],
      [() => checked.create('widgets', { ...input, data: [] as unknown as RecordInput['data'] }), 'input.data must be a JSON object'],
      [() => checked.createMany('widgets', [input, { ...input, id: '' }]), 'id must be a non-empty string'],
      [() => checked.createMany('widgets', input as unknown as RecordInput[]), 'inputs must be an array'],
      [() => checked.get('widgets', ''), 'id must be a non-empty string'],
      [() => checked.findByUnique('widgets', ''), 'uniqueKey must be a non-empty string'],
      [() => checked.update('widgets', 'w1', 0, input), 'expectedVersion must be an integer >= 1'],
      [() => checked.update('widgets', 'w2', 1, input), 'input.id must equal the id being updated'],
      [() => checked.update('widgets', 'w1', 1, { ...input, uniques: ['a', 'a'] }), 'input.uniques must not repeat a key'],
      [() => checked.delete('widgets', 'w1', 1.5), 'expectedVersion must be an integer >= 1'],
      [() => checked.list('widgets', { offset: -1 }), 'query.offset must be a non-negative integer'],
      [() => checked.list('widgets', null as unknown as ListQuery), 'query must be an object'],
      [() => checked.increment('k', 1, 0), 'ttlMs must be a positive integer'],
      [() => checked.incrementMany!([change, change]), 'incrementMany changes must name distinct counters'],
      [() => checked.incrementMany!([{ ...change, amount: Number.NaN }]), 'amount must be a finite number'],
      [() => checked.incrementMany!([null as unknown as CounterChange]), 'changes must hold objects'],
      [() => checked.hold({ ...hold, changes: [] }), 'hold.changes must hold at least one change'],
      [() => checked.settle([{ id: 's1', changes: [] }, { id: 's1', changes: [] }]), 'settlements must have distinct ids'],
      [() => checked.renewHolds(['h1'], 0), 'leaseMs must be a positive integer'],
      [() => checked.releaseExpiredHolds(0), 'limit must be a positive integer'],
      [() => checked.readTallies(['']), 'tally key must be a non-empty string'],
    ]
    for (const [call, message] of refused) {
      let promise: Promise<unknown> | undefined
      expect(() => (promise = call())).not.toThrow()
      await expect(promise).rejects.toThrow(new TypeError(`modelgate storage: ${message}`))
    }
    expect(calls).toEqual([])
  })

  it('offers incrementMany only when the driver does', () => {
    expect(checkedDriver(recordingDriver().driver).incrementMany).toBeTypeOf('function')
    const without = checkedDriver(recordingDriver({ hasIncrementMany: false }).driver)
    expect(without.incrementMany).toBeUndefined()
    expect('incrementMany' in without).toBe(false)
  })

  it('adds no second round of checks to a driver that is behind it already', () => {
    const checked = checkedDriver(recordingDriver().driver)
    expect(checkedDriver(checked)).toBe(checked)
  })

  it('sits behind a read cache, which checks nothing itself: a bad argument is refused once, by the driver it wraps', async () => {
    const { driver, calls } = recordingDriver()
    const checked = checkedDriver(driver)
    const spy = vi.spyOn(checked, 'get')
    const { storage } = createReadCache(checked, { collections: ['widgets'], afterTurn: (run) => run() })
    await expect(storage.get('widgets', '')).rejects.toThrow(TypeError)
    await expect(storage.get('gadgets', '')).rejects.toThrow(TypeError)
    expect(spy).toHaveBeenCalledTimes(2)
    expect(calls.map(([name]) => name)).toEqual(['readTallies'])
  })
})

describe('the driver factories', () => {
  const opened: StorageDriver[] = []
  const directories: string[] = []
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((driver) => driver.close()))
    await Promise.all(directories.splice(0).map((directory) => rm(directory, { recursive: true, force: true })))
  })

  const temporaryDirectory = async () => {
    const directory = await mkdtemp(join(tmpdir(), 'modelgate-checked-'))
    directories.push(directory)
    return directory
  }

  /** Enough of an ioredis client for the driver to accept it; no call reaches it here. */
  const fakeRedisClient = () => ({
    status: 'ready',
    ...Object.fromEntries(['evalsha', 'eval', 'hmget', 'get', 'set', 'del', 'scan', 'quit', 'disconnect', 'on'].map((name) => [name, vi.fn()])),
  })

  it('each hand out their driver behind the front door', async () => {
    const drivers = [
      memoryStorage(),
      fileStorage({ directory: await temporaryDirectory() }),
      sqliteStorage({ path: join(await temporaryDirectory(), 'modelgate.db') }),
      sqlStorage({ url: 'postgres://nobody@127.0.0.1:1/none' }),
      sqlStorage({ url: 'mysql://nobody@127.0.0.1:1/none' }),
      redisStorage({ client: fakeRedisClient() as unknown as NonNullable<Parameters<typeof redisStorage>[0]['client']> }),
      unstorageStorage({ storage: createStorage() }),
    ]
    opened.push(...drivers)
    for (const driver of drivers) {
      expect(checkedDriver(driver), driver.name).toBe(driver)
      await expect(driver.get('', 'w1'), driver.name).rejects.toThrow(new TypeError('modelgate storage: collection must be a non-empty string'))
    }
  })
})
