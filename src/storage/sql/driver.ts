/**
 * The `StorageDriver` over a SQL dialect. Every write is one transaction on one connection (or, for
 * new records and for every tally method, one statement on PostgreSQL, one procedure call on MySQL/MariaDB):
 * the record row, its unique-key rows and its index rows change together or not at all. Unique keys
 * and ids are claimed by primary keys, so "create if absent" is decided by the database, never by a
 * read followed by a write; compare-and-set reads the row with `FOR UPDATE` first. The tally statements live
 * with their dialect (`postgres-tallies.ts`, `mysql-tallies.ts`).
 */
import { isGatewayError, StorageConflictError, StorageUnavailableError } from '../../core/errors'
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
} from '../contract'
import { checkedDriver } from '../checked'
import { toStoredRecord } from '../validate'
import type { Dialect, InTransaction, NewRecordRows, SqlCall, SqlRow, SqlValue, TableNames } from './dialect'
import { assertStorableKey, assertStorableRecord, isStorableKey, KEY_LIMITS } from './keys'
import { migrate } from './migrations'
import { createSessionPool, SqlConnectionLostError, SqlPoolClosedError, SqlTimeoutError, type SessionPool } from './pool'

export interface SqlDriverSettings {
  /** Driver name for logs: `postgres`, `mysql` or `mariadb`. */
  name: string
  loadDialect: () => Promise<Dialect>
  poolSize: number
  /**
   * The pool this driver's calls run in, when the dialect shares one between drivers (SQLite: one connection per file
   * and process); by default a pool of `poolSize` sessions of its own.
   */
  createPool?: (dialect: Dialect) => SessionPool
  queryTimeoutMs: number
  migrationTimeoutMs: number
}

/** Attempts per write when the database reports a deadlock or lock timeout. */
const MAX_ATTEMPTS = 4
/** How long `close()` lets each connection say goodbye before cutting it. */
const CLOSE_GRACE_MS = 1_000
/** Expired counters, tallies and settled ids are deleted in small batches, at most this often per driver. */
const SWEEP_INTERVAL_MS = 60_000
/**
 * Times one call sends a settlement batch when writes committed while it ran left some of it undecided (see
 * `TallyStatements.settle`): each attempt sees every write that committed before it, and only another write of the
 * same id committing meanwhile sends it again.
 */
const MAX_SETTLE_ROUNDS = 8

const RECORD_COLUMNS = 'r.id, r.version, r.data, r.sort_key, r.indexes_json, r.uniques_json'

/** Strings in code-unit order, so concurrent writers lock rows in the same order. */
const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

const placeholders = (rows: number, columns: number) =>
  Array.from({ length: rows }, () => `(${Array.from({ length: columns }, () => '?').join(', ')})`).join(', ')

/** One statement with `?` placeholders, and the values bound to them in order. */
type Statement = [text: string, params: SqlValue[]]

const insertRows = (table: string, columns: string, rows: SqlValue[][]): Statement => [
  `INSERT INTO ${table} (${columns}) VALUES ${placeholders(rows.length, rows[0]!.length)}`,
  rows.flat(),
]

/** Unique-key rows (`[key, record id]`), in key order, so concurrent writers lock them in the same order. */
const uniqueRows = (tables: TableNames, collection: string, claims: Array<readonly [string, string]>): Statement =>
  insertRows(
    tables.uniques,
    'collection, unique_key, record_id',
    [...claims].sort(([a], [b]) => byCodeUnit(a, b)).map(([key, id]) => [collection, key, id]),
  )

/** Index rows (`[field, value, record id]`). */
const indexRows = (tables: TableNames, collection: string, entries: Array<[string, string, string]>): Statement =>
  insertRows(tables.indexes, 'collection, field, value, record_id', entries.map((entry) => [collection, ...entry]))

