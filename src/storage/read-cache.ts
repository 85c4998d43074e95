/**
 * A read cache in front of a store, for the records every request reads and people rarely change: keys, accounts,
 * workspaces, provider credentials, guardrails and presets. On SQLite, Redis or SQL each of those reads is a
 * statement or a round trip, seven of them per inference request; cached, a request makes one, shared with the
 * other requests that arrived with it.
 *
 * What a reader sees (docs/decisions.md, "Read cache"):
 * - Every change whose write returned before a request arrived, whichever process made it. Each write of a cached
 *   collection adds one to a shared tally in the store (the generation) before it returns; each request reads the
 *   generation (`revalidate`) before it reads anything else, and when it moved, nothing cached is used. The requests
 *   that arrive in one turn of the event loop share one reading, started after all of them arrived.
 * - A write through this cache is seen at once by every later read of this process: the write drops the cache, both
 *   when it starts and when it ends, so no read that overlapped it keeps what it read. A lost compare-and-set drops
 *   the cache too, so a read-modify-write that lost its race reads the record again from the store.
 * - Reads outside a request (background sweeps) read the generation again once the last reading is
 *   `backgroundRevalidateMs` old. Were a writer to die between its write and the generation, or meet an outage
 *   there, an entry still lives `maxAgeMs` at most.
 * While the generation cannot be read, nothing is cached: a request fails with the store's error, and a read outside a
 * request within `backgroundRevalidateMs` of that goes to the store.
 */
import type { CounterResult, JsonObject, ListQuery, ListResult, RecordInput, StorageDriver, StoredRecord } from './contract'
import { timeOrderedHex } from '../core/crypto'
import { deepFreeze } from './freeze'

export interface ReadCacheOptions {
  /** The collections whose reads are kept (or a test of a name). Writes to any other pass straight through and drop nothing. */
  collections: Iterable<string> | ((collection: string) => boolean)
  /** How old the last reading of the generation may be when a read outside a request uses the cache (ms). */
  backgroundRevalidateMs?: number
  /** How long an entry lives whatever the generation says (ms). */
  maxAgeMs?: number
  /** Entries kept at most; past it the oldest goes. */
  maxEntries?: number
  /** For tests: the clock, in milliseconds, and what runs once the current turn of the event loop is over. */
  clock?: () => number
  afterTurn?: (run: () => void) => void
}

export interface ReadCache {
  /** The store, its reads of the cached collections served from memory while they are current. */
  storage: StorageDriver
  /**
   * Reads the generation (or joins the reading started in this turn of the event loop), so that what is read
   * afterwards includes every write that returned before now, in any process. A request calls it before it reads;
   * it rejects with the store's error when the store cannot answer.
   */
  revalidate(): Promise<void>
}

/** The shared tally each write of a cached collection adds one to. */
export const READ_CACHE_GENERATION_KEY = 'modelgate:read-cache:generation'
/** A year: the tally starts again at 0 when it expires, which any process reading it then sees as a change. */
const GENERATION_TTL_MS = 365 * 24 * 60 * 60 * 1000
const DEFAULT_BACKGROUND_REVALIDATE_MS = 1_000
const DEFAULT_MAX_AGE_MS = 60_000
/** A few thousand keys, accounts and workspaces of a busy gateway, at a few kilobytes each. */
const DEFAULT_MAX_ENTRIES = 10_000

interface Entry {
  value: unknown
  /** The local generation it was read under: an entry of an older one is a miss. */
  generation: number
  storedAt: number
}

