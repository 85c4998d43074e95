/**
 * A driver over any unstorage backend, for state that can be lost or raced without harm (caches).
 * unstorage has no create-if-absent or compare-and-set, so this driver serializes its operations
 * inside one process and nothing more.
 *
 * Keys (every part after the prefix is percent-encoded, so it holds only `A-Z a-z 0-9 - %`):
 *   `<prefix><collection>:r:<id>`         the stored record
 *   `<prefix><collection>:u:<uniqueKey>`  `{ id }` of the record claiming the key
 *   `<prefix>_counter:<key>`              `{ value, expiresAt }` (`_` never appears in an encoded collection)
 */
import type { Storage } from 'unstorage'
import { StorageConflictError, StorageUnavailableError } from '../core/errors'
import type {
  CounterResult,
  JsonObject,
  ListQuery,
  ListResult,
  RecordInput,
  StorageDriver,
  StoredRecord,
} from './contract'
import {
  assertCollection,
  assertCounterArguments,
  assertId,
  assertListQuery,
  assertVersion,
  compareRecords,
  toStoredRecord,
} from './validate'

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
 * pass a version check, or lose counter increments. Within one process every operation runs in
 * turn, so a single process sees the full contract. Keep accounts, keys, idempotency records and
 * rate limits on the memory, file, Redis or SQL driver. Listing reads the whole collection.
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

  const collectionBase = (collection: string): string => {
    assertCollection(collection)
    return `${prefix}${encodeKeyPart(collection, 'collection')}:`
  }
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

  /** Key parts are encoded up front, so an unusable id or key is a TypeError before anything is written. */
  const assertEncodable = (record: StoredRecord): void => {
    encodeKeyPart(record.id, 'id')
    for (const key of record.uniques) encodeKeyPart(key, 'unique key')
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

  return {
    name: 'unstorage',

    create<T extends JsonObject>(collection: string, input: RecordInput<T>): Promise<StoredRecord<T>> {
      return serialized(() => createOne(collection, input))
    },

    createMany<T extends JsonObject>(collection: string, inputs: RecordInput<T>[]): Promise<Array<StoredRecord<T> | null>> {
      return serialized(async () => {
        collectionBase(collection)
        if (!Array.isArray(inputs)) throw new TypeError('modelgate storage: inputs must be an array')
        for (const input of inputs) assertEncodable(toStoredRecord(input, 1))
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
        assertId(id)
        return read<StoredRecord<T>>(recordKey(base, id))
      })
    },

    findByUnique<T extends JsonObject>(collection: string, uniqueKey: string): Promise<StoredRecord<T> | null> {
      return serialized(async () => {
        const base = collectionBase(collection)
        if (typeof uniqueKey !== 'string' || uniqueKey === '') {
          throw new TypeError('modelgate storage: uniqueKey must be a non-empty string')
        }
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
        assertId(id)
        assertVersion(expectedVersion)
        const record = toStoredRecord(input, expectedVersion + 1)
        if (record.id !== id) throw new TypeError('modelgate storage: input.id must equal the id being updated')
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
        assertId(id)
        if (expectedVersion !== undefined) assertVersion(expectedVersion)
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
        assertListQuery(query)
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
        assertCounterArguments(key, amount, ttlMs)
        const counterKey = `${prefix}_counter:${encodeKeyPart(key, 'counter key')}`
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

    close(): Promise<void> {
      closing ??= (async () => {
        isClosed = true
        await tail
      })()
      return closing
    },
  }
}
