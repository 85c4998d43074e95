import { StorageUnavailableError } from '../core/errors'
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
import { createMemoryEngine, type MemoryEngine } from './memory-engine'
import { assertDistinctCounters } from './validate'

export interface MemoryStorageOptions {
  /** Clock for counter expiry in Unix milliseconds (default `Date.now`); tests pass a fake one to move time. */
  now?: () => number
}

/**
 * A driver that keeps all state in this process (lost on exit), for tests and single-process setups.
 *
 * @example
 * const gateway = createGateway({ storage: memoryStorage() })
 */
export const memoryStorage = (options: MemoryStorageOptions = {}): StorageDriver => {
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw new TypeError('memoryStorage: options.now must be a function')
  }
  const engine = createMemoryEngine(options.now ?? Date.now)
  let isClosed = false

  const openEngine = (): MemoryEngine => {
    if (isClosed) throw new StorageUnavailableError('Storage is closed')
    return engine
  }

  return {
    name: 'memory',

    async create<T extends JsonObject>(collection: string, input: RecordInput<T>): Promise<StoredRecord<T>> {
      const mutation = openEngine().planCreate(collection, input)
      engine.apply(mutation)
      return mutation.record as StoredRecord<T>
    },

    async createMany<T extends JsonObject>(collection: string, inputs: RecordInput<T>[]): Promise<Array<StoredRecord<T> | null>> {
      const mutations = openEngine().planCreateMany(collection, inputs)
      for (const mutation of mutations) if (mutation) engine.apply(mutation)
      return mutations.map((mutation) => (mutation ? (mutation.record as StoredRecord<T>) : null))
    },

    async get<T extends JsonObject>(collection: string, id: string): Promise<StoredRecord<T> | null> {
      return openEngine().get<T>(collection, id)
    },

    async findByUnique<T extends JsonObject>(collection: string, uniqueKey: string): Promise<StoredRecord<T> | null> {
      return openEngine().findByUnique<T>(collection, uniqueKey)
    },

    async update<T extends JsonObject>(
      collection: string,
      id: string,
      expectedVersion: number,
      input: RecordInput<T>,
    ): Promise<StoredRecord<T> | null> {
      const mutation = openEngine().planUpdate(collection, id, expectedVersion, input)
      if (!mutation) return null
      engine.apply(mutation)
      return mutation.record as StoredRecord<T>
    },

    async delete(collection: string, id: string, expectedVersion?: number): Promise<boolean> {
      const mutation = openEngine().planDelete(collection, id, expectedVersion)
      if (!mutation) return false
      engine.apply(mutation)
      return true
    },

    async list<T extends JsonObject>(collection: string, query?: ListQuery): Promise<ListResult<T>> {
      return openEngine().list<T>(collection, query)
    },

    async increment(key: string, amount: number, ttlMs: number): Promise<CounterResult> {
      const mutation = openEngine().planIncrement(key, amount, ttlMs)
      engine.apply(mutation)
      return { value: mutation.value, expiresAt: mutation.expiresAt }
    },

    // One call for a settlement's counters, as the file and SQL drivers take them.
    async incrementMany(changes: ReadonlyArray<CounterChange>): Promise<CounterResult[]> {
      assertDistinctCounters(changes)
      const current = openEngine()
      // Distinct counters: all are planned before any is applied, so an invalid change leaves every counter as it was.
      const mutations = changes.map((change) => current.planIncrement(change.key, change.amount, change.ttlMs))
      for (const mutation of mutations) current.apply(mutation)
      return mutations.map((mutation) => ({ value: mutation.value, expiresAt: mutation.expiresAt }))
    },

    async hold(hold: TallyHold): Promise<CounterResult[]> {
      const { mutations, results } = openEngine().planHold(hold)
      for (const mutation of mutations) engine.apply(mutation)
      return results
    },

    async settle(settlements: ReadonlyArray<TallySettlement>): Promise<void> {
      for (const mutation of openEngine().planSettle(settlements)) engine.apply(mutation)
    },

    async renewHolds(ids: ReadonlyArray<string>, leaseMs: number): Promise<number> {
      const mutations = openEngine().planRenew(ids, leaseMs)
      for (const mutation of mutations) engine.apply(mutation)
      return mutations.length
    },

    async releaseExpiredHolds(limit: number): Promise<number> {
      const { mutations, released } = openEngine().planReleaseExpired(limit)
      for (const mutation of mutations) engine.apply(mutation)
      return released
    },

    async readTallies(keys: ReadonlyArray<string>): Promise<number[]> {
      return openEngine().readTallies(keys)
    },

    async close(): Promise<void> {
      isClosed = true
    },
  }
}
