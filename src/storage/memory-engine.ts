/**
 * The in-memory state behind the memory and file drivers. Every write is split in two: `plan*`
 * checks the state (conflicts) and describes the change as a `Mutation` without touching state, and `apply`
 * performs it and cannot fail. The memory driver applies at once; the file driver appends the
 * mutation to its journal first, so a failed append leaves nothing half-done. Arguments arrive checked: both
 * drivers sit behind the front door (src/storage/checked.ts).
 */
import { StorageConflictError } from '../core/errors'
import {
  IN_PROCESS_SETTLEMENT_MEMORY_MS,
  type CounterChange,
  type CounterResult,
  type JsonObject,
  type ListQuery,
  type ListResult,
  type RecordInput,
  type StoredRecord,
  type TallyHold,
  type TallySettlement,
} from './contract'
// Stored records are frozen once, so reads can hand them out without a copy (the bench's memory bound: cloning on
// every read was the memory driver's largest cost on the request path).
import { deepFreeze } from './freeze'
import {
  createOrderedRecords,
  firstRecords,
  insertRecord,
  recordCount,
  removeRecord,
  replaceRecord,
  sortedItems,
  type OrderedRecords,
} from './ordered-records'
import { compareRecords, toStoredRecord } from './validate'

/**
 * One change to the state. Every mutation carries absolute values (the whole record, the counter's
 * new value), so applying one twice leaves the same state as applying it once.
 */
export type Mutation = PutMutation | DeleteMutation | CounterMutation | TallyMutation | HoldMutation | UnholdMutation | SettledMutation

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

/** A tally's new value (tallies are counters of their own: `StorageDriver.hold`). */
export interface TallyMutation {
  op: 'tally'
  key: string
  value: number
  expiresAt: number
}

/** A hold as the engine keeps it: its lease as an absolute expiry. */
export interface HoldEntry {
  id: string
  owner: string
  expiresAt: number
  changes: CounterChange[]
}

/** A hold made or renewed. */
export interface HoldMutation {
  op: 'hold'
  hold: HoldEntry
}

/** A hold gone (settled or released); what it added is taken back by `tally` mutations beside it. */
export interface UnholdMutation {
  op: 'unhold'
  id: string
}

/** A settlement id applied, remembered until `expiresAt`. */
export interface SettledMutation {
  op: 'settled'
  id: string
  expiresAt: number
}

/** A settled id and when it is forgotten. */
export interface SettledEntry {
  id: string
  expiresAt: number
}

/** Everything the engine holds, as plain data. Tallies, holds and settled ids are absent from states written before they existed. */
export interface EngineState {
  collections: Record<string, StoredRecord[]>
  counters: CounterEntry[]
  tallies?: CounterEntry[]
  holds?: HoldEntry[]
  settled?: SettledEntry[]
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

export { IN_PROCESS_SETTLEMENT_MEMORY_MS } from './contract'

/** Expired counters are swept when the map has doubled since the last sweep, so no timer is needed. */
const MIN_SWEEP_SIZE = 1024


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
  const tallies = new Map<string, CounterResult>()
  const holds = new Map<string, HoldEntry>()
  /** Settled id → when it is forgotten. */
  const settled = new Map<string, number>()
  let sweepTalliesAtSize = MIN_SWEEP_SIZE
  let sweepSettledAtSize = MIN_SWEEP_SIZE

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

  const sweepTallies = (): void => {
    if (tallies.size >= sweepTalliesAtSize) {
      const at = now()
      for (const [key, tally] of tallies) if (tally.expiresAt <= at) tallies.delete(key)
      sweepTalliesAtSize = Math.max(MIN_SWEEP_SIZE, tallies.size * 2)
    }
    if (settled.size >= sweepSettledAtSize) {
      const at = now()
      for (const [id, expiresAt] of settled) if (expiresAt <= at) settled.delete(id)
      sweepSettledAtSize = Math.max(MIN_SWEEP_SIZE, settled.size * 2)
    }
  }

  const isSettled = (id: string, at: number): boolean => (settled.get(id) ?? Number.NEGATIVE_INFINITY) > at

