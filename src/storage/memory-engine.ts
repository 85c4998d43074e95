/**
 * The in-memory state behind the memory and file drivers. Every write is split in two: `plan*`
 * checks everything and describes the change as a `Mutation` without touching state, and `apply`
 * performs it and cannot fail. The memory driver applies at once; the file driver appends the
 * mutation to its journal first, so a failed append leaves nothing half-done.
 */
import { StorageConflictError } from '../core/errors'
import type { CounterResult, JsonObject, ListQuery, ListResult, RecordInput, StoredRecord } from './contract'
import {
  createOrderedRecords,
  insertRecord,
  recordCount,
  removeRecord,
  replaceRecord,
  sortedItems,
  type OrderedRecords,
} from './ordered-records'
import {
  assertCollection,
  assertCounterArguments,
  assertId,
  assertListQuery,
  assertVersion,
  compareRecords,
  toStoredRecord,
} from './validate'

/**
 * One change to the state. Every mutation carries absolute values (the whole record, the counter's
 * new value), so applying one twice leaves the same state as applying it once.
 */
export type Mutation = PutMutation | DeleteMutation | CounterMutation

export interface PutMutation {
  op: 'put'
  collection: string
  record: StoredRecord
}

export interface DeleteMutation {
  op: 'delete'
  collection: string
  id: string
}

export interface CounterMutation {
  op: 'counter'
  key: string
  value: number
  expiresAt: number
}

export interface CounterEntry extends CounterResult {
  key: string
}

/** Everything the engine holds, as plain data. */
export interface EngineState {
  collections: Record<string, StoredRecord[]>
  counters: CounterEntry[]
}

interface Collection {
  records: Map<string, StoredRecord>
  /** unique key → id of the record holding it */
  uniques: Map<string, string>
  /** Every record, in list order. */
  ordered: OrderedRecords
  /** index field → value → the records holding that value, in list order: a filtered listing reads one of these. */
  byIndex: Map<string, Map<string, OrderedRecords>>
}

const indexListFor = (collection: Collection, field: string, value: string): OrderedRecords => {
  let values = collection.byIndex.get(field)
  if (!values) {
    values = new Map()
    collection.byIndex.set(field, values)
  }
  let list = values.get(value)
  if (!list) {
    list = createOrderedRecords()
    values.set(value, list)
  }
  return list
}

/** Takes `record` out of one index value's list, and drops the list once empty (one per account and day, say). */
const removeFromIndex = (collection: Collection, field: string, record: StoredRecord): void => {
  const values = collection.byIndex.get(field)
  const value = record.indexes[field]!
  const list = values?.get(value)
  if (list && removeRecord(list, record)) values!.delete(value)
}

const addRecordOrder = (collection: Collection, record: StoredRecord): void => {
  insertRecord(collection.ordered, record)
  for (const field of Object.keys(record.indexes)) insertRecord(indexListFor(collection, field, record.indexes[field]!), record)
}

const removeRecordOrder = (collection: Collection, record: StoredRecord): void => {
  removeRecord(collection.ordered, record)
  for (const field of Object.keys(record.indexes)) removeFromIndex(collection, field, record)
}

/** Moves `previous`'s places in the ordered lists to `record`, which replaces it. */
const replaceRecordOrder = (collection: Collection, previous: StoredRecord, record: StoredRecord): void => {
  if (compareRecords(previous, record) !== 0) {
    removeRecordOrder(collection, previous)
    addRecordOrder(collection, record)
    return
  }
  replaceRecord(collection.ordered, previous, record)
  for (const field of Object.keys(previous.indexes)) {
    if (record.indexes[field] === previous.indexes[field]) {
      replaceRecord(indexListFor(collection, field, previous.indexes[field]!), previous, record)
    } else {
      removeFromIndex(collection, field, previous)
    }
  }
  for (const field of Object.keys(record.indexes)) {
    if (record.indexes[field] !== previous.indexes[field]) insertRecord(indexListFor(collection, field, record.indexes[field]!), record)
  }
}

/** Expired counters are swept when the map has doubled since the last sweep, so no timer is needed. */
const MIN_SWEEP_SIZE = 1024

// Stored records are frozen once, so reads can hand them out without a copy (the bench's memory bound: cloning on
// every read was the memory driver's largest cost on the request path). Children are frozen before their parent,
// so a frozen record is frozen all through and the check on a read stops at its root.
const deepFreeze = <T>(value: T): T => {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child)
    Object.freeze(value)
  }
  return value
}

