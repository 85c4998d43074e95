/**
 * What the SQL driver needs from a database: sessions that run `?`-placeholder statements, and the
 * few statements and error codes in which PostgreSQL, MySQL/MariaDB and SQLite differ. Everything else
 * (the record, unique and index statements, transactions, retries) is shared in `driver.ts`.
 */

import type { TallyHold, TallySettlement } from '../contract'

/** A value bound to a `?` placeholder. */
export type SqlValue = string | number | null

/** One result row, by column name. */
export type SqlRow = Record<string, unknown>

/** What one storage call uses: statements on a connection of its own. */
export interface SqlCall {
  /** Runs one statement with `?` placeholders and resolves to its rows (none for writes). */
  query(text: string, params?: readonly SqlValue[]): Promise<SqlRow[]>
  /**
   * Cuts the connection now, e.g. after a timeout or a failed ROLLBACK: whatever is in flight fails
   * and nothing queued is ever sent. A PostgreSQL session reconnects on its next call; a MySQL
   * session is discarded.
   */
  abort(): void
}

/**
 * One database connection, used by one storage call at a time (never shared, so a transaction
 * is simply `BEGIN` ... `COMMIT` on it).
 */
export interface SqlSession extends SqlCall {
  /** Marks the start of a storage call; statements of one call must all run on the same connection. */
  startCall(): void
  /** True once the session cannot be used again. */
  readonly isBroken: boolean
  /** Closes the connection, waiting at most `graceMs` for a polite goodbye. */
  end(graceMs: number): Promise<void>
}

/** Quoted (and schema-qualified) table names, plus the bare prefix for index names. */
export interface TableNames {
  records: string
  uniques: string
  indexes: string
  counters: string
  migrations: string
  /** The stored procedure that stores a batch of new records; only MySQL/MariaDB create it (see `migrations.ts`). */
  insertRecordsProcedure: string
  /** Tallies: the counters that holds and settlements move (src/storage/sql/migrations.ts, migration 3). */
  tallies: string
  holds: string
  /** Ids of holds and settlements: a hold's claim on its id, or a settlement remembered until it expires. */
  settled: string
  /** The stored procedures of the tally methods; only MySQL/MariaDB create them (src/storage/sql/mysql-tallies.ts). */
  holdProcedure: string
  settleProcedure: string
  renewProcedure: string
  releaseProcedure: string
  prefix: string
}

/** Runs `body` between the dialect's `BEGIN` and `COMMIT` on the call's connection, rolled back when it throws. */
export type InTransaction = <T>(body: () => Promise<T>) => Promise<T>

/**
 * The tally methods of the storage contract over one database, arguments already checked. Each is one round trip
 * where the database allows (one statement on PostgreSQL, one procedure call on MySQL/MariaDB), so the rows every
 * process contends for (the tallies) stay locked for one statement only, always in key order.
 */
export interface TallyStatements {
  /** Each change's tally after the hold (`value`, `expires_at`), in order; `null` when the id is held or settled. */
  hold(call: SqlCall, inTransaction: InTransaction, hold: TallyHold): Promise<SqlRow[] | null>
  /**
   * Applies the settlements not settled yet. Resolves `false` when the outcome of some of them was decided by a
   * write that committed while this one ran and that it could not see: everything else is applied, and sending the
   * same batch again decides those (it is idempotent).
   */
  settle(call: SqlCall, inTransaction: InTransaction, settlements: ReadonlyArray<TallySettlement>): Promise<boolean>
  /** How many of the (distinct) `ids` were held, now leased for `leaseMs` more. */
  renewHolds(call: SqlCall, inTransaction: InTransaction, ids: ReadonlyArray<string>, leaseMs: number): Promise<number>
  /** How many expired holds it released, at most `limit`. */
  releaseExpiredHolds(call: SqlCall, inTransaction: InTransaction, limit: number): Promise<number>
  /** The live tallies among the (distinct) `keys`, by key. */
  readTallies(call: SqlCall, keys: ReadonlyArray<string>): Promise<Map<string, number>>
  /** Deletes expired tallies and forgotten settlement ids, in bounded batches. */
  sweep(call: SqlCall): Promise<void>
}

/**
 * The rows that store a batch of new records of one collection, as the driver inserts them. JSON columns hold
 * the exact text `JSON.stringify` wrote.
 */
export interface NewRecordRows {
  collection: string
  records: Array<[id: string, version: number, data: string, sortKey: string, indexesJson: string, uniquesJson: string]>
  /** In key order, so concurrent writers lock them in the same order. */
  uniques: Array<[uniqueKey: string, recordId: string]>
  indexes: Array<[field: string, value: string, recordId: string]>
}

export type DialectName = 'postgres' | 'mysql' | 'sqlite'

