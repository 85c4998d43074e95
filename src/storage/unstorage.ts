/**
 * A driver over any unstorage backend, for state that can be lost or raced without harm (caches).
 * unstorage has no create-if-absent or compare-and-set, so this driver serializes its operations
 * inside one process and nothing more.
 *
 * Keys (every part after the prefix is percent-encoded, so it holds only `A-Z a-z 0-9 - %`):
 *   `<prefix><collection>:r:<id>`         the stored record
 *   `<prefix><collection>:u:<uniqueKey>`  `{ id }` of the record claiming the key
 *   `<prefix>_counter:<key>`              `{ value, expiresAt }` (`_` never appears in an encoded collection)
 *   `<prefix>_tally:<key>`                `{ value, expiresAt }` of a tally (`StorageDriver.hold`)
 *   `<prefix>_hold:<id>`                  `{ id, owner, expiresAt, changes }` of a hold
 *   `<prefix>_settled:<id>`               `{ expiresAt }`: the settlement id is remembered until then
 *
 * Tallies, like counters, are exact only within one process: a hold or a settlement is several writes, in
 * an order chosen so that a crash between two of them can leave a tally too high (until its period ends),
 * never too low. Spend kept by an older version in `_counter:spend…` keys is carried into the tallies of the
 * same keys as the driver's first operation, and those counters removed; two processes starting at once on
 * such a backend may both carry one counter.
 */
import type { Storage } from 'unstorage'
import { StorageConflictError, StorageUnavailableError } from '../core/errors'
import {
  SETTLEMENT_MEMORY_MS,
  type CounterChange,
  type CounterResult,
  type JsonObject,
  type ListQuery,
  type ListResult,
  type RecordInput,
  type StorageDriver,
  type StoredRecord,
  type TallyHold,
  type TallySettlement,
} from './contract'
import { checkedDriver } from './checked'
import { compareRecords, toStoredRecord } from './validate'

export interface UnstorageStorageOptions {
  /** An unstorage instance (`createStorage({ driver })`). The caller owns it: `close()` does not dispose it. */
  storage: Storage
  /** Start of every key (default `modelgate:`): letters, digits, `_`, `-`, `.` and `:`. */
  prefix?: string
}

const DEFAULT_PREFIX = 'modelgate:'

interface UniqueEntry {
  id: string
}

interface CounterEntry {
  value: number
  expiresAt: number
}

interface HoldEntry {
  id: string
  owner: string
  expiresAt: number
  changes: CounterChange[]
}

interface SettledEntry {
  expiresAt: number
}

/** Where spend was kept before tallies existed: counters whose key starts with this (src/repositories/spend-counters.ts). */
const SPEND_COUNTER_PREFIX = 'spend:'

/** Expired tallies and settled ids are swept once this many settlements were written since the last sweep, or as many as it left. */
const MIN_SWEEP_AFTER = 1024

/**
 * unstorage rewrites `/`, `\` and `?` in keys, its file drivers refuse `.` and `..` segments and
 * lists skip keys ending in `$`, so every part is reduced to `A-Z a-z 0-9 - %`.
 */