/** The rows of new records: their own, their unique keys' (in key order) and their index entries'. */
const newRecordRows = (collection: string, records: StoredRecord<JsonObject>[]): NewRecordRows => ({
  collection,
  records: records.map((record) => [
    record.id,
    record.version,
    JSON.stringify(record.data),
    record.sortKey,
    JSON.stringify(record.indexes),
    JSON.stringify(record.uniques),
  ]),
  uniques: records
    .flatMap((record) => record.uniques.map((key): [string, string] => [key, record.id]))
    .sort(([a], [b]) => byCodeUnit(a, b)),
  indexes: records.flatMap((record) =>
    Object.entries(record.indexes).map(([field, value]): [string, string, string] => [field, value, record.id]),
  ),
})

/** The inserts that store new records: their rows, then their unique-key rows and index rows (when they have any). */
const newRecordInserts = (tables: TableNames, rows: NewRecordRows): Statement[] => [
  insertRows(
    tables.records,
    'collection, id, version, data, sort_key, indexes_json, uniques_json',
    rows.records.map((row) => [rows.collection, ...row]),
  ),
  ...(rows.uniques.length > 0 ? [uniqueRows(tables, rows.collection, rows.uniques)] : []),
  ...(rows.indexes.length > 0 ? [indexRows(tables, rows.collection, rows.indexes)] : []),
]

/**
 * Several inserts as one statement (`WITH insert_0 AS (INSERT ...) INSERT ...`), for a dialect with
 * `hasMultiTableInsert`: placeholders count in text order, which is the order of the inserts' values.
 */
