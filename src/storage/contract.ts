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
 * How long a store remembers at least that a settlement id was applied (ten minutes): sending it again within this
 * time changes nothing. A caller retries a settlement whose outcome it did not learn within seconds, so this covers
 * any retry but one after an outage longer than that which followed a success the caller did not see; it also
 * bounds what the memory costs (one short entry per request of the last ten minutes). A store in the caller's own
 * process, whose calls never succeed unseen, may forget sooner: nobody sends it a settlement again.
 */
export const SETTLEMENT_MEMORY_MS = 600_000

/**
 * How long a store whose calls run to their end in the caller's own process remembers a settled id (a minute): the
 * memory and file stores, and SQLite, whose statements run on the calling thread. A call to them never succeeds
 * without its caller seeing it (a failed journal append or transaction applies nothing), so no settlement is sent to
 * them again, and a minute keeps the memory, or the table, they spend on it small under load.
 */
export const IN_PROCESS_SETTLEMENT_MEMORY_MS = 60_000

/** The stores whose calls run in the caller's own process, which remember a settled id for `IN_PROCESS_SETTLEMENT_MEMORY_MS`. */
const IN_PROCESS_STORES: ReadonlySet<string> = new Set(['memory', 'file', 'sqlite'])

/** How long the store `name` remembers that a settlement id was applied: within it, sending the settlement again changes nothing. */
export const settlementMemoryOf = (name: string): number => (IN_PROCESS_STORES.has(name) ? IN_PROCESS_SETTLEMENT_MEMORY_MS : SETTLEMENT_MEMORY_MS)

/**
 * A reservation on tallies, leased to the process that made it: while the process lives it renews the lease,
 * and once the lease runs out any process may release the hold, so what a dead process held comes back.
 */
export interface TallyHold {
  /** Unique per reservation; the settlement that ends the reservation carries the same id. */
  id: string
  /** The process that renews it (its own random id), for diagnostics. */
  owner: string
  /** How long the hold lasts unless renewed, measured on the store's clock (a positive integer). */
  leaseMs: number
  /** What the hold adds, each to another tally; a tally it creates expires `ttlMs` later. At least one. */
  changes: CounterChange[]
}

/** The end of a reservation: what it really cost, added once per id. */
export interface TallySettlement {
  /** The id of the hold it ends, whether or not a hold was made under it. */
  id: string
  /** What it adds, each to another tally (none: the reservation served nothing). */
  changes: CounterChange[]
}

/**
 * One driver contract for memory, the embedded on-disk store, SQLite, Redis and SQL.
 * All methods may throw `StorageUnavailableError` (rendered 503) when the backend cannot answer.
 * Invalid arguments (an empty id, a negative offset, a non-positive TTL) are caller bugs and throw a `TypeError`.
 * They are checked in one place: every driver factory returns its driver behind `checkedDriver`
 * (src/storage/checked.ts), which checks each call's arguments once by these rules before the driver runs; a driver
 * itself checks only what its backend cannot store (a key too long for a column, text it cannot encode).
 */
export interface StorageDriver {
  /** Short driver name for logs and diagnostics (`memory`, `file`, `sqlite`, `redis`, `postgres`). */
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
   * Tallies are counters of their own (never those `increment` changes), moved only by leased holds and
   * idempotent settlements, so amounts that must balance (spend) stay exact across processes and faults: a
   * settlement sent again changes nothing, and a hold whose process died is released once its lease runs out.
   * The methods below work on the same tallies; every change of one hold or settlement is atomic with the rest of it.
   *
   * `hold` records the hold and adds its changes to their tallies in one atomic step, resolving with each tally's
   * new value (as `increment` would). An id that is held, or was settled within `SETTLEMENT_MEMORY_MS`, is a
   * `StorageConflictError('unique')` and changes nothing, so a hold that arrives after its own settlement (a
   * retried call, a statement the server ran late) never lands.
   */
  hold(hold: TallyHold): Promise<CounterResult[]>

  /**
   * Applies each settlement once per id, each atomically on its own and the batch in as few round trips as the
   * backend allows: marks the id settled, releases the hold of that id if it is still held (taking back what it
   * added from each tally that has not expired since), and adds the settlement's changes. An id settled before
   * changes nothing, so sending a batch again after a failure (or a timeout that hid a success) is safe. Ids in
   * one batch are distinct.
   */
  settle(settlements: ReadonlyArray<TallySettlement>): Promise<void>

  /** Extends the lease of each hold among `ids` still held to `leaseMs` from now; resolves with how many were held. */
  renewHolds(ids: ReadonlyArray<string>, leaseMs: number): Promise<number>

  /**
   * Releases up to `limit` holds whose lease has run out, as `settle` releases a hold but without settling its id
   * (its owner may still settle it: that adds the real cost and finds no hold to release). Resolves with how many.
   */
  releaseExpiredHolds(limit: number): Promise<number>

  /** Each tally's current value, in order: 0 for one absent or expired. */
  readTallies(keys: ReadonlyArray<string>): Promise<number[]>

  /**
   * Waits for writes already accepted, then releases connections, files and timers. Afterwards every
   * method rejects; calling `close` again is harmless.
   */
  close(): Promise<void>
}