const encodeKeyPart = (text: string, name: string): string => {
  // Lone surrogates have no UTF-8 form: encodeURIComponent throws, and other encoders would merge two ids.
  if (/\p{Cs}/u.test(text)) throw new TypeError(`modelgate storage: ${name} must not contain lone surrogates`)
  return encodeURIComponent(text).replace(
    /[_.!~*'()]/g,
    (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`,
  )
}

const unavailable = (cause: unknown) => new StorageUnavailableError('Storage is unavailable', { cause })

const isStorage = (value: unknown): value is Storage =>
  typeof value === 'object' &&
  value !== null &&
  ['getItem', 'setItem', 'removeItem', 'getKeys'].every(
    (method) => typeof (value as Record<string, unknown>)[method] === 'function',
  )

/**
 * A driver that keeps state in any unstorage backend (filesystem, Redis, Cloudflare KV, ...), for
 * caches and other non-critical state.
 *
 * Not atomic across processes: unstorage has no create-if-absent, compare-and-set or atomic
 * increment, so two processes (or two gateways on one backend) can both win a unique key, both
 * pass a version check, lose counter and tally changes, or both release one hold. Within one process
 * every operation runs in turn, so a single process sees the full contract (but for a crash in the
 * middle of one, which can leave a tally too high). Keep accounts, keys, idempotency records, rate
 * limits and spend on the memory, file, Redis or SQL driver. Listing reads the whole collection.
 *
 * @example
 * import { createStorage } from 'unstorage'
 * import fsDriver from 'unstorage/drivers/fs'
 * const cache = unstorageStorage({ storage: createStorage({ driver: fsDriver({ base: '.cache' }) }) })
 */
export const unstorageStorage = (options: UnstorageStorageOptions): StorageDriver => {
  if (typeof options !== 'object' || options === null)
    throw new TypeError('unstorageStorage: options must be an object')
  if (!isStorage(options.storage)) {
    throw new TypeError('unstorageStorage: options.storage must be an unstorage instance (createStorage())')
  }
  const prefix = options.prefix ?? DEFAULT_PREFIX
  if (typeof prefix !== 'string' || !/^[\w.:-]*$/.test(prefix)) {
    throw new TypeError('unstorageStorage: options.prefix may hold only letters, digits, _, -, . and :')
  }
  const storage = options.storage
  /** End of the operation chain; never rejects. */
  let tail: Promise<unknown> = Promise.resolve()
  let isClosed = false
  let closing: Promise<void> | undefined

  /** Runs an operation after every earlier one, so this process never interleaves two of them. */
  const serialized = <R>(task: () => Promise<R>): Promise<R> => {
    if (isClosed) return Promise.reject(new StorageUnavailableError('Storage is closed'))
    const run = tail.then(task)
    tail = run.then(
      () => {},
      () => {},
    )
    return run
  }

  const read = async <T>(key: string): Promise<T | null> => {
    try {
      return await storage.getItem<T>(key)
    } catch (error) {
      throw unavailable(error)
    }
  }
  const write = async (key: string, value: object, ttlSeconds?: number): Promise<void> => {
    try {
      // `ttl` (seconds) is honoured by backends that expire keys and ignored by the rest.
      await storage.setItem(key, value, ttlSeconds === undefined ? undefined : { ttl: ttlSeconds })
    } catch (error) {
      throw unavailable(error)
    }
  }
  const remove = async (key: string): Promise<void> => {
    try {
      await storage.removeItem(key)
    } catch (error) {
      throw unavailable(error)
    }
  }

  const listKeys = async (base: string): Promise<string[]> => {
    try {
      return await storage.getKeys(base)
    } catch (error) {
      throw unavailable(error)
    }
  }
  /** Seconds until `expiresAt`, for backends that expire keys (at least one). */
  const ttlSecondsUntil = (expiresAt: number, at: number) => Math.max(1, Math.ceil((expiresAt - at) / 1_000))

  const collectionBase = (collection: string): string => `${prefix}${encodeKeyPart(collection, 'collection')}:`
  const recordKey = (base: string, id: string) => `${base}r:${encodeKeyPart(id, 'id')}`
  const uniqueKeyOf = (base: string, key: string) => `${base}u:${encodeKeyPart(key, 'unique key')}`

  /**
   * The record holding a unique key. An entry is trusted only when its record still lists the key,
   * so entries left behind by a write that failed halfway never block anyone.
   */
  const holderOf = async (base: string, key: string): Promise<StoredRecord | null> => {
    const entry = await read<UniqueEntry>(uniqueKeyOf(base, key))
    if (typeof entry?.id !== 'string') return null
    const record = await read<StoredRecord>(recordKey(base, entry.id))
    return record?.uniques.includes(key) ? record : null
  }

  const assertUniquesFree = async (base: string, record: StoredRecord): Promise<void> => {
    for (const key of record.uniques) {
      const holder = await holderOf(base, key)
      if (holder && holder.id !== record.id) throw new StorageConflictError('unique')
    }
  }

  /**
   * Key parts are encoded up front, so an unusable id or key is a TypeError before anything is written. The rest of
   * the arguments arrive checked (src/storage/checked.ts).
   */
  const assertEncodable = (record: Pick<RecordInput, 'id' | 'uniques'>): void => {
    encodeKeyPart(record.id, 'id')
    for (const key of record.uniques ?? []) encodeKeyPart(key, 'unique key')
  }

  const createOne = async <T extends JsonObject>(collection: string, input: RecordInput<T>): Promise<StoredRecord<T>> => {
    const base = collectionBase(collection)
    const record = toStoredRecord(input, 1)
    assertEncodable(record)
    if (await read(recordKey(base, record.id))) throw new StorageConflictError('unique')
    await assertUniquesFree(base, record)
    // Claims first, record last: the record is what makes the claims count (see holderOf).
    for (const key of record.uniques) await write(uniqueKeyOf(base, key), { id: record.id })
    await write(recordKey(base, record.id), record)
    return record
  }

  const counterKeyOf = (key: string) => `${prefix}_counter:${encodeKeyPart(key, 'counter key')}`
  const tallyKeyOf = (key: string) => `${prefix}_tally:${encodeKeyPart(key, 'tally key')}`
  const holdKeyOf = (id: string) => `${prefix}_hold:${encodeKeyPart(id, 'hold id')}`
  const settledKeyOf = (id: string) => `${prefix}_settled:${encodeKeyPart(id, 'settlement id')}`

  const liveEntry = <T extends { expiresAt: number }>(entry: T | null, at: number): T | undefined =>
    entry !== null && entry.expiresAt > at ? entry : undefined

  /**
   * Tally changes of one call, read through once and written at the end: a settlement that touches a tally twice
   * (its hold and its cost) writes it once.
   */
  const tallyPlan = (at: number) => {
    const planned = new Map<string, CounterEntry | undefined>()
    const live = async (key: string): Promise<CounterEntry | undefined> => {
      if (!planned.has(key)) planned.set(key, liveEntry(await read<CounterEntry>(tallyKeyOf(key)), at))
      return planned.get(key)
    }
    const changed = new Set<string>()
    return {
      async add({ key, amount, ttlMs }: CounterChange): Promise<CounterEntry> {
        const tally = await live(key)
        const next = tally ? { value: tally.value + amount, expiresAt: tally.expiresAt } : { value: amount, expiresAt: at + ttlMs }
        planned.set(key, next)
        changed.add(key)
        return next
      },
      /** Takes back what a hold added, from a tally still live (an expired one starts again at 0, never below). */
      async takeBack({ key, amount }: CounterChange): Promise<void> {
        const tally = await live(key)
        if (!tally) return
        planned.set(key, { value: tally.value - amount, expiresAt: tally.expiresAt })
        changed.add(key)
      },
      async write(): Promise<void> {
        for (const key of changed) {
          const tally = planned.get(key)!
          await write(tallyKeyOf(key), tally, ttlSecondsUntil(tally.expiresAt, at))
        }
      },
    }
  }

  /** Releases a hold: gone first, then what it added taken back, so a crash between leaves the tally too high, never too low. */
  const releaseHold = async (hold: HoldEntry, at: number): Promise<void> => {
    await remove(holdKeyOf(hold.id))
    const plan = tallyPlan(at)
    for (const change of hold.changes) await plan.takeBack(change)
    await plan.write()
  }

  let hasCarriedSpend = false
  /**
   * Carries spend counters an older version kept (`_counter:spend…`) into tallies of the same key, once per driver,
   * as its first operation (again before a tally operation if the backend failed it): the tally first, then the
   * counter removed, so a crash between counts it twice rather than losing it.
   */
  const carrySpendCounters = async (): Promise<void> => {
    if (hasCarriedSpend) return
    const spendBase = counterKeyOf(SPEND_COUNTER_PREFIX)
    const keys = (await listKeys(`${prefix}_counter`)).filter((key) => key.startsWith(spendBase))
    for (const counterKey of keys) {
      const at = Date.now()
      const counter = liveEntry(await read<CounterEntry>(counterKey), at)
      if (counter) {
        const key = decodeURIComponent(counterKey.slice(`${prefix}_counter:`.length))
        const tally = liveEntry(await read<CounterEntry>(tallyKeyOf(key)), at)
        const next = tally ? { value: tally.value + counter.value, expiresAt: tally.expiresAt } : counter
        await write(tallyKeyOf(key), next, ttlSecondsUntil(next.expiresAt, at))
      }
      await remove(counterKey)
    }
    hasCarriedSpend = true
  }

  // First in the chain, so the carry sees only what an older version wrote, never this driver's own counters.
  serialized(carrySpendCounters).catch(() => {})

  /** Runs a tally operation in turn, after the spend counters of an older version were carried over. */
  const serializedTally = <R>(task: () => Promise<R>): Promise<R> =>
    serialized(async () => {
      await carrySpendCounters()
      return task()
    })

  let settledSinceSweep = 0
  let sweepAfter = MIN_SWEEP_AFTER
  /** Removes expired tallies and settled ids, for backends that do not expire keys themselves. */
  const sweepExpired = async (): Promise<void> => {
    let kept = 0
    for (const base of [`${prefix}_settled`, `${prefix}_tally`]) {
      for (const key of await listKeys(base)) {
        const entry = await read<{ expiresAt: number }>(key)
        if (entry && entry.expiresAt <= Date.now()) await remove(key)
        else kept++
      }
    }
    settledSinceSweep = 0
    sweepAfter = Math.max(MIN_SWEEP_AFTER, kept)
  }

  return checkedDriver({
    name: 'unstorage',

    create<T extends JsonObject>(collection: string, input: RecordInput<T>): Promise<StoredRecord<T>> {
      return serialized(() => createOne(collection, input))
    },

    createMany<T extends JsonObject>(collection: string, inputs: RecordInput<T>[]): Promise<Array<StoredRecord<T> | null>> {
      return serialized(async () => {
        collectionBase(collection)
        for (const input of inputs) assertEncodable(input)
        // unstorage has no batch write: one record after another, each as `create` writes it.
        const created: Array<StoredRecord<T> | null> = []
        for (const input of inputs) {
          try {
            created.push(await createOne(collection, input))
          } catch (error) {
            if (!(error instanceof StorageConflictError)) throw error
            created.push(null)
          }
        }
        return created
      })
    },

    get<T extends JsonObject>(collection: string, id: string): Promise<StoredRecord<T> | null> {
      return serialized(async () => {
        const base = collectionBase(collection)
        return read<StoredRecord<T>>(recordKey(base, id))
      })
    },

    findByUnique<T extends JsonObject>(collection: string, uniqueKey: string): Promise<StoredRecord<T> | null> {
      return serialized(async () => {
        const base = collectionBase(collection)
        return (await holderOf(base, uniqueKey)) as StoredRecord<T> | null
      })
    },

    update<T extends JsonObject>(
      collection: string,
      id: string,
      expectedVersion: number,
      input: RecordInput<T>,
    ): Promise<StoredRecord<T> | null> {
      return serialized(async () => {
        const base = collectionBase(collection)
        const record = toStoredRecord(input, expectedVersion + 1)
        assertEncodable(record)
        const current = await read<StoredRecord>(recordKey(base, id))
        if (!current) return null
        if (current.version !== expectedVersion) throw new StorageConflictError('version')
        await assertUniquesFree(base, record)
        for (const key of record.uniques) await write(uniqueKeyOf(base, key), { id })
        await write(recordKey(base, id), record)
        for (const key of current.uniques) {
          if (!record.uniques.includes(key)) await remove(uniqueKeyOf(base, key))
        }
        return record
      })
    },

    delete(collection: string, id: string, expectedVersion?: number): Promise<boolean> {
      return serialized(async () => {
        const base = collectionBase(collection)
        const current = await read<StoredRecord>(recordKey(base, id))
        if (!current) return false
        if (expectedVersion !== undefined && current.version !== expectedVersion) {
          throw new StorageConflictError('version')
        }
        await remove(recordKey(base, id))
        for (const key of current.uniques) await remove(uniqueKeyOf(base, key))
        return true
      })
    },

    list<T extends JsonObject>(collection: string, query: ListQuery = {}): Promise<ListResult<T>> {
      return serialized(async () => {
        const base = collectionBase(collection)
        let keys: string[]
        try {
          keys = await storage.getKeys(`${base}r`)
        } catch (error) {
          throw unavailable(error)
        }
        const records = await Promise.all(keys.map((key) => read<StoredRecord<T>>(key)))
        const where = Object.entries(query.where ?? {})
        const matches = records.filter(
          (record): record is StoredRecord<T> =>
            record !== null && where.every(([field, value]) => record.indexes[field] === value),
        )
        matches.sort(compareRecords)
        const start = query.offset ?? 0
        const end = query.limit === undefined ? undefined : start + query.limit
        return { items: matches.slice(start, end), totalCount: matches.length }
      })
    },

    increment(key: string, amount: number, ttlMs: number): Promise<CounterResult> {
      return serialized(async () => {
        const counterKey = counterKeyOf(key)
        const at = Date.now()
        const current = await read<CounterEntry>(counterKey)
        const next: CounterEntry =
          current && current.expiresAt > at
            ? { value: current.value + amount, expiresAt: current.expiresAt }
            : { value: amount, expiresAt: at + ttlMs }
        await write(counterKey, next, Math.ceil((next.expiresAt - at) / 1_000))
        return next
      })
    },

    // Keys are encoded before anything reaches the backend, the spend carry included.
    async hold(hold: TallyHold): Promise<CounterResult[]> {
      for (const change of hold.changes) tallyKeyOf(change.key)
      return serializedTally(async () => {
        const holdKey = holdKeyOf(hold.id)
        const at = Date.now()
        if ((await read(holdKey)) !== null || liveEntry(await read<SettledEntry>(settledKeyOf(hold.id)), at)) {
          throw new StorageConflictError('unique')
        }
        const plan = tallyPlan(at)
        const results: CounterResult[] = []
        for (const change of hold.changes) results.push({ ...(await plan.add(change)) })
        // Tallies before the hold: a crash between leaves them too high until their period ends, never a hold
        // whose release would take back what was never added.
        await plan.write()
        const entry: HoldEntry = {
          id: hold.id,
          owner: hold.owner,
          expiresAt: at + hold.leaseMs,
          changes: hold.changes.map(({ key, amount, ttlMs }) => ({ key, amount, ttlMs })),
        }
        await write(holdKey, entry)
        return results
      })
    },

    async settle(settlements: ReadonlyArray<TallySettlement>): Promise<void> {
      for (const settlement of settlements) {
        settledKeyOf(settlement.id)
        for (const change of settlement.changes) tallyKeyOf(change.key)
      }
      return serializedTally(async () => {
        for (const settlement of settlements) {
          const at = Date.now()
          const settledKey = settledKeyOf(settlement.id)
          if (liveEntry(await read<SettledEntry>(settledKey), at)) continue
          // Hold gone, tallies, then the id marked: a crash between any two leaves a tally too high, never too low.
          const hold = await read<HoldEntry>(holdKeyOf(settlement.id))
          if (hold) await remove(holdKeyOf(settlement.id))
          const plan = tallyPlan(at)
          for (const change of hold?.changes ?? []) await plan.takeBack(change)
          for (const change of settlement.changes) await plan.add(change)
          await plan.write()
          await write(settledKey, { expiresAt: at + SETTLEMENT_MEMORY_MS }, SETTLEMENT_MEMORY_MS / 1_000)
          settledSinceSweep++
        }
        if (settledSinceSweep >= sweepAfter) await sweepExpired()
      })
    },

    async renewHolds(ids: ReadonlyArray<string>, leaseMs: number): Promise<number> {
      for (const id of ids) holdKeyOf(id)
      return serializedTally(async () => {
        let renewed = 0
        for (const id of new Set(ids)) {
          const hold = await read<HoldEntry>(holdKeyOf(id))
          if (!hold) continue
          await write(holdKeyOf(id), { ...hold, expiresAt: Date.now() + leaseMs })
          renewed++
        }
        return renewed
      })
    },

    releaseExpiredHolds(limit: number): Promise<number> {
      return serializedTally(async () => {
        let released = 0
        for (const key of await listKeys(`${prefix}_hold`)) {
          if (released >= limit) break
          const hold = await read<HoldEntry>(key)
          if (!hold || hold.expiresAt > Date.now()) continue
          await releaseHold(hold, Date.now())
          released++
        }
        return released
      })
    },

    async readTallies(keys: ReadonlyArray<string>): Promise<number[]> {
      const tallyKeys = keys.map(tallyKeyOf)
      return serializedTally(async () => {
        const at = Date.now()
        const tallies = await Promise.all(tallyKeys.map((key) => read<CounterEntry>(key)))
        return tallies.map((tally) => liveEntry(tally, at)?.value ?? 0)
      })
    },

    close(): Promise<void> {
      closing ??= (async () => {
        isClosed = true
        await tail
      })()
      return closing
    },
  })
}
