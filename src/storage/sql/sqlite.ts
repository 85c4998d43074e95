/**
 * SQLite through libsql (loaded on first use), a file on this machine that several processes may share. libsql's API
 * is synchronous (better-sqlite3's): each statement runs to its end on the calling thread, so a session is one
 * database connection whose statements are prepared once and kept, and the driver uses one session per process (its
 * calls queue in the pool rather than in SQLite's busy handler, which would block the thread the other connection's
 * transaction needs to finish). Between processes SQLite's locks decide: WAL lets readers run beside the one writer,
 * every write transaction starts with `BEGIN IMMEDIATE` (it takes the write lock first, so it never has to upgrade a
 * read snapshot that another writer made stale), and `busy_timeout` lets a writer wait for another process's
 * transaction, which lasts microseconds, instead of failing.
 *
 * Durability: `synchronous = NORMAL` in WAL mode syncs the log at each checkpoint, not at each commit. A committed
 * transaction is in the operating system's hands before the call resolves, so it survives the process being killed
 * (`kill -9`, a crash); only a power loss or a kernel crash can drop the last transactions, never corrupt the file.
 */
import type LibsqlDatabase from 'libsql'
import {
  NOW_MS,
  errorCode,
  type Dialect,
  type NewRecordRows,
  type SqlCall,
  type SqlRow,
  type SqlSession,
  type SqlValue,
  type TableNames,
} from './dialect'
import { createSessionPool, SqlPoolClosedError, SqlTimeoutError, type SessionPool } from './pool'
import { prepareDatabaseFile } from './sqlite-file'
import { createSqliteTallies } from './sqlite-tallies'

type Database = LibsqlDatabase.Database
type Statement = LibsqlDatabase.Statement

export interface SqliteDialectSettings {
  /** The database file (absolute). */
  path: string
  tablePrefix: string
  /** How long a write waits for another process's transaction before failing (`busy_timeout`). */
  busyTimeoutMs: number
  /** The same while migrating: another process may be migrating, or importing a file store, meanwhile. */
  migrationTimeoutMs: number
}

/** Prepared statements kept per connection: the driver's texts, multi-row inserts of each batch size among them. */
const STATEMENT_CACHE_SIZE = 512
/** Rows per multi-row insert: SQLite binds at most 32 766 values to one statement (a record row has 7). */
const MAX_INSERT_ROWS = 500

const NOW = NOW_MS.sqlite
const JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024
/**
 * Pages kept in memory per connection, in KiB when negative: outside the JS heap, but in the process's RSS. New usage
 * records, settled ids and holds are keyed by ids that begin with their time, so writes land on the last pages of
 * their tables and a few MiB hold what they touch; 16 MiB leaves room for other reads. (64 MiB, chosen while ids were
 * random, raised the runner's peak RSS in the bench from about 220 to 270 MB with no gain in CPU.)
 */
const CACHE_SIZE = -16_384

/** Result codes (libsql's `code`, extended codes included) meaning the database cannot answer now. */
const UNAVAILABLE_PREFIXES = [
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_IOERR',
  'SQLITE_FULL',
  'SQLITE_CANTOPEN',
  'SQLITE_READONLY',
  'SQLITE_NOMEM',
  'SQLITE_INTERRUPT',
  'SQLITE_PROTOCOL',
  'SQLITE_CORRUPT',
  'SQLITE_NOTADB',
  'SQLITE_NOLFS',
]
const UNIQUE_CODES = new Set(['SQLITE_CONSTRAINT_PRIMARYKEY', 'SQLITE_CONSTRAINT_UNIQUE'])