const asOneStatement = (inserts: Statement[]): Statement => {
  const [text, params] = inserts.at(-1)!
  const preceding = inserts.slice(0, -1)
  if (preceding.length === 0) return [text, params]
  const withClause = preceding.map(([insert], index) => `insert_${index} AS (${insert})`).join(', ')
  return [`WITH ${withClause} ${text}`, [...preceding.flatMap(([, values]) => values), ...params]]
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const unavailable = (cause: unknown) => new StorageUnavailableError('Storage is unavailable', { cause })

interface Backend {
  dialect: Dialect
  pool: SessionPool
}

export const createSqlDriver = (settings: SqlDriverSettings) => {
  let backend: Promise<Backend> | undefined
  let opened: Backend | undefined
  let migrating: Promise<void> | undefined
  let isClosed = false
  let closing: Promise<void> | undefined
  let lastSweepAt = Number.NEGATIVE_INFINITY

  /** Client library failures are the caller's to see as is (not installed is not an outage). */
  const loadBackend = async (): Promise<Backend> => {
    const dialect = await settings.loadDialect()
    const pool = settings.createPool?.(dialect) ?? createSessionPool({ size: settings.poolSize, connect: dialect.connect })
    if (isClosed) await pool.close(0)
    return { dialect, pool }
  }

  /** Maps driver and network failures to 503; conflicts, argument errors and bugs pass unchanged. */
  const toStorageError = (dialect: Dialect, error: unknown): unknown => {
    if (isGatewayError(error)) return error
    if (error instanceof SqlPoolClosedError) return new StorageUnavailableError('Storage is closed')
    if (error instanceof SqlTimeoutError || error instanceof SqlConnectionLostError || dialect.isUnavailable(error)) {
      return unavailable(error)
    }
    return error
  }

  /**
   * Loads the client and migrates once. A failed attempt is not remembered: the next call tries
   * again, so a gateway started before its database recovers by itself.
   */
  const ready = async (): Promise<Backend> => {
    if (isClosed) throw new StorageUnavailableError('Storage is closed')
    if (opened) return opened
    backend ??= loadBackend()
    const loaded = await backend
    migrating ??= loaded.pool
      .run(settings.migrationTimeoutMs, (call) => migrate(call, loaded.dialect))
      .then(
        () => {
          opened = loaded
        },
        (error: unknown) => {
          migrating = undefined
          const mapped = toStorageError(loaded.dialect, error)
          if (isGatewayError(mapped)) throw mapped
          throw new Error(`modelgate: could not migrate the SQL storage: ${(error as Error)?.message ?? error}`, {
            cause: error,
          })
        },
      )
    await migrating
    return loaded
  }

  /** Runs one storage call on a session of its own, within the query timeout; `isWrite` when it may change anything. */
  const call = async <T>(task: (call: SqlCall, dialect: Dialect) => Promise<T>, isWrite = false): Promise<T> => {
    const { dialect, pool } = await ready()
    try {
      return await pool.run(settings.queryTimeoutMs, (sqlCall) => task(sqlCall, dialect), { isWrite })
    } catch (error) {
      throw toStorageError(dialect, error)
    }
  }

  const assertCounterKey = (key: string): void => assertStorableKey(key, 'counter key', KEY_LIMITS.counterKey)

  const toCounterResult = (row: SqlRow): CounterResult => ({ value: Number(row.value), expiresAt: Number(row.expires_at) })

  /** Runs `work` again from the start after a deadlock or lock timeout, a few times at most. */
  const withRetries = async <T>(dialect: Dialect, work: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await work()
      } catch (error) {
        if (attempt >= MAX_ATTEMPTS || !dialect.isRetryable(error)) throw error
        await sleep(5 + Math.random() * 20 * attempt)
      }
    }
  }

  /** Runs `body` between `BEGIN` and `COMMIT` on `sqlCall`, rolled back when it throws. */
  const inTransaction = async <T>(sqlCall: SqlCall, dialect: Dialect, body: () => Promise<T>): Promise<T> => {
    await sqlCall.query(dialect.beginStatement)
    let result: T
    try {
      result = await body()
    } catch (error) {
      // A connection whose rollback failed is in an unknown state: cut it rather than reuse it.
      await sqlCall.query('ROLLBACK').catch(() => sqlCall.abort())
      throw error
    }
    await sqlCall.query('COMMIT')
    return result
  }

  /** Runs `body` in a transaction, again from the start after a deadlock or lock timeout. */
  const transaction = <T>(body: (call: SqlCall, dialect: Dialect) => Promise<T>): Promise<T> =>
    call((sqlCall, dialect) => withRetries(dialect, () => inTransaction(sqlCall, dialect, () => body(sqlCall, dialect))), true)

  const assertOpen = () => {
    if (isClosed) throw new StorageUnavailableError('Storage is closed')
  }

  const toRecord = <T extends JsonObject>(dialect: Dialect, row: SqlRow): StoredRecord<T> => ({
    id: dialect.text(row.id),
    data: JSON.parse(String(row.data)) as T,
    version: Number(row.version),
    indexes: JSON.parse(String(row.indexes_json)) as Record<string, string>,
    uniques: JSON.parse(String(row.uniques_json)) as string[],
    sortKey: dialect.text(row.sort_key),
  })

  /** Inserts unique-key rows; a key held by anyone (even this record's id space is separate) is a conflict. */
  const claimUniques = async (sqlCall: SqlCall, dialect: Dialect, collection: string, id: string, keys: string[]) => {
    if (keys.length === 0) return
    await sqlCall.query(...uniqueRows(dialect.tables, collection, keys.map((key) => [key, id])))
  }

  const insertIndexes = async (
    sqlCall: SqlCall,
    dialect: Dialect,
    collection: string,
    id: string,
    entries: Array<[string, string]>,
  ) => {
    if (entries.length === 0) return
    await sqlCall.query(...indexRows(dialect.tables, collection, entries.map(([field, value]) => [field, value, id])))
  }

  /**
   * Stores new records with their unique-key and index rows, all or none; a taken id or unique key is a
   * unique conflict. One round trip where the dialect allows (one statement, or its `insertNewRecords`), else
   * one transaction.
   */
  const insertNew = (collection: string, records: StoredRecord<JsonObject>[]): Promise<void> => {
    const rows = newRecordRows(collection, records)
    return call((sqlCall, dialect) =>
      withRetries(dialect, async () => {
        if (dialect.hasMultiTableInsert) {
          await asConflict(dialect, sqlCall.query(...asOneStatement(newRecordInserts(dialect.tables, rows))))
          return
        }
        if (dialect.insertNewRecords && (await asConflict(dialect, dialect.insertNewRecords(sqlCall, rows)))) return
        await inTransaction(sqlCall, dialect, async () => {
          for (const insert of newRecordInserts(dialect.tables, rows)) await asConflict(dialect, sqlCall.query(...insert))
        })
      }),
      true,
    )
  }

  const releaseUniques = async (sqlCall: SqlCall, dialect: Dialect, collection: string, id: string, keys: string[]) => {
    if (keys.length === 0) return
    await sqlCall.query(
      `DELETE FROM ${dialect.tables.uniques} WHERE collection = ? AND record_id = ? AND unique_key IN (${keys.map(() => '?').join(', ')})`,
      [collection, id, ...[...keys].sort(byCodeUnit)],
    )
  }

  const deleteIndexes = async (
    sqlCall: SqlCall,
    dialect: Dialect,
    collection: string,
    id: string,
    entries: Array<[string, string]>,
  ) => {
    if (entries.length === 0) return
    await sqlCall.query(
      `DELETE FROM ${dialect.tables.indexes} WHERE collection = ? AND record_id = ? AND (${entries
        .map(() => '(field = ? AND value = ?)')
        .join(' OR ')})`,
      [collection, id, ...entries.flat()],
    )
  }

  /** Turns a duplicate-key error inside a write into the contract's unique conflict. */
  const asConflict = async <T>(dialect: Dialect, work: Promise<T>): Promise<T> => {
    try {
      return await work
    } catch (error) {
      if (dialect.isUniqueViolation(error)) throw new StorageConflictError('unique')
      throw error
    }
  }

  /** Locks the record's row for the rest of the transaction; `undefined` when it does not exist. */
  const lockRecord = async (sqlCall: SqlCall, dialect: Dialect, collection: string, id: string) => {
    const rows = await sqlCall.query(
      `SELECT version, indexes_json, uniques_json FROM ${dialect.tables.records} WHERE collection = ? AND id = ?${dialect.lockRowsClause}`,
      [collection, id],
    )
    const row = rows[0]
    if (!row) return undefined
    return {
      version: Number(row.version),
      indexes: JSON.parse(String(row.indexes_json)) as Record<string, string>,
      uniques: JSON.parse(String(row.uniques_json)) as string[],
    }
  }

  const sweepExpired = (pool: SessionPool, dialect: Dialect) => {
    const now = performance.now()
    if (now - lastSweepAt < SWEEP_INTERVAL_MS) return
    lastSweepAt = now
    // Best effort and off the caller's path: an expired counter, tally or settled id left behind is harmless.
    // One session for all of it, so a sweep never takes more than one connection from the callers.
    void pool
      .run(settings.queryTimeoutMs, async (sqlCall) => {
        await sqlCall.query(dialect.sweepCountersStatement)
        await dialect.tallies.sweep(sqlCall)
      })
      .catch(() => {})
  }

  /** Runs a tally method on a session of its own, again from the start after a deadlock or lock timeout. */
  const tallyCall = async <T>(task: (call: SqlCall, dialect: Dialect, inTransaction: InTransaction) => Promise<T>): Promise<T> => {
    const result = await call(
      (sqlCall, dialect) => withRetries(dialect, () => task(sqlCall, dialect, (body) => inTransaction(sqlCall, dialect, body))),
      true,
    )
    // The first sweep waits an interval: run at once, it would take the connection the caller's next call is about to
    // reuse, and make that call open a new one.
    if (lastSweepAt === Number.NEGATIVE_INFINITY) lastSweepAt = performance.now()
    else if (opened) sweepExpired(opened.pool, opened.dialect)
    return result
  }

  const assertTallyKey = (key: string) => assertStorableKey(key, 'tally key', KEY_LIMITS.counterKey)

  // Arguments arrive checked (`checkedDriver` below); only what the key columns cannot store is checked here.
  const driver: StorageDriver = {
    name: settings.name,

    async create<T extends JsonObject>(collection: string, input: RecordInput<T>): Promise<StoredRecord<T>> {
      assertOpen()
      const record = toStoredRecord(input, 1)
      assertStorableRecord(collection, record)
      await insertNew(collection, [record])
      return record
    },

    async createMany<T extends JsonObject>(collection: string, inputs: RecordInput<T>[]): Promise<Array<StoredRecord<T> | null>> {
      assertOpen()
      const records = inputs.map((input) => toStoredRecord(input, 1))
      for (const record of records) assertStorableRecord(collection, record)
      if (records.length === 0) return []
      try {
        // The usual batch (fresh ids, no unique keys) is one write of multi-row inserts.
        await insertNew(collection, records)
        return records
      } catch (error) {
        if (!(error instanceof StorageConflictError)) throw error
      }
      // A taken id or key rolled the whole batch back: each record on its own says which ones.
      const created: Array<StoredRecord<T> | null> = []
      for (const input of inputs) {
        try {
          created.push(await driver.create(collection, input))
        } catch (error) {
          if (!(error instanceof StorageConflictError) || error.kind !== 'unique') throw error
          created.push(null)
        }
      }
      return created
    },

    async get<T extends JsonObject>(collection: string, id: string): Promise<StoredRecord<T> | null> {
      assertOpen()
      if (!isStorableKey(collection, KEY_LIMITS.collection) || !isStorableKey(id, KEY_LIMITS.id)) return null
      return call(async (sqlCall, dialect) => {
        const rows = await sqlCall.query(
          `SELECT ${RECORD_COLUMNS} FROM ${dialect.tables.records} r WHERE r.collection = ? AND r.id = ?`,
          [collection, id],
        )
        return rows[0] ? toRecord<T>(dialect, rows[0]) : null
      })
    },

    async findByUnique<T extends JsonObject>(collection: string, uniqueKey: string): Promise<StoredRecord<T> | null> {
      assertOpen()
      if (!isStorableKey(collection, KEY_LIMITS.collection) || !isStorableKey(uniqueKey, KEY_LIMITS.uniqueKey)) {
        return null
      }
      return call(async (sqlCall, dialect) => {
        const rows = await sqlCall.query(
          `SELECT ${RECORD_COLUMNS} FROM ${dialect.tables.uniques} u
           JOIN ${dialect.tables.records} r ON r.collection = u.collection AND r.id = u.record_id
           WHERE u.collection = ? AND u.unique_key = ?`,
          [collection, uniqueKey],
        )
        return rows[0] ? toRecord<T>(dialect, rows[0]) : null
      })
    },

    async update<T extends JsonObject>(
      collection: string,
      id: string,
      expectedVersion: number,
      input: RecordInput<T>,
    ): Promise<StoredRecord<T> | null> {
      assertOpen()
      const record = toStoredRecord(input, expectedVersion + 1)
      assertStorableRecord(collection, record)
      return transaction(async (sqlCall, dialect) => {
        const current = await lockRecord(sqlCall, dialect, collection, id)
        if (!current) return null
        // Version before unique keys, as the memory engine does.
        if (current.version !== expectedVersion) throw new StorageConflictError('version')

        const released = current.uniques.filter((key) => !record.uniques.includes(key))
        const claimed = record.uniques.filter((key) => !current.uniques.includes(key))
        await releaseUniques(sqlCall, dialect, collection, id, released)
        await asConflict(dialect, claimUniques(sqlCall, dialect, collection, id, claimed))

        const oldEntries = Object.entries(current.indexes)
        const newEntries = Object.entries(record.indexes)
        await deleteIndexes(
          sqlCall,
          dialect,
          collection,
          id,
          oldEntries.filter(([field, value]) => record.indexes[field] !== value),
        )
        await insertIndexes(
          sqlCall,
          dialect,
          collection,
          id,
          newEntries.filter(([field, value]) => current.indexes[field] !== value),
        )

        await sqlCall.query(
          `UPDATE ${dialect.tables.records} SET version = ?, data = ?, sort_key = ?, indexes_json = ?, uniques_json = ?
           WHERE collection = ? AND id = ?`,
          [
            record.version,
            JSON.stringify(record.data),
            record.sortKey,
            JSON.stringify(record.indexes),
            JSON.stringify(record.uniques),
            collection,
            id,
          ],
        )
        return record
      })
    },

    async delete(collection: string, id: string, expectedVersion?: number): Promise<boolean> {
      assertOpen()
      if (!isStorableKey(collection, KEY_LIMITS.collection) || !isStorableKey(id, KEY_LIMITS.id)) return false
      return transaction(async (sqlCall, dialect) => {
        const current = await lockRecord(sqlCall, dialect, collection, id)
        if (!current) return false
        if (expectedVersion !== undefined && current.version !== expectedVersion) {
          throw new StorageConflictError('version')
        }
        await releaseUniques(sqlCall, dialect, collection, id, current.uniques)
        await deleteIndexes(sqlCall, dialect, collection, id, Object.entries(current.indexes))
        await sqlCall.query(`DELETE FROM ${dialect.tables.records} WHERE collection = ? AND id = ?`, [collection, id])
        return true
      })
    },

    async list<T extends JsonObject>(collection: string, query: ListQuery = {}): Promise<ListResult<T>> {
      assertOpen()
      const where = Object.entries(query.where ?? {}).sort(([a], [b]) => byCodeUnit(a, b))
      const isFindable =
        isStorableKey(collection, KEY_LIMITS.collection) &&
        where.every(
          ([field, value]) => isStorableKey(field, KEY_LIMITS.indexField) && isStorableKey(value, KEY_LIMITS.indexValue),
        )
      if (!isFindable) return { items: [], totalCount: 0 }

      return call(async (sqlCall, dialect) => {
        if (dialect.listStatement) {
          const rows = await sqlCall.query(...dialect.listStatement(collection, where, query.limit, query.offset ?? 0))
          return {
            items: rows.filter((row) => row.id !== null).map((row) => toRecord<T>(dialect, row)),
            totalCount: Number(rows[0]?.total ?? 0),
          }
        }
        const filter = where
          .map(
            () => ` AND EXISTS (SELECT 1 FROM ${dialect.tables.indexes} i
              WHERE i.collection = r.collection AND i.field = ? AND i.value = ? AND i.record_id = r.id)`,
          )
          .join('')
        const filterParams: SqlValue[] = where.flat()
        const page = dialect.pageClause(query.limit, query.offset ?? 0)
        // One statement sees one snapshot, so the count always agrees with the page; the count
        // sits on the left of the join so an empty page (offset past the end) still carries it.
        const rows = await sqlCall.query(
          `SELECT c.total, p.id, p.version, p.data, p.sort_key, p.indexes_json, p.uniques_json
           FROM (SELECT COUNT(*) AS total FROM ${dialect.tables.records} r WHERE r.collection = ?${filter}) c
           LEFT JOIN (
             SELECT ${RECORD_COLUMNS} FROM ${dialect.tables.records} r WHERE r.collection = ?${filter}
             ORDER BY r.sort_key, r.id ${page.sql}
           ) p ON 1 = 1
           ORDER BY p.sort_key, p.id`,
          [collection, ...filterParams, collection, ...filterParams, ...page.params],
        )
        return {
          items: rows.filter((row) => row.id !== null).map((row) => toRecord<T>(dialect, row)),
          totalCount: Number(rows[0]?.total ?? 0),
        }
      })
    },

    async increment(key: string, amount: number, ttlMs: number): Promise<CounterResult> {
      assertOpen()
      assertCounterKey(key)
      const run = (sqlCall: SqlCall, dialect: Dialect) => dialect.increment(sqlCall, key, amount, ttlMs)
      const { dialect, pool } = await ready()
      const row = await (dialect.isIncrementTransactional ? transaction(run) : call(run, true))
      sweepExpired(pool, dialect)
      return toCounterResult(row)
    },

    /**
     * One transaction on one session: one commit (one log flush) for the whole batch instead of one per counter.
     * Counters are upserted in key order, so two batches over the same counters lock them in the same order and
     * cannot deadlock each other; a deadlock with anything else retries the batch from the start.
     */
    async incrementMany(changes: ReadonlyArray<CounterChange>): Promise<CounterResult[]> {
      assertOpen()
      for (const { key } of changes) assertCounterKey(key)
      if (changes.length === 0) return []
      const order = changes.map((_, index) => index).sort((left, right) => (changes[left]!.key < changes[right]!.key ? -1 : 1))
      const rows = await transaction(async (sqlCall, dialect) => {
        const found: SqlRow[] = new Array(changes.length)
        for (const index of order) {
          const { key, amount, ttlMs } = changes[index]!
          found[index] = await dialect.increment(sqlCall, key, amount, ttlMs)
        }
        return found
      })
      const { dialect, pool } = await ready()
      sweepExpired(pool, dialect)
      return rows.map(toCounterResult)
    },

    async hold(hold: TallyHold): Promise<CounterResult[]> {
      assertOpen()
      assertStorableKey(hold.id, 'hold.id', KEY_LIMITS.id)
      assertStorableKey(hold.owner, 'hold.owner', KEY_LIMITS.holdOwner)
      for (const change of hold.changes) assertTallyKey(change.key)
      // A held or settled id fails the claim as a duplicate (MySQL/MariaDB) or claims nothing (PostgreSQL).
      const rows = await tallyCall((sqlCall, dialect, inTx) => asConflict(dialect, dialect.tallies.hold(sqlCall, inTx, hold)))
      if (!rows) throw new StorageConflictError('unique')
      return rows.map(toCounterResult)
    },

    async settle(settlements: ReadonlyArray<TallySettlement>): Promise<void> {
      assertOpen()
      for (const settlement of settlements) {
        assertStorableKey(settlement.id, 'settlement.id', KEY_LIMITS.id)
        for (const change of settlement.changes) assertTallyKey(change.key)
      }
      if (settlements.length === 0) return
      await tallyCall(async (sqlCall, dialect, inTx) => {
        for (let round = 1; round <= MAX_SETTLE_ROUNDS; round++) {
          if (await dialect.tallies.settle(sqlCall, inTx, settlements)) return
        }
        throw unavailable(new Error('settlements kept meeting writes of the same ids'))
      })
    },

    async renewHolds(ids: ReadonlyArray<string>, leaseMs: number): Promise<number> {
      assertOpen()
      // An id no row could hold is held by no hold.
      const held = [...new Set(ids)].filter((id) => isStorableKey(id, KEY_LIMITS.id))
      if (held.length === 0) return 0
      return tallyCall((sqlCall, dialect, inTx) => dialect.tallies.renewHolds(sqlCall, inTx, held, leaseMs))
    },

    async releaseExpiredHolds(limit: number): Promise<number> {
      assertOpen()
      return tallyCall((sqlCall, dialect, inTx) => dialect.tallies.releaseExpiredHolds(sqlCall, inTx, limit))
    },

    async readTallies(keys: ReadonlyArray<string>): Promise<number[]> {
      assertOpen()
      const stored = [...new Set(keys)].filter((key) => isStorableKey(key, KEY_LIMITS.counterKey))
      if (stored.length === 0) return keys.map(() => 0)
      const values = await call((sqlCall, dialect) => dialect.tallies.readTallies(sqlCall, stored))
      return keys.map((key) => values.get(key) ?? 0)
    },

    close(): Promise<void> {
      closing ??= (async () => {
        isClosed = true
        const loaded = await backend?.catch(() => undefined)
        await loaded?.pool.close(CLOSE_GRACE_MS)
      })()
      return closing
    },
  }

  return { driver: checkedDriver(driver), ready }
}
