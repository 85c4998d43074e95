import { StorageUnavailableError } from '../core/errors'
import { createConsoleLogger, type Logger } from '../core/logger'
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
import { checkedDriver } from './checked'
import { createMemoryEngine, type MemoryEngine } from './memory-engine'

export interface MemoryStorageOptions {
  /** Clock for counter expiry in Unix milliseconds (default `Date.now`); tests pass a fake one to move time. */
  now?: () => number
  /**
   * The most records kept per collection: past it, each new record drops the oldest in list order (sortKey, then id).
   * Default `DEFAULT_MAX_RECORDS`, which bounds the usage ledger; `{}` keeps everything.
   */
  maxRecords?: Record<string, number>
  /** Where the warning goes when a collection first reaches its cap (default: JSON lines on stderr). */
  logger?: Logger
}

/**
 * The usage ledger's collections (src/repositories/generations.ts): a record per request, kept for the ledger's
 * retention, so a long-running process on this store would otherwise keep about 1 KB of heap per request until the
 * heap ran out. 100 000 usage records are about 100 MB; a generation's content (kept only for workspaces that log
 * it) is often several times larger, so fewer of those.
 */
export const DEFAULT_MAX_RECORDS: Readonly<Record<string, number>> = { generations: 100_000, generation_contents: 10_000 }

const assertMaxRecords = (maxRecords: unknown): void => {
  const isValid =
    typeof maxRecords === 'object' &&
    maxRecords !== null &&
    !Array.isArray(maxRecords) &&
    Object.values(maxRecords).every((cap) => Number.isSafeInteger(cap) && (cap as number) >= 1)
  if (!isValid) throw new TypeError('memoryStorage: options.maxRecords must map collection names to positive integers')
}

/**
 * A driver that keeps all state in this process (lost on exit), for tests and single-process setups. The usage
 * ledger's records are capped (`maxRecords`), the oldest dropped first.
 *
 * @example
 * const gateway = createGateway({ storage: memoryStorage() })
 */
export const memoryStorage = (options: MemoryStorageOptions = {}): StorageDriver => {
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw new TypeError('memoryStorage: options.now must be a function')
  }
  const maxRecords = options.maxRecords === undefined ? DEFAULT_MAX_RECORDS : options.maxRecords
  assertMaxRecords(maxRecords)
  const engine = createMemoryEngine(options.now ?? Date.now)
  let isClosed = false
  /** Collections whose cap was reached already: each warns once. */
  const capped = new Set<string>()

  const openEngine = (): MemoryEngine => {
    if (isClosed) throw new StorageUnavailableError('Storage is closed')
    return engine
  }

  /** Drops the oldest records of `collection` beyond its cap. */
  const keepWithinCap = (collection: string): void => {
    const cap = Object.hasOwn(maxRecords, collection) ? maxRecords[collection]! : undefined
    if (cap === undefined) return
    const excess = engine.count(collection) - cap
    if (excess <= 0) return
    if (!capped.has(collection)) {
      capped.add(collection)
      ;(options.logger ?? createConsoleLogger('warn')).warn(
        `the memory store keeps at most ${cap} records in "${collection}" and drops the oldest from now on; ` +
          'for a store that keeps them all, use SQLite, Redis or SQL',
        { collection, maxRecords: cap },
      )
    }
    for (const id of engine.firstIds(collection, excess)) engine.apply({ op: 'delete', collection, id })
  }

  return checkedDriver({
    name: 'memory',

    async create<T extends JsonObject>(collection: string, input: RecordInput<T>): Promise<StoredRecord<T>> {
      const mutation = openEngine().planCreate(collection, input)
      engine.apply(mutation)
      keepWithinCap(collection)
      return mutation.record as StoredRecord<T>
    },

    async createMany<T extends JsonObject>(collection: string, inputs: RecordInput<T>[]): Promise<Array<StoredRecord<T> | null>> {
      const mutations = openEngine().planCreateMany(collection, inputs)
      for (const mutation of mutations) if (mutation) engine.apply(mutation)
      keepWithinCap(collection)
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
      const current = openEngine()
      // Distinct counters (the front door refuses others): each plan holds against the state before the batch.
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
  })
}