  /**
   * Tally changes planned against the live tallies and the changes planned before them in the same call, so two
   * settlements of one batch that touch one tally both count. `mutations()` gives one absolute value per tally.
   */
  const planTallies = (at: number) => {
    const planned = new Map<string, CounterResult>()
    const live = (key: string): CounterResult | undefined => {
      const tally = planned.get(key) ?? tallies.get(key)
      return tally && tally.expiresAt > at ? tally : undefined
    }
    return {
      add(change: CounterChange): CounterResult {
        const tally = live(change.key)
        const next = tally ? { value: tally.value + change.amount, expiresAt: tally.expiresAt } : { value: change.amount, expiresAt: at + change.ttlMs }
        planned.set(change.key, next)
        return next
      },
      /** Takes back what a hold added, from a tally that has not expired since (an expired one starts again at 0). */
      takeBack(change: CounterChange): void {
        const tally = live(change.key)
        if (tally) planned.set(change.key, { value: tally.value - change.amount, expiresAt: tally.expiresAt })
      },
      mutations: (): TallyMutation[] => [...planned].map(([key, tally]) => ({ op: 'tally', key, value: tally.value, expiresAt: tally.expiresAt })),
    }
  }

  /** Plans the release of `hold`: gone, and what it added taken back. */
  const planRelease = (hold: HoldEntry, tallyPlan: ReturnType<typeof planTallies>): UnholdMutation => {
    for (const change of hold.changes) tallyPlan.takeBack(change)
    return { op: 'unhold', id: hold.id }
  }

