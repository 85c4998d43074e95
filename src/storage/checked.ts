/**
 * The front door of every driver: `checkedDriver` checks each argument of a call by the contract's rules (validate.ts)
 * once, and only then hands the call to the driver, so no driver repeats the checks and every driver refuses the same
 * arguments with the same `TypeError`. A bad argument rejects the call, as the contract's methods reject, and reaches
 * no driver: nothing is written, opened or waited for. Every driver factory returns its driver behind it.
 *
 * One object whose methods check and forward (no Proxy, no copy of a record or a batch), so a call costs its checks
 * and one more function call.
 */
import type {
  CounterChange,
  CounterResult,
  JsonObject,
  ListQuery,
  ListResult,
  RecordInput,
  StorageDriver,
  StoredRecord,
  TallyHold,
  TallySettlement,
} from './contract'
import {
  assertCollection,
  assertCounterArguments,
  assertCounterChanges,
  assertId,
  assertIds,
  assertLeaseMs,
  assertListQuery,
  assertRecordInput,
  assertRecordInputs,
  assertReleaseLimit,
  assertTallyHold,
  assertTallyKeys,
  assertTallySettlements,
  assertUniqueKey,
  assertVersion,
} from './validate'

/** Drivers already behind the front door, so wrapping one again adds no second round of checks. */
const checkedDrivers = new WeakSet<StorageDriver>()

/** A failed check as the contract's methods report it: a rejected call, never a synchronous throw. */
const rejected = (error: unknown): Promise<never> => Promise.reject(error)

/**
 * `driver` behind the argument checks of the storage contract. `incrementMany` is there only when `driver` has it; a
 * driver that is behind the front door already comes back as it is.
 */
export const checkedDriver = (driver: StorageDriver): StorageDriver => {
  if (checkedDrivers.has(driver)) return driver
  const incrementMany = driver.incrementMany
  const checked: StorageDriver = {
    name: driver.name,

    create<T extends JsonObject>(collection: string, input: RecordInput<T>): Promise<StoredRecord<T>> {
      try {
        assertCollection(collection)
        assertRecordInput(input)
      } catch (error) {
        return rejected(error)
      }
      return driver.create(collection, input)
    },

    createMany<T extends JsonObject>(collection: string, inputs: RecordInput<T>[]): Promise<Array<StoredRecord<T> | null>> {
      try {
        assertCollection(collection)
        assertRecordInputs(inputs)
      } catch (error) {
        return rejected(error)
      }
      return driver.createMany(collection, inputs)
    },

    get<T extends JsonObject>(collection: string, id: string): Promise<StoredRecord<T> | null> {
      try {
        assertCollection(collection)
        assertId(id)
      } catch (error) {
        return rejected(error)
      }
      return driver.get<T>(collection, id)
    },

    findByUnique<T extends JsonObject>(collection: string, uniqueKey: string): Promise<StoredRecord<T> | null> {
      try {
        assertCollection(collection)
        assertUniqueKey(uniqueKey)
      } catch (error) {
        return rejected(error)
      }
      return driver.findByUnique<T>(collection, uniqueKey)
    },

    update<T extends JsonObject>(collection: string, id: string, expectedVersion: number, input: RecordInput<T>): Promise<StoredRecord<T> | null> {
      try {
        assertCollection(collection)
        assertId(id)
        assertVersion(expectedVersion)
        assertRecordInput(input)
        if (input.id !== id) throw new TypeError('modelgate storage: input.id must equal the id being updated')
      } catch (error) {
        return rejected(error)
      }
      return driver.update(collection, id, expectedVersion, input)
    },

    delete(collection: string, id: string, expectedVersion?: number): Promise<boolean> {
      try {
        assertCollection(collection)
        assertId(id)
        if (expectedVersion !== undefined) assertVersion(expectedVersion)
      } catch (error) {
        return rejected(error)
      }
      return driver.delete(collection, id, expectedVersion)
    },

    list<T extends JsonObject>(collection: string, query?: ListQuery): Promise<ListResult<T>> {
      try {
        assertCollection(collection)
        if (query !== undefined) assertListQuery(query)
      } catch (error) {
        return rejected(error)
      }
      return driver.list<T>(collection, query)
    },

    increment(key: string, amount: number, ttlMs: number): Promise<CounterResult> {
      try {
        assertCounterArguments(key, amount, ttlMs)
      } catch (error) {
        return rejected(error)
      }
      return driver.increment(key, amount, ttlMs)
    },

    ...(incrementMany && {
      incrementMany(changes: ReadonlyArray<CounterChange>): Promise<CounterResult[]> {
        try {
          assertCounterChanges(changes)
        } catch (error) {
          return rejected(error)
        }
        return incrementMany.call(driver, changes)
      },
    }),

    hold(hold: TallyHold): Promise<CounterResult[]> {
      try {
        assertTallyHold(hold)
      } catch (error) {
        return rejected(error)
      }
      return driver.hold(hold)
    },

    settle(settlements: ReadonlyArray<TallySettlement>): Promise<void> {
      try {
        assertTallySettlements(settlements)
      } catch (error) {
        return rejected(error)
      }
      return driver.settle(settlements)
    },

    renewHolds(ids: ReadonlyArray<string>, leaseMs: number): Promise<number> {
      try {
        assertIds(ids)
        assertLeaseMs(leaseMs)
      } catch (error) {
        return rejected(error)
      }
      return driver.renewHolds(ids, leaseMs)
    },

    releaseExpiredHolds(limit: number): Promise<number> {
      try {
        assertReleaseLimit(limit)
      } catch (error) {
        return rejected(error)
      }
      return driver.releaseExpiredHolds(limit)
    },

    readTallies(keys: ReadonlyArray<string>): Promise<number[]> {
      try {
        assertTallyKeys(keys)
      } catch (error) {
        return rejected(error)
      }
      return driver.readTallies(keys)
    },

    close: () => driver.close(),
  }
  checkedDrivers.add(checked)
  return checked
}