export interface Dialect {
  readonly name: DialectName
  readonly tables: TableNames
  /** Opens a new session (PostgreSQL connects lazily, on the session's first statement). */
  connect(): Promise<SqlSession>
  /** The statement that opens a read-write transaction. */
  readonly beginStatement: string
  /**
   * What follows a `SELECT` that locks the rows it reads until the transaction ends: ` FOR UPDATE`, or nothing on
   * SQLite, whose write transactions (`BEGIN IMMEDIATE`) hold the whole database from their first statement.
   */
  readonly lockRowsClause: string
  /**
   * Whether one statement may insert into several tables (`WITH a AS (INSERT ...) INSERT ...`), all or
   * nothing without a transaction, so a batch of new records is one round trip. PostgreSQL can; MySQL and
   * MariaDB cannot, and get their one round trip from `insertNewRecords` instead.
   */
  readonly hasMultiTableInsert: boolean
  /**
   * Stores a batch of new records all or nothing in one round trip, for a dialect without `hasMultiTableInsert`
   * (MySQL/MariaDB: one call of a stored procedure). A taken id or unique key fails it as `isUniqueViolation`, with
   * nothing stored. Resolves `false`, having stored nothing, when it cannot be done here (no procedure, no right to
   * run it): the driver then inserts in a transaction.
   */
  insertNewRecords?(call: SqlCall, rows: NewRecordRows): Promise<boolean>
  /**
   * The one statement of a `list` call, for a dialect whose planner needs it written its own way: each row carries
   * `total` (the count of all matches) and one record of the page (`id` NULL when the page is empty), in list order.
   * `where` is in field order. Without it the driver's statement serves, whose index filters are correlated `EXISTS`
   * that PostgreSQL and MySQL turn into semi-joins (SQLite runs them once per record of the collection).
   */
  listStatement?(collection: string, where: ReadonlyArray<readonly [string, string]>, limit: number | undefined, offset: number): [string, SqlValue[]]
  /** `LIMIT ... OFFSET ...` for a page; `limit` undefined means all rows. */
  pageClause(limit: number | undefined, offset: number): { sql: string; params: SqlValue[] }
  /**
   * Adds `amount` to a counter in one atomic upsert using the database clock, and returns the row
   * (`value`, `expires_at`). Runs inside a transaction when `isIncrementTransactional`.
   */
  increment(call: SqlCall, key: string, amount: number, ttlMs: number): Promise<SqlRow>
  readonly isIncrementTransactional: boolean
  /** Deletes a bounded batch of expired counters. */
  readonly sweepCountersStatement: string
  readonly tallies: TallyStatements
  /** Decodes a key column: MySQL returns VARBINARY columns as bytes. */
  text(value: unknown): string
  /** Runs `task` while holding the migration lock of this schema (waits for other processes). */
  withMigrationLock<T>(call: SqlCall, task: () => Promise<T>): Promise<T>
  /** Creates the schema (PostgreSQL) or database (MySQL) when it is missing. */
  ensureContainer(call: SqlCall): Promise<void>
  migrationsTableExists(call: SqlCall): Promise<boolean>
  readonly createMigrationsTableStatement: string
  isUniqueViolation(error: unknown): boolean
  /** The connected user lacks a privilege the statement needs. */
  isPermissionDenied(error: unknown): boolean
  /** Deadlocks and lock timeouts: the whole transaction may simply run again. */
  isRetryable(error: unknown): boolean
  /** The database cannot answer (network, shutdown, overload, refused login): rendered as 503. */
  isUnavailable(error: unknown): boolean
}

/**
 * The database clock in Unix milliseconds, fixed for one statement (PostgreSQL's `statement_timestamp()`; MySQL's
 * `NOW(3)`, which a stored procedure fixes for the whole call; SQLite's `'now'`, fixed for one step of a statement).
 * Every process reads the same clock: the server's, or on SQLite the one machine's that all of them run on.
 */
export const NOW_MS = {
  postgres: 'floor(extract(epoch from statement_timestamp()) * 1000)::bigint',
  mysql: 'CAST(FLOOR(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)',
  sqlite: "CAST(unixepoch('subsec') * 1000 AS INTEGER)",
} as const satisfies Record<DialectName, string>

/** Settings a dialect receives from the validated options. */
export interface DialectSettings {
  /** Must never be logged: it may hold a password. */
  url: string
  schema: string | undefined
  tablePrefix: string
  queryTimeoutMs: number
  connectTimeoutMs: number
  /** How long one migration run may take, including waiting for another process's lock. */
  migrationTimeoutMs: number
}

/** Socket-level failures from Node, shared by both client libraries. */
export const NETWORK_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EADDRNOTAVAIL',
  'ENOENT', // a unix socket path that does not exist (yet)
  'ERR_SOCKET_CLOSED',
  'ERR_STREAM_DESTROYED',
])

/** The `code` property of an error, when it has a string one. */
export const errorCode = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}
