/**
 * The argument checks of the storage contract, and the helpers drivers build records with. A bad argument is a bug in
 * the caller, not a client error or an outage, so the checks throw a plain `TypeError` (rendered as a generic 500).
 * They run in one place, the front door every driver factory returns its driver behind (`checkedDriver`,
 * src/storage/checked.ts), once per call; a driver assumes well-formed arguments and checks only what its own
 * backend cannot store (key lengths, NUL characters, lone surrogates).
 */
import type { CounterChange, JsonObject, ListQuery, RecordInput, StoredRecord, TallyHold, TallySettlement } from './contract'

function fail(message: string): never {
  throw new TypeError(`modelgate storage: ${message}`)
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const isNonNegativeInteger = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0

/** Throws unless `collection` is a non-empty string. */
export const assertCollection = (collection: unknown): void => {
  if (typeof collection !== 'string' || collection === '') fail('collection must be a non-empty string')
}

/** Throws unless `id` is a non-empty string. */
export const assertId = (id: unknown): void => {
  if (typeof id !== 'string' || id === '') fail('id must be a non-empty string')
}

/** Throws unless `uniqueKey` is a non-empty string. */
export const assertUniqueKey = (uniqueKey: unknown): void => {
  if (typeof uniqueKey !== 'string' || uniqueKey === '') fail('uniqueKey must be a non-empty string')
}

/** Throws unless `version` could be a record version (an integer >= 1). */
export const assertVersion = (version: unknown, name = 'expectedVersion'): void => {
  if (!Number.isSafeInteger(version) || (version as number) < 1) fail(`${name} must be an integer >= 1`)
}

const assertStringRecord = (value: unknown, name: string): void => {
  if (!isPlainObject(value)) return fail(`${name} must be an object of strings`)
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== 'string') fail(`${name}.${key} must be a string`)
  }
}

/** Deeper data is copied as any other: a store keeps records, not arbitrarily nested documents. */
const MAX_HANDED_OVER_DEPTH = 64

const isJsonObject = (value: object): boolean => {
  const prototype = Object.getPrototypeOf(value) as unknown
  return prototype === Object.prototype || prototype === null
}

/**
 * Whether `data` is already what a JSON round trip of it gives back, so a driver may keep it as it is
 * (`RecordInput.isDataHandedOver`). One walk, no copy: a fraction of `JSON.parse(JSON.stringify(data))`.
 */
export const isJsonForm = (data: unknown): boolean => {
  const seen = new Set<object>()
  const walk = (value: unknown, depth: number): boolean => {
    switch (typeof value) {
      case 'string':
      case 'boolean':
        return true
      case 'number':
        // -0 comes back from JSON as 0.
        return Number.isFinite(value) && !Object.is(value, -0)
      case 'object': {
        if (value === null) return true
        // Reached twice (a cycle, or shared): its JSON form would be two copies, or nothing at all.
        if (depth > MAX_HANDED_OVER_DEPTH || seen.has(value)) return false
        seen.add(value)
        if (Array.isArray(value)) {
          for (let index = 0; index < value.length; index++) if (!(index in value) || !walk(value[index], depth + 1)) return false
          return true
        }
        if (!isJsonObject(value)) return false
        for (const key in value) if (!walk((value as Record<string, unknown>)[key], depth + 1)) return false
        return true
      }
      default:
        return false
    }
  }
  return walk(data, 0)
}

// Data handed over in its JSON form is kept; anything else is copied as if it had not been handed over.
const jsonFormOf = <T>(data: T, isHandedOver: boolean | undefined): T =>
  isHandedOver === true && isJsonForm(data) ? data : (JSON.parse(JSON.stringify(data)) as T)

/** Throws unless `input` is a valid `RecordInput`. */
export const assertRecordInput = (input: RecordInput): void => {
  if (!isPlainObject(input)) fail('input must be an object')
  assertId(input.id)
  if (!isPlainObject(input.data)) fail('input.data must be a JSON object')
  if (input.indexes !== undefined) assertStringRecord(input.indexes, 'input.indexes')
  if (input.uniques !== undefined) {
    if (!Array.isArray(input.uniques)) fail('input.uniques must be an array of strings')
    for (const key of input.uniques) {
      if (typeof key !== 'string' || key === '') fail('input.uniques must hold non-empty strings')
    }
    // A record claiming one key twice would conflict with itself in a SQL driver; refuse it everywhere.
    if (new Set(input.uniques).size !== input.uniques.length) fail('input.uniques must not repeat a key')
  }
  if (input.sortKey !== undefined && typeof input.sortKey !== 'string') fail('input.sortKey must be a string')
}

/** Throws unless `inputs` is an array of valid `RecordInput`s. */
export const assertRecordInputs = (inputs: ReadonlyArray<RecordInput>): void => {
  if (!Array.isArray(inputs)) fail('inputs must be an array')
  for (const input of inputs) assertRecordInput(input)
}

/**
 * Builds the record a `RecordInput` (checked already, `assertRecordInput`) describes at `version`, sharing nothing with
 * the input but handed-over data. `data` goes through a JSON round trip so every driver stores exactly what a JSON
 * backend would (`undefined` properties disappear); handed-over data already in that form is kept as it is.
 */
