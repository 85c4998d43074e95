/**
 * Tallies, leased holds and idempotent settlements (the contract's `hold`, `settle`, `renewHolds`,
 * `releaseExpiredHolds`, `readTallies`), over a given driver. Run by `describeStorageContract`, so every
 * driver runs it; each test uses its own tally keys and hold ids, so drivers on a shared server need no cleanup.
 */
import { describe, expect, it } from 'vitest'
import { isGatewayError } from '../../src/core/errors'
import type { CounterChange, StorageDriver, TallyHold } from '../../src/storage/contract'

export interface TallyOptions {
  /** The driver's clock in Unix milliseconds. */
  now: () => number
  /** Lets the driver's clock pass `instant` (a fake clock moved, or a bounded wait). */
  waitUntilPast: (instant: number) => Promise<void>
}

const LONG_LEASE_MS = 600_000
const TTL_MS = 86_400_000

const rejectionOf = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    const value = await promise
    throw new Error(`expected a rejection, got ${JSON.stringify(value)}`)
  } catch (error) {
    return error
  }
}

export function describeTallies(getDriver: () => StorageDriver, options: TallyOptions): void {
  describe('tallies: holds and settlements', () => {
    const suffix = () => Math.random().toString(36).slice(2, 10)
    /** Tally keys and hold ids of one test, in the shape the spend counters use. */
    const names = () => {
      const run = suffix()
      return {
        tally: (label: string) => `spend:test-${run}:${label}`,
        id: (label: string) => `hold-${run}-${label}`,
      }
    }
    const change = (key: string, amount: number, ttlMs = TTL_MS): CounterChange => ({ key, amount, ttlMs })
    const holdOf = (id: string, changes: CounterChange[], leaseMs = LONG_LEASE_MS): TallyHold => ({ id, owner: 'owner-a', leaseMs, changes })

    /** Waits until the store's clock passed the lease of a hold made at `madeAt` with `leaseMs`. */
    const leasePassed = (madeAt: number, leaseMs: number) => options.waitUntilPast(madeAt + leaseMs + 1)

    /** Releases expired holds until none is left (other tests' holds on a shared store may be among them). */
    const releaseAllExpired = async (driver: StorageDriver) => {
      let total = 0
      for (let round = 0; round < 100; round++) {
        const released = await driver.releaseExpiredHolds(100)
        total += released
        if (released < 100) return total
      }
      return total
    }

    it('holds: adds each change and answers each tally’s new value; reads give 0 for a tally never touched', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      expect(await driver.readTallies([tally('a'), tally('b')])).toEqual([0, 0])
      const first = await driver.hold(holdOf(id('1'), [change(tally('a'), 100), change(tally('b'), 7)]))
      expect(first.map((result) => result.value)).toEqual([100, 7])
      expect(first[0]!.expiresAt).toBeGreaterThan(options.now())
      const second = await driver.hold(holdOf(id('2'), [change(tally('a'), 50)]))
      expect(second.map((result) => result.value)).toEqual([150])
      expect(await driver.readTallies([tally('b'), tally('a'), tally('never')])).toEqual([7, 150, 0])
    })

    it('keeps tallies apart from the counters increment changes', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      await driver.increment(tally('shared'), 5, TTL_MS)
      expect(await driver.readTallies([tally('shared')])).toEqual([0])
      await driver.hold(holdOf(id('1'), [change(tally('shared'), 3)]))
      expect((await driver.increment(tally('shared'), 0, TTL_MS)).value).toBe(5)
      expect(await driver.readTallies([tally('shared')])).toEqual([3])
    })

    it('refuses a second hold with the same id, changing nothing', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      await driver.hold(holdOf(id('1'), [change(tally('a'), 10)]))
      const error = await rejectionOf(driver.hold(holdOf(id('1'), [change(tally('a'), 10)])))
      expect(isGatewayError(error)).toBe(true)
      expect(error).toMatchObject({ status: 409, kind: 'unique' })
      expect(await driver.readTallies([tally('a')])).toEqual([10])
    })

    it('settles: gives back what the hold added and adds the real cost, on every tally the settlement names', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      await driver.hold(holdOf(id('1'), [change(tally('limited'), 1_000)]))
      await driver.settle([{ id: id('1'), changes: [change(tally('limited'), 300), change(tally('other'), 300)] }])
      expect(await driver.readTallies([tally('limited'), tally('other')])).toEqual([300, 300])
      // Nothing held any more: renewing finds nothing, and an expiry sweep has nothing of this hold to give back.
      expect(await driver.renewHolds([id('1')], LONG_LEASE_MS)).toBe(0)
    })

    it('settles a hold on tallies the settlement names only in part: the rest is given back, new ones start at the cost', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      await driver.settle([{ id: id('before'), changes: [change(tally('a'), 50), change(tally('b'), 50)] }])
      await driver.hold(holdOf(id('1'), [change(tally('a'), 1_000), change(tally('b'), 2_000)]))
      expect(await driver.readTallies([tally('a'), tally('b')])).toEqual([1_050, 2_050])
      await driver.settle([{ id: id('1'), changes: [change(tally('b'), 300), change(tally('c'), 300)] }])
      expect(await driver.readTallies([tally('a'), tally('b'), tally('c')])).toEqual([50, 350, 300])
    })

    it('applies a settlement once per id, however often it is sent', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      await driver.hold(holdOf(id('1'), [change(tally('a'), 1_000)]))
      const settlement = { id: id('1'), changes: [change(tally('a'), 400)] }
      await driver.settle([settlement])
      await driver.settle([settlement])
      await Promise.all([driver.settle([settlement]), driver.settle([settlement]), driver.settle([{ id: id('2'), changes: [change(tally('a'), 1)] }, settlement])])
      expect(await driver.readTallies([tally('a')])).toEqual([401])
    })

    it('settles an id that never held (a request under no limit), and then refuses a hold with that id', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      await driver.settle([{ id: id('1'), changes: [change(tally('a'), 25)] }])
      expect(await driver.readTallies([tally('a')])).toEqual([25])
      // A hold that arrives after its own settlement (a retry, a statement run late) never lands.
      const error = await rejectionOf(driver.hold(holdOf(id('1'), [change(tally('a'), 1_000)])))
      expect(error).toMatchObject({ status: 409, kind: 'unique' })
      expect(await driver.readTallies([tally('a')])).toEqual([25])
    })

    it('releases a hold with a settlement of no changes', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      await driver.hold(holdOf(id('1'), [change(tally('a'), 500), change(tally('b'), 500)]))
      await driver.hold(holdOf(id('2'), [change(tally('a'), 200)]))
      await driver.settle([{ id: id('1'), changes: [] }])
      expect(await driver.readTallies([tally('a'), tally('b')])).toEqual([200, 0])
      await driver.settle([])
    })

    it('adds up settlements of one batch that touch the same tally, each with its own hold', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      await driver.hold(holdOf(id('1'), [change(tally('a'), 100)]))
      await driver.hold(holdOf(id('2'), [change(tally('a'), 100)]))
      await driver.settle([
        { id: id('1'), changes: [change(tally('a'), 30), change(tally('b'), 30)] },
        { id: id('2'), changes: [change(tally('a'), 40), change(tally('b'), 40)] },
        { id: id('3'), changes: [change(tally('a'), 5)] },
      ])
      expect(await driver.readTallies([tally('a'), tally('b')])).toEqual([75, 70])
    })

    it('releases a hold whose lease ran out, once, and its owner’s late settlement adds only the real cost', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      await driver.hold(holdOf(id('short'), [change(tally('a'), 1_000)], 20))
      // Taken after the store answered: it stamped the lease at some moment before.
      const madeAt = options.now()
      await driver.hold(holdOf(id('long'), [change(tally('a'), 10)]))
      await leasePassed(madeAt, 20)
      expect(await releaseAllExpired(driver)).toBeGreaterThanOrEqual(1)
      expect(await driver.readTallies([tally('a')])).toEqual([10])
      // Released once: another sweep finds nothing of it, and renewing it finds no hold.
      await releaseAllExpired(driver)
      expect(await driver.readTallies([tally('a')])).toEqual([10])
      expect(await driver.renewHolds([id('short'), id('long')], LONG_LEASE_MS)).toBe(1)
      await driver.settle([{ id: id('short'), changes: [change(tally('a'), 300)] }])
      expect(await driver.readTallies([tally('a')])).toEqual([310])
    })

    it('renews a lease from now: a hold renewed to a short lease runs out, one renewed to a long lease does not', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      await driver.hold(holdOf(id('1'), [change(tally('a'), 100)]))
      await driver.hold(holdOf(id('2'), [change(tally('a'), 20)]))
      expect(await driver.renewHolds([id('1'), id('missing')], 20)).toBe(1)
      const renewedAt = options.now()
      expect(await driver.renewHolds([id('2')], LONG_LEASE_MS)).toBe(1)
      await leasePassed(renewedAt, 20)
      await releaseAllExpired(driver)
      expect(await driver.readTallies([tally('a')])).toEqual([20])
      expect(await driver.renewHolds([], LONG_LEASE_MS)).toBe(0)
    })

    it('releases at most `limit` expired holds a call', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      // Earlier tests' expired holds on a shared store go first, so this test counts only its own.
      await releaseAllExpired(driver)
      for (const label of ['1', '2', '3']) await driver.hold(holdOf(id(label), [change(tally('a'), 100)], 20))
      const madeAt = options.now()
      await leasePassed(madeAt, 20)
      const first = await driver.releaseExpiredHolds(2)
      expect(first).toBe(2)
      const values = await driver.readTallies([tally('a')])
      // Other runs on a shared server may have had expired holds too: at least one of ours is still held.
      expect(values[0]).toBeGreaterThanOrEqual(100)
      await releaseAllExpired(driver)
      expect(await driver.readTallies([tally('a')])).toEqual([0])
    })

    it('takes nothing back from a tally that expired while held: a new period starts at 0', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      const madeAt = options.now()
      const [held] = await driver.hold(holdOf(id('1'), [change(tally('a'), 100, 20)]))
      await options.waitUntilPast(Math.max(held!.expiresAt, madeAt + 20))
      expect(await driver.readTallies([tally('a')])).toEqual([0])
      await driver.settle([{ id: id('1'), changes: [change(tally('a'), 40, TTL_MS)] }])
      expect(await driver.readTallies([tally('a')])).toEqual([40])
    })

    it('stays exact under concurrent holds and settlements of one tally, with every settlement sent twice', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      const requests = Array.from({ length: 40 }, (_, index) => index)
      const results = await Promise.all(requests.map((index) => driver.hold(holdOf(id(String(index)), [change(tally('limited'), 1_000)]))))
      // Every hold saw its own value: all distinct, the largest is all of them.
      expect(new Set(results.map(([result]) => result!.value)).size).toBe(requests.length)
      expect(Math.max(...results.map(([result]) => result!.value))).toBe(40_000)
      await Promise.all(
        requests.flatMap((index) => {
          const settlement = { id: id(String(index)), changes: [change(tally('limited'), index), change(tally('total'), index)] }
          return [driver.settle([settlement]), driver.settle([settlement])]
        }),
      )
      const sum = requests.reduce((total, index) => total + index, 0)
      expect(await driver.readTallies([tally('limited'), tally('total')])).toEqual([sum, sum])
    })

    it('refuses malformed arguments with a TypeError, changing nothing', async () => {
      const driver = getDriver()
      const { tally, id } = names()
      const typeError = async (promise: Promise<unknown>) => expect(await rejectionOf(promise)).toBeInstanceOf(TypeError)
      await typeError(driver.hold(holdOf('', [change(tally('a'), 1)])))
      await typeError(driver.hold(holdOf(id('1'), [])))
      await typeError(driver.hold({ ...holdOf(id('1'), [change(tally('a'), 1)]), owner: '' }))
      await typeError(driver.hold(holdOf(id('1'), [change(tally('a'), 1)], 0)))
      await typeError(driver.hold(holdOf(id('1'), [change(tally('a'), 1), change(tally('a'), 2)])))
      await typeError(driver.hold(holdOf(id('1'), [change(tally('a'), Number.NaN)])))
      await typeError(driver.settle([{ id: id('1'), changes: [] }, { id: id('1'), changes: [] }]))
      await typeError(driver.settle([{ id: id('1'), changes: [change(tally('a'), 1, 0)] }]))
      await typeError(driver.renewHolds([id('1')], -1))
      await typeError(driver.releaseExpiredHolds(0))
      await typeError(driver.readTallies(['']))
      expect(await driver.readTallies([tally('a')])).toEqual([0])
      // None of the refused calls held or settled anything under the id.
      await driver.hold(holdOf(id('1'), [change(tally('a'), 1)]))
      expect(await driver.readTallies([tally('a')])).toEqual([1])
    })
  })
}