  return {
    planCreate<T extends JsonObject>(collectionName: string, input: RecordInput<T>): PutMutation {
      const record = planRecord(input, 1)
      const collection = collections.get(collectionName)
      if (collection?.records.has(record.id)) throw new StorageConflictError('unique')
      assertUniquesFree(collection, record)
      return { op: 'put', collection: collectionName, record }
    },

    /**
     * Plans a batch of creates: `null` for an input whose id or unique key is taken, by a stored record or an
     * earlier input of the batch.
     */
    planCreateMany<T extends JsonObject>(collectionName: string, inputs: RecordInput<T>[]): Array<PutMutation | null> {
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
      const record = planRecord(input, expectedVersion + 1)
      const collection = collections.get(collectionName)
      const current = collection?.records.get(id)
      if (!current) return null
      if (current.version !== expectedVersion) throw new StorageConflictError('version')
      assertUniquesFree(collection, record)
      return { op: 'put', collection: collectionName, record }
    },

    planDelete(collectionName: string, id: string, expectedVersion?: number): DeleteMutation | null {
      const current = collections.get(collectionName)?.records.get(id)
      if (!current) return null
      if (expectedVersion !== undefined && current.version !== expectedVersion) {
        throw new StorageConflictError('version')
      }
      return { op: 'delete', collection: collectionName, id }
    },

    planIncrement(key: string, amount: number, ttlMs: number): CounterMutation {
      const at = now()
      const counter = liveCounter(key, at)
      return counter
        ? { op: 'counter', key, value: counter.value + amount, expiresAt: counter.expiresAt }
        : { op: 'counter', key, value: amount, expiresAt: at + ttlMs }
    },

    /** Plans `hold`: the hold and its changes; `results` are the tallies' new values, in order. */
    planHold(hold: TallyHold): { mutations: Mutation[]; results: CounterResult[] } {
      const at = now()
      if (holds.has(hold.id) || isSettled(hold.id, at)) throw new StorageConflictError('unique')
      const tallyPlan = planTallies(at)
      const results = hold.changes.map((change) => tallyPlan.add(change))
      const entry: HoldEntry = {
        id: hold.id,
        owner: hold.owner,
        expiresAt: at + hold.leaseMs,
        changes: hold.changes.map(({ key, amount, ttlMs }) => ({ key, amount, ttlMs })),
      }
      return { mutations: [{ op: 'hold', hold: entry }, ...tallyPlan.mutations()], results: results.map((result) => ({ ...result })) }
    },

    /** Plans a batch of settlements: each id not settled yet is marked, its hold released, its changes added. */
    planSettle(settlements: ReadonlyArray<TallySettlement>): Mutation[] {
      const at = now()
      const tallyPlan = planTallies(at)
      const marks: Mutation[] = []
      for (const settlement of settlements) {
        if (isSettled(settlement.id, at)) continue
        marks.push({ op: 'settled', id: settlement.id, expiresAt: at + IN_PROCESS_SETTLEMENT_MEMORY_MS })
        const hold = holds.get(settlement.id)
        if (hold) marks.push(planRelease(hold, tallyPlan))
        for (const change of settlement.changes) tallyPlan.add(change)
      }
      return [...marks, ...tallyPlan.mutations()]
    },

    /** Plans new leases for the holds among `ids` still held. */
    planRenew(ids: ReadonlyArray<string>, leaseMs: number): HoldMutation[] {
      const expiresAt = now() + leaseMs
      const renewed = new Map<string, HoldMutation>()
      for (const id of ids) {
        const hold = holds.get(id)
        if (hold) renewed.set(id, { op: 'hold', hold: { ...hold, expiresAt } })
      }
      return [...renewed.values()]
    },

    /**
     * Plans the release of up to `limit` holds whose lease ran out; with `isEveryHold`, of any hold (a store only
     * one process opens at a time knows at start-up that every hold it finds was its predecessor's).
     */
    planReleaseExpired(limit: number, isEveryHold = false): { mutations: Mutation[]; released: number } {
      const at = now()
      const tallyPlan = planTallies(at)
      const releases: Mutation[] = []
      for (const hold of holds.values()) {
        if (releases.length >= limit) break
        if (isEveryHold || hold.expiresAt <= at) releases.push(planRelease(hold, tallyPlan))
      }
      return { mutations: [...releases, ...tallyPlan.mutations()], released: releases.length }
    },

    readTallies(keys: ReadonlyArray<string>): number[] {
      const at = now()
      return keys.map((key) => {
        const tally = tallies.get(key)
        return tally && tally.expiresAt > at ? tally.value : 0
      })
    },

    /** Performs a planned (or replayed) mutation. Takes ownership of `mutation.record`, which reads freeze when they hand it out. */
    apply(mutation: Mutation): void {
      switch (mutation.op) {
        case 'counter':
          counters.set(mutation.key, { value: mutation.value, expiresAt: mutation.expiresAt })
          sweepCounters()
          return
        case 'tally':
          tallies.set(mutation.key, { value: mutation.value, expiresAt: mutation.expiresAt })
          sweepTallies()
          return
        case 'hold':
          holds.set(mutation.hold.id, mutation.hold)
          return
        case 'unhold':
          holds.delete(mutation.id)
          return
        case 'settled':
          settled.set(mutation.id, mutation.expiresAt)
          sweepTallies()
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
      const record = collections.get(collectionName)?.records.get(id)
      return record ? (deepFreeze(record) as StoredRecord<T>) : null
    },

    findByUnique<T extends JsonObject>(collectionName: string, uniqueKey: string): StoredRecord<T> | null {
      const collection = collections.get(collectionName)
      const id = collection?.uniques.get(uniqueKey)
      const record = id === undefined ? undefined : collection?.records.get(id)
      return record ? (deepFreeze(record) as StoredRecord<T>) : null
    },

    list<T extends JsonObject>(collectionName: string, query: ListQuery = {}): ListResult<T> {
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

    /** How many records `collectionName` holds. */
    count(collectionName: string): number {
      const collection = collections.get(collectionName)
      return collection ? recordCount(collection.ordered) : 0
    },

    /** The ids of the first `limit` records of `collectionName` in list order: the oldest, for a collection sorted by time. */
    firstIds(collectionName: string, limit: number): string[] {
      const collection = collections.get(collectionName)
      return collection ? firstRecords(collection.ordered, limit).map((record) => record.id) : []
    },

    /** The live state as plain data; shares objects with the engine, so serialize it before the next write. */
    state(): EngineState {
      const at = now()
      const state: EngineState = { collections: {}, counters: [], tallies: [], holds: [...holds.values()], settled: [] }
      // In list order, so loading the state places each record at the end of its lists.
      for (const [name, collection] of collections) {
        if (collection.records.size > 0) state.collections[name] = [...sortedItems(collection.ordered)]
      }
      for (const [key, counter] of counters) {
        if (counter.expiresAt > at) state.counters.push({ key, ...counter })
      }
      for (const [key, tally] of tallies) {
        if (tally.expiresAt > at) state.tallies!.push({ key, ...tally })
      }
      for (const [id, expiresAt] of settled) {
        if (expiresAt > at) state.settled!.push({ id, expiresAt })
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
  for (const { key, value, expiresAt } of state.tallies ?? []) engine.apply({ op: 'tally', key, value, expiresAt })
  for (const hold of state.holds ?? []) engine.apply({ op: 'hold', hold })
  for (const { id, expiresAt } of state.settled ?? []) engine.apply({ op: 'settled', id, expiresAt })
}