export const toStoredRecord = <T extends JsonObject>(input: RecordInput<T>, version: number): StoredRecord<T> => ({
  id: input.id,
  data: jsonFormOf(input.data, input.isDataHandedOver),
  version,
  indexes: { ...input.indexes },
  uniques: [...(input.uniques ?? [])],
  sortKey: input.sortKey ?? '',
})

/** Throws unless `query` is a valid `ListQuery`. */
export const assertListQuery = (query: ListQuery): void => {
  if (!isPlainObject(query)) return fail('query must be an object')
  if (query.where !== undefined) assertStringRecord(query.where, 'query.where')
  if (query.offset !== undefined && !isNonNegativeInteger(query.offset))
    fail('query.offset must be a non-negative integer')
  if (query.limit !== undefined && !isNonNegativeInteger(query.limit))
    fail('query.limit must be a non-negative integer')
}

/** Throws unless the arguments of `increment` are usable by every backend (Redis needs integer TTLs). */
export const assertCounterArguments = (key: unknown, amount: unknown, ttlMs: unknown): void => {
  if (typeof key !== 'string' || key === '') fail('counter key must be a non-empty string')
  if (typeof amount !== 'number' || !Number.isFinite(amount)) fail('amount must be a finite number')
  if (!Number.isSafeInteger(ttlMs) || (ttlMs as number) <= 0) fail('ttlMs must be a positive integer')
}

/** Throws unless `changes` are usable by `incrementMany`: each one the arguments of an `increment`, of another counter. */
export const assertCounterChanges = (changes: ReadonlyArray<CounterChange>): void => {
  if (!Array.isArray(changes)) fail('changes must be an array')
  for (const change of changes) if (!isPlainObject(change)) fail('changes must hold objects')
  if (new Set(changes.map((change) => change.key)).size !== changes.length) fail('incrementMany changes must name distinct counters')
  for (const change of changes) assertCounterArguments(change.key, change.amount, change.ttlMs)
}

/** Code-unit order, the same on every machine (never `localeCompare`): by `sortKey`, then by `id`. */
export const compareRecords = (a: StoredRecord, b: StoredRecord): number => {
  if (a.sortKey !== b.sortKey) return a.sortKey < b.sortKey ? -1 : 1
  if (a.id !== b.id) return a.id < b.id ? -1 : 1
  return 0
}

const assertTallyChanges = (changes: unknown, name: string): void => {
  if (!Array.isArray(changes)) fail(`${name} must be an array`)
  for (const change of changes as CounterChange[]) {
    if (!isPlainObject(change)) fail(`${name} must hold objects`)
    assertCounterArguments(change.key, change.amount, change.ttlMs)
  }
  if (new Set((changes as CounterChange[]).map((change) => change.key)).size !== changes.length) fail(`${name} must name distinct tallies`)
}

/** Throws unless `leaseMs` is a positive integer (Redis takes integer milliseconds). */
export const assertLeaseMs = (leaseMs: unknown): void => {
  if (!Number.isSafeInteger(leaseMs) || (leaseMs as number) <= 0) fail('leaseMs must be a positive integer')
}

/** Throws unless `hold` is a usable `TallyHold`: an id, an owner, a lease and at least one change. */
export const assertTallyHold = (hold: TallyHold): void => {
  if (!isPlainObject(hold)) fail('hold must be an object')
  assertId(hold.id)
  if (typeof hold.owner !== 'string' || hold.owner === '') fail('hold.owner must be a non-empty string')
  assertLeaseMs(hold.leaseMs)
  assertTallyChanges(hold.changes, 'hold.changes')
  if (hold.changes.length === 0) fail('hold.changes must hold at least one change')
}

/** Throws unless `settlements` is an array of settlements with distinct ids. */
export const assertTallySettlements = (settlements: ReadonlyArray<TallySettlement>): void => {
  if (!Array.isArray(settlements)) fail('settlements must be an array')
  for (const settlement of settlements) {
    if (!isPlainObject(settlement)) fail('settlements must hold objects')
    assertId(settlement.id)
    assertTallyChanges(settlement.changes, 'settlement.changes')
  }
  if (new Set(settlements.map((settlement) => settlement.id)).size !== settlements.length) fail('settlements must have distinct ids')
}

/** Throws unless `ids` is an array of non-empty strings. */
export const assertIds = (ids: ReadonlyArray<string>): void => {
  if (!Array.isArray(ids)) fail('ids must be an array')
  for (const id of ids) assertId(id)
}

/** Throws unless `keys` is an array of non-empty strings. */
export const assertTallyKeys = (keys: ReadonlyArray<string>): void => {
  if (!Array.isArray(keys)) fail('keys must be an array')
  for (const key of keys) if (typeof key !== 'string' || key === '') fail('tally key must be a non-empty string')
}

/** Throws unless `limit` is a positive integer. */
export const assertReleaseLimit = (limit: unknown): void => {
  if (!Number.isSafeInteger(limit) || (limit as number) <= 0) fail('limit must be a positive integer')
}