const canonicalQuery = (query: ListQuery | undefined): string => {
  const where = Object.entries(query?.where ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return JSON.stringify([where, query?.offset ?? 0, query?.limit ?? null])
}

/** Runs `run` once this turn of the event loop is over: `setImmediate` where the runtime has it, else a timer. */
const nextTurn = (run: () => void): void => {
  if (typeof setImmediate === 'function') setImmediate(run)
  else setTimeout(run, 0)
}

/** A unique id for each settlement that moves the generation (the store applies an id once). */
const bumpId = () => `read-cache:${timeOrderedHex(16)}`

/**
 * Puts a read cache of `options.collections` in front of `driver` (see the module's note). The cache checks no
 * argument itself: `driver` is one a driver factory returned, behind the front door (src/storage/checked.ts), so
 * every call the cache passes on is checked there, once.
 */
export const createReadCache = (driver: StorageDriver, options: ReadCacheOptions): ReadCache => {
  const cached = typeof options.collections === 'function' ? { has: options.collections } : new Set(options.collections)
  const backgroundRevalidateMs = options.backgroundRevalidateMs ?? DEFAULT_BACKGROUND_REVALIDATE_MS
  const maxAgeMs = options.maxAgeMs ?? DEFAULT_MAX_AGE_MS
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES
  const clock = options.clock ?? (() => performance.now())
  const afterTurn = options.afterTurn ?? nextTurn

  const entries = new Map<string, Entry>()
  /** Moves on with every change this process makes or learns of; entries read under an older one are misses. */
  let generation = 0
  /** The shared generation as last read, and when that reading started. */
  let sharedGeneration: number | undefined
  let checkedAt = Number.NEGATIVE_INFINITY
  /** The reading started in this turn of the event loop, which requests arriving in it may share. */
  let joinable: Promise<void> | undefined

  const dropAll = () => {
    generation++
    entries.clear()
  }

  /** Reads the shared generation and drops everything when it moved. */
  const check = async (): Promise<void> => {
    const startedAt = clock()
    try {
      const [value] = await driver.readTallies([READ_CACHE_GENERATION_KEY])
      if (value !== sharedGeneration) {
        dropAll()
        sharedGeneration = value
      }
      checkedAt = startedAt
    } catch (error) {
      // The store cannot say: nothing is cached until it can. The request meets the outage here, once, rather than
      // again in each read; a read outside a request within the interval goes to the store.
      dropAll()
      sharedGeneration = undefined
      checkedAt = startedAt
      throw error
    }
  }

  const revalidate = (): Promise<void> => {
    if (joinable) return joinable
    const reading = check()
    joinable = reading
    // A request that arrives in a later turn may follow a write that returned after this reading started.
    afterTurn(() => {
      if (joinable === reading) joinable = undefined
    })
    return reading
  }

  const lookup = (key: string): Entry | undefined => {
    const entry = entries.get(key)
    if (!entry) return undefined
    if (entry.generation === generation && clock() - entry.storedAt < maxAgeMs) return entry
    entries.delete(key)
    return undefined
  }

  const store = (key: string, value: unknown, readGeneration: number) => {
    // A write or a newer generation came in while this read was under way: what it read may be older than that.
    if (readGeneration !== generation || sharedGeneration === undefined) return
    if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!)
    entries.set(key, { value: deepFreeze(value), generation, storedAt: clock() })
  }

  /** The value for `key`: from the cache when it is current, else read with `read` and kept. */
  const read = async <V>(key: string, load: () => Promise<V>): Promise<V> => {
    if (clock() - checkedAt >= backgroundRevalidateMs) await revalidate()
    const hit = lookup(key)
    if (hit) return hit.value as V
    const readGeneration = generation
    const value = await load()
    store(key, value, readGeneration)
    return value
  }

  /** Runs a write of `collection`, dropping the cache around it and telling other processes once it is stored. */
  const write = async <V>(collection: string, run: () => Promise<V>): Promise<V> => {
    if (!cached.has(collection)) return run()
    dropAll()
    let value: V
    try {
      value = await run()
    } finally {
      // Whether it stored or lost a race (which says the record changed elsewhere), what was read before is dropped.
      dropAll()
    }
    // Stored: every request that arrives anywhere from now on reads past it. A failure here is not the write's (it is
    // stored, and the caller must not write it again); entries elsewhere then live `maxAgeMs` at most.
    await driver.settle([{ id: bumpId(), changes: [{ key: READ_CACHE_GENERATION_KEY, amount: 1, ttlMs: GENERATION_TTL_MS }] }]).catch(() => {})
    return value
  }

  const getKey = (collection: string, id: string) => `g\u0000${collection}\u0000${id}`
  const uniqueKey = (collection: string, unique: string) => `u\u0000${collection}\u0000${unique}`
  const listKey = (collection: string, query: ListQuery | undefined) => `l\u0000${collection}\u0000${canonicalQuery(query)}`

  const storage: StorageDriver = {
    name: driver.name,
    create: <T extends JsonObject>(collection: string, input: RecordInput<T>) => write(collection, () => driver.create(collection, input)),
    createMany: <T extends JsonObject>(collection: string, inputs: RecordInput<T>[]) => write(collection, () => driver.createMany(collection, inputs)),
    update: <T extends JsonObject>(collection: string, id: string, expectedVersion: number, input: RecordInput<T>) =>
      write(collection, () => driver.update(collection, id, expectedVersion, input)),
    delete: (collection: string, id: string, expectedVersion?: number) => write(collection, () => driver.delete(collection, id, expectedVersion)),
    get: <T extends JsonObject>(collection: string, id: string): Promise<StoredRecord<T> | null> =>
      cached.has(collection) ? read(getKey(collection, id), () => driver.get<T>(collection, id)) : driver.get<T>(collection, id),
    findByUnique: <T extends JsonObject>(collection: string, unique: string): Promise<StoredRecord<T> | null> =>
      cached.has(collection) ? read(uniqueKey(collection, unique), () => driver.findByUnique<T>(collection, unique)) : driver.findByUnique<T>(collection, unique),
    list: <T extends JsonObject>(collection: string, query?: ListQuery): Promise<ListResult<T>> =>
      cached.has(collection) ? read(listKey(collection, query), () => driver.list<T>(collection, query)) : driver.list<T>(collection, query),
    increment: (key: string, amount: number, ttlMs: number): Promise<CounterResult> => driver.increment(key, amount, ttlMs),
    ...(driver.incrementMany ? { incrementMany: driver.incrementMany.bind(driver) } : {}),
    hold: (hold) => driver.hold(hold),
    settle: (settlements) => driver.settle(settlements),
    renewHolds: (ids, leaseMs) => driver.renewHolds(ids, leaseMs),
    releaseExpiredHolds: (limit) => driver.releaseExpiredHolds(limit),
    readTallies: (keys) => driver.readTallies(keys),
    close: () => driver.close(),
  }
  return { storage, revalidate }
}