/**
 * A record built from its input: a copy is frozen at once; data handed over (`RecordInput.isDataHandedOver`) and
 * kept stays as it is until something reads it, since its writer never touches it again and most such records
 * (usage records) are never read at all.
 */
const planRecord = <T extends JsonObject>(input: RecordInput<T>, version: number): StoredRecord => {
  const record = toStoredRecord(input, version)
  return record.data === input.data ? record : deepFreeze(record)
}

/** Builds an empty engine whose counters read time from `now`. */
export const createMemoryEngine = (now: () => number) => {
  const collections = new Map<string, Collection>()
  const counters = new Map<string, CounterResult>()
  let sweepAtSize = MIN_SWEEP_SIZE

  const collectionFor = (name: string): Collection => {
    let collection = collections.get(name)
    if (!collection) {
      collection = { records: new Map(), uniques: new Map(), ordered: createOrderedRecords(), byIndex: new Map() }
      collections.set(name, collection)
    }
    return collection
  }

  const assertUniquesFree = (collection: Collection | undefined, record: StoredRecord): void => {
    for (const key of record.uniques) {
      const holder = collection?.uniques.get(key)
      if (holder !== undefined && holder !== record.id) throw new StorageConflictError('unique')
    }
  }

  const liveCounter = (key: string, at: number): CounterResult | undefined => {
    const counter = counters.get(key)
    return counter && counter.expiresAt > at ? counter : undefined
  }

  const sweepCounters = (): void => {
    if (counters.size < sweepAtSize) return
    const at = now()
    for (const [key, counter] of counters) if (counter.expiresAt <= at) counters.delete(key)
    sweepAtSize = Math.max(MIN_SWEEP_SIZE, counters.size * 2)
  }

  return {
    planCreate<T extends JsonObject>(collectionName: string, input: RecordInput<T>): PutMutation {
      assertCollection(collectionName)
      const record = planRecord(input, 1)
      const collection = collections.get(collectionName)
      if (collection?.records.has(record.id)) throw new StorageConflictError('unique')
      assertUniquesFree(collection, record)
      return { op: 'put', collection: collectionName, record }
    },

    /**
     * Plans a batch of creates: `null` for an input whose id or unique key is taken, by a stored record or an
     * earlier input of the batch. Invalid inputs throw before anything is planned.
     */
    planCreateMany<T extends JsonObject>(collectionName: string, inputs: RecordInput<T>[]): Array<PutMutation | null> {
      assertCollection(collectionName)
      if (!Array.isArray(inputs)) throw new TypeError('modelgate storage: inputs must be an array')
      const records = inputs.map((input) => planRecord(input, 1))
      const collection = collections.get(collectionName)
      const claimedIds = new Set<string>()
      const claimedUniques = new Set<string>()
      return records.map((record) => {
        const isTaken =
          collection?.records.has(record.id) ||
          claimedIds.has(record.id) ||
          record.uniques.some((key) => claimedUniques.has(key) || (collection?.uniques.get(key) ?? record.id) !== record.id)
        if (isTaken) return null
        claimedIds.add(record.id)
        for (const key of record.uniques) claimedUniques.add(key)
        return { op: 'put', collection: collectionName, record }
      })
    },

    planUpdate<T extends JsonObject>(
      collectionName: string,
      id: string,
      expectedVersion: number,
      input: RecordInput<T>,
    ): PutMutation | null {
      assertCollection(collectionName)
      assertId(id)
      assertVersion(expectedVersion)
      const record = planRecord(input, expectedVersion + 1)
      if (record.id !== id) throw new TypeError('modelgate storage: input.id must equal the id being updated')
      const collection = collections.get(collectionName)
      const current = collection?.records.get(id)
      if (!current) return null
      if (current.version !== expectedVersion) throw new StorageConflictError('version')
      assertUniquesFree(collection, record)
      return { op: 'put', collection: collectionName, record }
    },

    planDelete(collectionName: string, id: string, expectedVersion?: number): DeleteMutation | null {
      assertCollection(collectionName)
      assertId(id)
      if (expectedVersion !== undefined) assertVersion(expectedVersion)
      const current = collections.get(collectionName)?.records.get(id)
      if (!current) return null
      if (expectedVersion !== undefined && current.version !== expectedVersion) {
        throw new StorageConflictError('version')
      }
      return { op: 'delete', collection: collectionName, id }
    },

    planIncrement(key: string, amount: number, ttlMs: number): CounterMutation {
      assertCounterArguments(key, amount, ttlMs)
      const at = now()
      const counter = liveCounter(key, at)
      return counter
        ? { op: 'counter', key, value: counter.value + amount, expiresAt: counter.expiresAt }
        : { op: 'counter', key, value: amount, expiresAt: at + ttlMs }
    },

    /** Performs a planned (or replayed) mutation. Takes ownership of `mutation.record`, which reads freeze when they hand it out. */
    apply(mutation: Mutation): void {
      if (mutation.op === 'counter') {
        counters.set(mutation.key, { value: mutation.value, expiresAt: mutation.expiresAt })
        sweepCounters()
        return
      }
      const collection = collectionFor(mutation.collection)
      const id = mutation.op === 'put' ? mutation.record.id : mutation.id
      const previous = collection.records.get(id)
      // Only free keys this record still holds, so replaying an old journal entry cannot unclaim another's key.
      for (const key of previous?.uniques ?? []) {
        if (collection.uniques.get(key) === id) collection.uniques.delete(key)
      }
      if (mutation.op === 'delete') {
        if (previous) removeRecordOrder(collection, previous)
        collection.records.delete(id)
        return
      }
      collection.records.set(id, mutation.record)
      for (const key of mutation.record.uniques) collection.uniques.set(key, id)
      if (previous) replaceRecordOrder(collection, previous, mutation.record)
      else addRecordOrder(collection, mutation.record)
    },

    get<T extends JsonObject>(collectionName: string, id: string): StoredRecord<T> | null {
      assertCollection(collectionName)
      assertId(id)
      const record = collections.get(collectionName)?.records.get(id)
      return record ? (deepFreeze(record) as StoredRecord<T>) : null
    },

    findByUnique<T extends JsonObject>(collectionName: string, uniqueKey: string): StoredRecord<T> | null {
      assertCollection(collectionName)
      if (typeof uniqueKey !== 'string' || uniqueKey === '') {
        throw new TypeError('modelgate storage: uniqueKey must be a non-empty string')
      }
      const collection = collections.get(collectionName)
      const id = collection?.uniques.get(uniqueKey)
      const record = id === undefined ? undefined : collection?.records.get(id)
      return record ? (deepFreeze(record) as StoredRecord<T>) : null
    },

    list<T extends JsonObject>(collectionName: string, query: ListQuery = {}): ListResult<T> {
      assertCollection(collectionName)
      assertListQuery(query)
      const where = Object.entries(query.where ?? {})
      const collection = collections.get(collectionName)
      // The shortest list that holds every match: one index value's, or the whole collection's.
      let source = collection?.ordered
      for (const [field, value] of where) {
        const list = collection?.byIndex.get(field)?.get(value)
        if (!list) {
          source = undefined
          break
        }
        if (recordCount(list) < recordCount(source!)) source = list
      }
      const items = source ? sortedItems(source) : []
      const matches = where.length > 1 ? items.filter((record) => where.every(([field, value]) => record.indexes[field] === value)) : items
      const start = query.offset ?? 0
      const end = query.limit === undefined ? undefined : start + query.limit
      return { items: matches.slice(start, end).map(deepFreeze) as StoredRecord<T>[], totalCount: matches.length }
    },

    /** The live state as plain data; shares objects with the engine, so serialize it before the next write. */
    state(): EngineState {
      const at = now()
      const state: EngineState = { collections: {}, counters: [] }
      // In list order, so loading the state places each record at the end of its lists.
      for (const [name, collection] of collections) {
        if (collection.records.size > 0) state.collections[name] = [...sortedItems(collection.ordered)]
      }
      for (const [key, counter] of counters) {
        if (counter.expiresAt > at) state.counters.push({ key, ...counter })
      }
      return state
    },
  }
}

export type MemoryEngine = ReturnType<typeof createMemoryEngine>

/** Loads a state produced by `engine.state()` (after a JSON round trip) into an empty engine. */
export const loadEngineState = (engine: MemoryEngine, state: EngineState): void => {
  for (const [collection, records] of Object.entries(state.collections)) {
    for (const record of records) engine.apply({ op: 'put', collection, record })
  }
  for (const { key, value, expiresAt } of state.counters) engine.apply({ op: 'counter', key, value, expiresAt })
}
