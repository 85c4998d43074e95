/**
 * The storage contract: every piece of persistent state goes through a `StorageDriver`.
 *
 * It is shaped for Redis and SQL rather than for a Map: records live in named collections,
 * carry a version for compare-and-set, declare the unique keys they claim (so "create if absent"
 * is one atomic step on the server) and the equality indexes a listing may filter on. A driver
 * that cannot do one of these atomically must not claim to implement the contract.
 */

/** A JSON value as drivers store it. Records must survive `JSON.stringify` / `JSON.parse` unchanged. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }
export type JsonObject = { [key: string]: JsonValue }

/** What a caller hands to `create` and `update`. */
export interface RecordInput<T extends JsonObject = JsonObject> {
  /** The record's id, unique within its collection. */
  id: string
  /** Stored in its JSON form, as `JSON.stringify` writes it (`undefined` properties disappear). */
  data: T
  /**
   * True when `data` was built for this call alone and the caller never reads or changes it afterwards: a driver
   * may then keep it instead of a copy (the memory and file stores freeze it, and it is what `get` hands out),
   * provided it is already in its JSON form: strings, finite numbers, booleans, null, arrays and plain objects
   * only, no `undefined` property or array hole, no object reached twice. Data that is not is copied as usual.
   */
  isDataHandedOver?: boolean
  /**
   * Equality indexes a listing may filter on (`{ accountId: '...', provider: 'openai' }`).
   * Only these fields can appear in `ListQuery.where`.
   */
  indexes?: Record<string, string>
  /**
   * Unique keys this record claims within its collection (`'slug:<account>:<slug>'`).
   * `create` and `update` fail with a `StorageConflictError` of kind `unique` when another record holds one.
   */
  uniques?: string[]
  /**
   * Listing order: ascending by `sortKey`, then by `id`, both compared by UTF-16 code units (plain `<`,
   * never locale-aware; SQL drivers need a binary collation). Defaults to the empty string.
   */
  sortKey?: string
}

/**
 * A record as the store holds it. Treat records a driver returns as read-only: the memory and file
 * drivers hand out their own frozen copy instead of cloning on every read (a mutation throws).
 */
export interface StoredRecord<T extends JsonObject = JsonObject> {
  id: string
  data: T
  /** Starts at 1 and grows by one on every successful update. */
  version: number
  indexes: Record<string, string>
  uniques: string[]
  sortKey: string
}

export interface ListQuery {
  /** Equality filters on declared indexes; all must match. */
  where?: Record<string, string>
  /** Records to skip (>= 0). */
  offset?: number
  /** Records to return (>= 0); all when omitted. */
  limit?: number
}

export interface ListResult<T extends JsonObject = JsonObject> {
  items: StoredRecord<T>[]
  /** How many records match `where`, ignoring offset and limit. */
  totalCount: number
}

export interface CounterResult {
  value: number
  /** Unix milliseconds when the counter resets. */
  expiresAt: number
}

/** One increment of `incrementMany`: the arguments of `increment`. */
export interface CounterChange {
  key: string
  amount: number
  ttlMs: number
}

/**
 * One driver contract for memory, the embedded on-disk store, Redis and SQL.
 * All methods may throw `StorageUnavailableError` (rendered 503) when the backend cannot answer.
 * Invalid arguments (an empty id, a negative offset, a non-positive TTL) are caller bugs and throw a `TypeError`.
 */
export interface StorageDriver {
  /** Short driver name for logs and diagnostics (`memory`, `file`, `redis`, `postgres`). */
  readonly name: string

  /**
   * Inserts a record that must not exist yet. Atomic: of many concurrent creates with the same id
   * or the same unique key, exactly one succeeds and the others throw `StorageConflictError('unique')`.
   */
  create<T extends JsonObject>(collection: string, input: RecordInput<T>): Promise<StoredRecord<T>>

  /**
   * Creates several records in one call, each as `create` would (atomically, on its own), and the batch in
   * as few round trips as the backend allows (one script, one transaction, one journal append). Resolves in
   * input order with each stored record, or `null` for one whose id or a unique key was already taken
   * (by a stored record or an earlier input): a conflict never fails the others. When it rejects, some
   * records may be stored and others not; sending the same batch again is safe, since taken ids come back `null`.
   */
  createMany<T extends JsonObject>(collection: string, inputs: RecordInput<T>[]): Promise<Array<StoredRecord<T> | null>>

  /** Reads one record by id; `null` when absent. */
  get<T extends JsonObject>(collection: string, id: string): Promise<StoredRecord<T> | null>

  /** Reads the record that holds a unique key; `null` when none does. */
  findByUnique<T extends JsonObject>(collection: string, uniqueKey: string): Promise<StoredRecord<T> | null>

  /**
   * Compare-and-set: replaces the record only while its version still equals `expectedVersion`.
   * Returns the new record, `null` when the record does not exist, and throws
   * `StorageConflictError('version')` when it changed meanwhile, or `('unique')` when a new unique key is taken.
   * `input.id` must equal `id`. Indexes, uniques and sortKey are replaced by the input's.
   */
  update<T extends JsonObject>(
    collection: string,
    id: string,
    expectedVersion: number,
    input: RecordInput<T>,
  ): Promise<StoredRecord<T> | null>

  /**
   * Removes a record and frees its unique keys. With `expectedVersion`, only when it still matches
   * (else `StorageConflictError('version')`). Resolves `false` when there was nothing to delete.
   */
  delete(collection: string, id: string, expectedVersion?: number): Promise<boolean>

  /** Lists records matching `where`, ordered by `sortKey` then `id`, with the total match count. */
  list<T extends JsonObject>(collection: string, query?: ListQuery): Promise<ListResult<T>>

  /**
   * Atomically adds `amount` (any finite number) to a counter that expires `ttlMs` (a positive integer)
   * after it was first created; later increments do not extend it. Once the clock reaches `expiresAt`
   * the next increment starts a new counter at `amount`. For rate limits and quotas.
   */
  increment(key: string, amount: number, ttlMs: number): Promise<CounterResult>

  /**
   * Optional: several increments of distinct counters in one call, each atomic on its own (not all or
   * nothing), resolving with each counter's result in order. A driver offers it where one call costs less
   * than many (the file driver appends and syncs its journal once); without it, callers send concurrent
   * `increment`s.
   */
  incrementMany?(changes: ReadonlyArray<CounterChange>): Promise<CounterResult[]>

  /**
   * Waits for writes already accepted, then releases connections, files and timers. Afterwards every
   * method rejects; calling `close` again is harmless.
   */
  close(): Promise<void>
}