const isSqliteError = (error: unknown): boolean => (error as { name?: unknown } | null)?.name === 'SqliteError'

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`

const placeholders = (rows: number, columns: number) =>
  Array.from({ length: rows }, () => `(${Array.from({ length: columns }, () => '?').join(', ')})`).join(', ')

export const sqliteTables = (tablePrefix: string): TableNames => {
  const table = (name: string) => quote(`${tablePrefix}${name}`)
  return {
    records: table('records'),
    uniques: table('uniques'),
    indexes: table('indexes'),
    counters: table('counters'),
    migrations: table('migrations'),
    tallies: table('tallies'),
    holds: table('holds'),
    settled: table('settled'),
    // Never created: a transaction of this process stores a batch (`insertNewRecords`) and runs each tally method.
    insertRecordsProcedure: table('insert_records'),
    holdProcedure: table('tally_hold'),
    settleProcedure: table('tally_settle'),
    renewProcedure: table('tally_renew'),
    releaseProcedure: table('tally_release'),
    prefix: tablePrefix,
  }
}

/** Loads libsql's `Database` (CommonJS, with a native binary per platform). */
const loadDatabase = async (): Promise<typeof LibsqlDatabase> => {
  const loaded = (await import('libsql')) as unknown as { default?: typeof LibsqlDatabase }
  return loaded.default ?? (loaded as unknown as typeof LibsqlDatabase)
}

/**
 * The file could not be made ready or opened: a file system error, or libsql's `ConnectionFailed(...)` (which carries
 * SQLite's code only in its message). An outage, as the file may come back (a volume not mounted yet, a full disk).
 */
export class SqliteOpenError extends Error {
  readonly code = 'MODELGATE_SQLITE_OPEN'
  constructor(path: string, cause: unknown) {
    super(`cannot open ${path}: ${(cause as Error)?.message ?? String(cause)}`, { cause })
    this.name = 'SqliteOpenError'
  }
}

/** Opens the file with the settings every connection needs; the connection is closed again when one fails. */
export const openSqliteConnection = async (path: string, busyTimeoutMs: number): Promise<Database> => {
  const Database = await loadDatabase()
  let db: Database
  try {
    await prepareDatabaseFile(path)
    db = new Database(path)
  } catch (error) {
    throw new SqliteOpenError(path, error)
  }
  try {
    // The wait first, so the statements below wait for another process's lock too.
    db.exec(`PRAGMA busy_timeout = ${Math.floor(busyTimeoutMs)}`)
    // Kept in the file once set; reading it back says whether the file system allowed it (not on a network share).
    const [mode] = db.prepare('PRAGMA journal_mode = WAL').all([]) as Array<{ journal_mode?: unknown }>
    if (mode?.journal_mode !== 'wal') throw new Error(`modelgate: SQLite refused WAL mode for ${path} (journal mode ${String(mode?.journal_mode)})`)
    db.exec('PRAGMA synchronous = NORMAL')
    // A checkpoint cuts the log back to this size, so one large transaction (an import) does not leave it that large.
    db.exec(`PRAGMA journal_size_limit = ${JOURNAL_SIZE_LIMIT}`)
    db.exec(`PRAGMA cache_size = ${CACHE_SIZE}`)
    // No table references another, so there is nothing for foreign keys to enforce.
    db.exec('PRAGMA foreign_keys = OFF')
  } catch (error) {
    db.close()
    throw error
  }
  return db
}

/** Creates the SQLite dialect, importing libsql now. */
export const createSqliteDialect = async (settings: SqliteDialectSettings): Promise<Dialect> => {
  // Imported now, so a platform without a prebuilt binary fails here, named as such, and not at the first call.
  await loadDatabase()
  const tables = sqliteTables(settings.tablePrefix)

  const connect = async (): Promise<SqlSession> => {
    const db = await openSqliteConnection(settings.path, settings.busyTimeoutMs)
    /** Each statement with whether it returns rows (asked of SQLite once: the question crosses into native code). */
    const statements = new Map<string, { statement: Statement; isReader: boolean }>()
    let isBroken = false

    const prepared = (text: string) => {
      let entry = statements.get(text)
      if (entry) return entry
      const statement = db.prepare(text)
      entry = { statement, isReader: statement.reader }
      // The driver's texts are a few hundred at most: past the bound, the oldest prepared goes.
      if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!)
      statements.set(text, entry)
      return entry
    }

    return {
      startCall() {},

      async query(text: string, params: readonly SqlValue[] = []): Promise<SqlRow[]> {
        if (isBroken) throw new Error('modelgate: the SQLite connection is closed')
        const { statement, isReader } = prepared(text)
        // A statement without rows (a write without RETURNING, BEGIN, COMMIT) skips the row iterator `all` builds.
        if (!isReader) {
          statement.run(params as SqlValue[])
          return []
        }
        return statement.all(params as SqlValue[]) as SqlRow[]
      },

      abort() {
        // Nothing runs in the background; what is left of a call is its open transaction.
        if (isBroken || !db.inTransaction) return
        try {
          db.exec('ROLLBACK')
        } catch {
          isBroken = true
          db.close()
        }
      },

      get isBroken() {
        return isBroken
      },

      async end() {
        if (isBroken) return
        isBroken = true
        statements.clear()
        db.close()
      },
    }
  }

  /** One multi-row insert per chunk of rows, all with the same columns. */
  const insertChunks = async (call: SqlCall, table: string, columns: string, rows: SqlValue[][]) => {
    for (let start = 0; start < rows.length; start += MAX_INSERT_ROWS) {
      const chunk = rows.slice(start, start + MAX_INSERT_ROWS)
      await call.query(`INSERT INTO ${table} (${columns}) VALUES ${placeholders(chunk.length, chunk[0]!.length)}`, chunk.flat())
    }
  }

  return {
    name: 'sqlite',
    tables,
    connect,
    beginStatement: 'BEGIN IMMEDIATE',
    lockRowsClause: '',
    hasMultiTableInsert: false,

    // One write transaction of this process: every statement runs on this thread, so it is never a round trip.
    async insertNewRecords(call: SqlCall, rows: NewRecordRows): Promise<boolean> {
      await call.query('BEGIN IMMEDIATE')
      try {
        await insertChunks(
          call,
          tables.records,
          'collection, id, version, data, sort_key, indexes_json, uniques_json',
          rows.records.map((row) => [rows.collection, ...row]),
        )
        if (rows.uniques.length > 0) {
          await insertChunks(call, tables.uniques, 'collection, unique_key, record_id', rows.uniques.map((row) => [rows.collection, ...row]))
        }
        if (rows.indexes.length > 0) {
          await insertChunks(call, tables.indexes, 'collection, field, value, record_id', rows.indexes.map((row) => [rows.collection, ...row]))
        }
      } catch (error) {
        await call.query('ROLLBACK').catch(() => call.abort())
        throw error
      }
      await call.query('COMMIT')
      return true
    },

    /*
     * Index filters are uncorrelated `IN` lists, so the matches are found through the index rows, and the page is
     * sorted among them (`+` keeps SQLite from walking the whole collection in list order instead, probing each
     * record). One filter is counted on its index rows alone; with none, the page walks the collection's list order.
     */
    listStatement(collection, where, limit, offset) {
      const matches = (field: string, value: string): [string, SqlValue[]] => [
        `r.id IN (SELECT i.record_id FROM ${tables.indexes} i WHERE i.collection = ? AND i.field = ? AND i.value = ?)`,
        [collection, field, value],
      ]
      const filters = where.map(([field, value]) => matches(field, value))
      const filterSql = filters.map(([sql]) => ` AND ${sql}`).join('')
      const filterParams = filters.flatMap(([, params]) => params)
      const [count, countParams]: [string, SqlValue[]] =
        where.length === 1
          ? [`SELECT COUNT(*) AS total FROM ${tables.indexes} i WHERE i.collection = ? AND i.field = ? AND i.value = ?`, [collection, ...where[0]!]]
          : [`SELECT COUNT(*) AS total FROM ${tables.records} r WHERE r.collection = ?${filterSql}`, [collection, ...filterParams]]
      const order = where.length === 0 ? 'r.sort_key, r.id' : '+r.sort_key, +r.id'
      return [
        `SELECT c.total, p.id, p.version, p.data, p.sort_key, p.indexes_json, p.uniques_json
         FROM (${count}) c
         LEFT JOIN (
           SELECT r.id, r.version, r.data, r.sort_key, r.indexes_json, r.uniques_json FROM ${tables.records} r
           WHERE r.collection = ?${filterSql} ORDER BY ${order} LIMIT ? OFFSET ?
         ) p ON 1 = 1
         ORDER BY p.sort_key, p.id`,
        [...countParams, collection, ...filterParams, limit ?? -1, offset],
      ]
    },

    // A negative limit is no limit; NULL is refused.
    pageClause: (limit, offset) => ({ sql: 'LIMIT ? OFFSET ?', params: [limit ?? -1, offset] }),

    isIncrementTransactional: false,
    async increment(call: SqlCall, key: string, amount: number, ttlMs: number): Promise<SqlRow> {
      // Every SET expression sees the row as it was, so both CASEs test the old expiry.
      const rows = await call.query(
        `INSERT INTO ${tables.counters} AS c (counter_key, value, expires_at)
         VALUES (?, ?, ${NOW} + ?)
         ON CONFLICT (counter_key) DO UPDATE SET
           value = CASE WHEN c.expires_at <= ${NOW} THEN excluded.value ELSE c.value + excluded.value END,
           expires_at = CASE WHEN c.expires_at <= ${NOW} THEN excluded.expires_at ELSE c.expires_at END
         RETURNING value, expires_at`,
        [key, amount, ttlMs],
      )
      return rows[0]!
    },

    sweepCountersStatement: `DELETE FROM ${tables.counters} WHERE counter_key IN (
      SELECT counter_key FROM ${tables.counters} WHERE expires_at <= ${NOW} LIMIT 1000)`,

    tallies: createSqliteTallies(tables),

    text: (value) => String(value),

    async withMigrationLock<T>(call: SqlCall, task: () => Promise<T>): Promise<T> {
      // The write lock is the migration lock, and DDL is transactional: the whole migration commits or none of it.
      await call.query(`PRAGMA busy_timeout = ${Math.floor(settings.migrationTimeoutMs)}`)
      try {
        await call.query('BEGIN IMMEDIATE')
        try {
          const result = await task()
          await call.query('COMMIT')
          return result
        } catch (error) {
          await call.query('ROLLBACK').catch(() => call.abort())
          throw error
        }
      } finally {
        await call.query(`PRAGMA busy_timeout = ${Math.floor(settings.busyTimeoutMs)}`)
      }
    },

    // The file is the database; opening it created it.
    async ensureContainer() {},

    async migrationsTableExists(call: SqlCall): Promise<boolean> {
      const rows = await call.query(`SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ?`, [`${settings.tablePrefix}migrations`])
      return rows.length > 0
    },

    createMigrationsTableStatement: `CREATE TABLE IF NOT EXISTS ${tables.migrations} (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
    )`,

    isUniqueViolation: (error) => isSqliteError(error) && UNIQUE_CODES.has(errorCode(error) ?? ''),

    isPermissionDenied: (error) => isSqliteError(error) && (errorCode(error) ?? '').startsWith('SQLITE_READONLY'),

    // A write transaction takes the write lock first and waits `busy_timeout` for it: what is left after that wait
    // would only wait again, blocking this process's thread, so it is an outage (503), not a retry.
    isRetryable: () => false,

    isUnavailable(error) {
      if (error instanceof SqliteOpenError) return true
      const code = errorCode(error)
      return code !== undefined && isSqliteError(error) && UNAVAILABLE_PREFIXES.some((prefix) => code.startsWith(prefix))
    },
  }
}

/** The savepoint each write of a group commit runs in. */
const CALL_SAVEPOINT = 'modelgate_call'

interface QueuedWrite {
  task: (call: SqlCall) => Promise<unknown>
  timeoutMs: number
  deadline: number
  resolve(value: unknown): void
  reject(error: unknown): void
}

/**
 * A write's view of the group's transaction: its own BEGIN and COMMIT are the group's (nothing to send), and its
 * ROLLBACK undoes only its own statements, back to the savepoint it runs in.
 */
const inGroup = (call: SqlCall): SqlCall => ({
  query(text, params) {
    if (text === 'BEGIN IMMEDIATE' || text === 'COMMIT') return Promise.resolve([])
    if (text === 'ROLLBACK') return call.query(`ROLLBACK TO ${CALL_SAVEPOINT}`)
    return call.query(text, params)
  },
  abort: () => call.abort(),
})

/**
 * Group commit over one connection: the writes of one turn of the event loop (the requests that arrived together)
 * run one after the other in one transaction, each in a savepoint of its own (so a write that fails, a taken unique
 * key say, undoes only itself), and each resolves once that transaction has committed. A commit writes every page it
 * changed to the log once, however many writes changed it (the tallies every request moves, the ledger's newest
 * pages), and takes SQLite's locks once: measured with libsql, 16 holds in one transaction cost 74 µs each against
 * 198 µs in 16. The write lock is held only while the group runs, never while it waits to start. Reads and other
 * calls go straight to the connection between groups.
 */
const groupCommits = (inner: SessionPool): SessionPool => {
  let queue: QueuedWrite[] = []
  let isScheduled = false

  const flush = () => {
    isScheduled = false
    const now = performance.now()
    const group = queue.filter((write) => {
      if (write.deadline > now) return true
      write.reject(new SqlTimeoutError(write.timeoutMs))
      return false
    })
    queue = []
    if (group.length === 0) return
    const timeoutMs = Math.max(...group.map((write) => write.deadline)) - now
    void inner
      .run(timeoutMs, async (call) => {
        const outcomes: Array<{ value?: unknown; error?: unknown; isFailed: boolean }> = []
        await call.query('BEGIN IMMEDIATE')
        try {
          for (const write of group) {
            await call.query(`SAVEPOINT ${CALL_SAVEPOINT}`)
            try {
              outcomes.push({ value: await write.task(inGroup(call)), isFailed: false })
            } catch (error) {
              await call.query(`ROLLBACK TO ${CALL_SAVEPOINT}`)
              outcomes.push({ error, isFailed: true })
            }
            await call.query(`RELEASE ${CALL_SAVEPOINT}`)
          }
          await call.query('COMMIT')
        } catch (error) {
          // The group's transaction is gone (it could not start or commit, or a failure rolled all of it back):
          // nothing of it was stored.
          await call.query('ROLLBACK').catch(() => call.abort())
          throw error
        }
        return outcomes
      })
      .then(
        (outcomes) =>
          outcomes.forEach((outcome, index) => (outcome.isFailed ? group[index]!.reject(outcome.error) : group[index]!.resolve(outcome.value))),
        (error: unknown) => {
          for (const write of group) write.reject(error)
        },
      )
  }

  return {
    run(timeoutMs, task, options) {
      if (!options?.isWrite) return inner.run(timeoutMs, task)
      return new Promise((resolve, reject) => {
        queue.push({ task, timeoutMs, deadline: performance.now() + timeoutMs, resolve: resolve as (value: unknown) => void, reject })
        if (isScheduled) return
        isScheduled = true
        setImmediate(flush)
      })
    },
    close: (graceMs) => inner.close(graceMs),
  }
}

/** Every pool of this process, by database file: drivers (and imports) of one file share its one connection. */
const sharedPools = new Map<string, { pool: SessionPool; users: number }>()

/**
 * The pool of the file at `path` for one user (a driver, an import), created with `connect` by the first. Calls of
 * every user queue for the one connection, so no transaction of this process ever waits in SQLite's busy handler for
 * another of this process, which could not go on while the thread waits. `close` waits for this user's calls only;
 * the last user's closes the connection.
 */
export const sharedSqlitePool = (path: string, connect: () => Promise<SqlSession>): SessionPool => {
  let entry = sharedPools.get(path)
  if (!entry) {
    entry = { pool: groupCommits(createSessionPool({ size: 1, connect })), users: 0 }
    sharedPools.set(path, entry)
  }
  const shared = entry
  shared.users++
  const running = new Set<Promise<unknown>>()
  let isClosed = false
  return {
    run(timeoutMs, task, options) {
      if (isClosed) return Promise.reject(new SqlPoolClosedError())
      const call = shared.pool.run(timeoutMs, task, options)
      const settled = call.then(
        () => {},
        () => {},
      )
      running.add(settled)
      void settled.then(() => running.delete(settled))
      return call
    },
    async close(graceMs) {
      if (isClosed) return
      isClosed = true
      while (running.size > 0) await Promise.all([...running])
      if (--shared.users > 0) return
      sharedPools.delete(path)
      await shared.pool.close(graceMs)
    },
  }
}
