/**
 * MySQL 8 and MariaDB through mysql2 (loaded on first use). Each session is one mysql2 connection;
 * one that failed or timed out is discarded, never reused. Statements with parameters go through
 * the binary protocol (`execute`), which carries doubles exactly; the text protocol rounds them.
 */
import { createHash } from 'node:crypto'
import type { Socket } from 'node:net'
import type { Connection } from 'mysql2/promise'
import {
  errorCode,
  NETWORK_ERROR_CODES,
  NOW_MS,
  type Dialect,
  type DialectSettings,
  type NewRecordRows,
  type SqlCall,
  type SqlRow,
  type SqlSession,
  type SqlValue,
} from './dialect'
import { createMysqlTallies } from './mysql-tallies'

type MysqlModule = typeof import('mysql2/promise')

/** Server errors meaning "cannot serve us now" (connections, shutdown, login, read-only, timeouts). */
const UNAVAILABLE_ERRNOS = new Set([
  1040, 1042, 1043, 1044, 1045, 1049, 1053, 1077, 1078, 1079, 1080, 1081, 1129, 1130, 1152, 1153, 1154, 1155, 1156,
  1157, 1158, 1159, 1160, 1161, 1203, 1205, 1213, 1290, 1317, 1836, 1927, 1969, 3024, 2002, 2003, 2005, 2006, 2013,
])
const CLIENT_ERROR_CODES = new Set(['PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT', 'PROTOCOL_PACKETS_OUT_OF_ORDER'])
/** Deadlock, lock wait timeout. */
const RETRYABLE_ERRNOS = new Set([1213, 1205])
/** ER_DUP_ENTRY, ER_DUP_ENTRY_WITH_KEY_NAME. */
const DUPLICATE_ERRNOS = new Set([1062, 1586])
/**
 * Access denied to the database (CREATE ROUTINE), to a table, to a routine (ALTER ROUTINE, EXECUTE), or a global
 * privilege missing (SUPER with binary logging).
 */
const PERMISSION_ERRNOS = new Set([1044, 1142, 1227, 1370, 1419])
/** ER_SP_DOES_NOT_EXIST, ER_PROCACCESS_DENIED_ERROR: a procedure is missing, or EXECUTE on it is not granted. */
const PROCEDURE_UNUSABLE_ERRNOS = new Set([1305, 1370])

const errnoOf = (error: unknown): number | undefined => {
  const errno = (error as { errno?: unknown } | null)?.errno
  return typeof errno === 'number' ? errno : undefined
}

const NOW = NOW_MS.mysql

/**
 * Strict mode for every table (never truncate, never guess), UTC so UNIX_TIMESTAMP(NOW()) has no
 * DST gap, and READ COMMITTED: writes use locking reads anyway, and it spares InnoDB gap locks.
 */
const SESSION_SETUP = (lockWaitSeconds: number) => [
  `SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION',
     SESSION time_zone = '+00:00',
     SESSION innodb_lock_wait_timeout = ${lockWaitSeconds}`,
  'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED',
]

const quote = (name: string) => `\`${name.replaceAll('`', '``')}\``

/** Decodes a key column: VARBINARY comes back as bytes. */
const text = (value: unknown): string => (Buffer.isBuffer(value) ? value.toString('utf8') : String(value))

const isUniqueViolation = (error: unknown): boolean => DUPLICATE_ERRNOS.has(errnoOf(error) ?? 0)

/** `mysql2` connection options from our URL, without a default database (every table name is qualified). */
const connectionUri = (url: string): string => {
  const parsed = new URL(url)
  parsed.protocol = 'mysql:'
  parsed.pathname = '/'
  return parsed.toString()
}

/** Creates the MySQL/MariaDB dialect, importing mysql2 now. */
export const createMysqlDialect = async (settings: DialectSettings & { database: string }): Promise<Dialect> => {
  const mysqlModule = await import('mysql2/promise')
  const mysql = ((mysqlModule as { default?: MysqlModule }).default ?? mysqlModule) as MysqlModule
  const { database, tablePrefix } = settings
  const qualify = (table: string) => `${quote(database)}.${quote(`${tablePrefix}${table}`)}`
  const tables = {
    records: qualify('records'),
    uniques: qualify('uniques'),
    indexes: qualify('indexes'),
    counters: qualify('counters'),
    migrations: qualify('migrations'),
    insertRecordsProcedure: qualify('insert_records'),
    tallies: qualify('tallies'),
    holds: qualify('holds'),
    settled: qualify('settled'),
    holdProcedure: qualify('tally_hold'),
    settleProcedure: qualify('tally_settle'),
    renewProcedure: qualify('tally_renew'),
    releaseProcedure: qualify('tally_release'),
    prefix: tablePrefix,
  }
  const uri = connectionUri(settings.url)
  // GET_LOCK names are server-wide and at most 64 characters.
  const migrationLockName = `modelgate:${createHash('sha256').update(database).digest('hex').slice(0, 40)}`
  const setup = SESSION_SETUP(Math.max(1, Math.ceil(settings.queryTimeoutMs / 1000)))
  /**
   * Cleared, for the life of this driver, by the first call that finds the procedure missing (a server without
   * JSON_TABLE, a dump restored without its routines) or not runnable by this user (no EXECUTE).
   */
  let canCallInsertRecords = true

  const connect = async (): Promise<SqlSession> => {
    const connection: Connection = await mysql.createConnection({
      uri,
      connectTimeout: settings.connectTimeoutMs,
      charset: 'utf8mb4',
      // The server caps prepared statements for all clients together (max_prepared_stmt_count).
      maxPreparedStatements: 256,
      multipleStatements: false,
    })
    const socket = (connection as unknown as { connection: { stream?: Socket } }).connection.stream
    let isBroken = false
    const markBroken = () => {
      isBroken = true
    }
    // Without an 'error' listener, a connection dying while idle would crash the process.
    connection.on('error', markBroken)
    connection.on('end', markBroken)
    // A connection reset while a statement ran fails only that statement: mysql2 emits neither 'error' nor 'end' on
    // the connection, then refuses every later statement ("closed state"). Its socket closing is the one sure sign.
    socket?.once('close', markBroken)
    /** Destroying the socket (not `connection.destroy()`) makes mysql2 fail what is in flight. */
    const abort = () => {
      isBroken = true
      socket?.destroy()
    }

    const session: SqlSession = {
      startCall() {},

      async query(text: string, params: readonly SqlValue[] = []): Promise<SqlRow[]> {
        try {
          const [rows] =
            params.length === 0
              ? await connection.query(text)
              : await connection.execute(text, params as SqlValue[])
          return Array.isArray(rows) ? (rows as SqlRow[]) : []
        } catch (error) {
          // mysql2 closes a connection after a fatal error (a reset, a lost packet): it must not go back to the pool.
          if ((error as { fatal?: unknown } | null)?.fatal === true) markBroken()
          throw error
        }
      },

      abort,

      get isBroken() {
        return isBroken
      },

      async end(graceMs: number) {
        isBroken = true
        let timer: NodeJS.Timeout | undefined
        await Promise.race([
          connection.end().catch(() => {}),
          new Promise((resolve) => {
            timer = setTimeout(resolve, graceMs)
          }),
        ])
        clearTimeout(timer)
        socket?.destroy()
      },
    }

    try {
      for (const statement of setup) await session.query(statement)
    } catch (error) {
      abort()
      throw error
    }
    return session
  }

  return {
    name: 'mysql',
    tables,
    connect,
    beginStatement: 'START TRANSACTION',
    lockRowsClause: ' FOR UPDATE',
    // No data-modifying WITH, and mysql2 sends one statement at a time: a batch is one call of a procedure.
    hasMultiTableInsert: false,

    async insertNewRecords(call: SqlCall, rows: NewRecordRows): Promise<boolean> {
      if (!canCallInsertRecords) return false
      const list = (items: unknown[]) => (items.length > 0 ? JSON.stringify(items) : null)
      try {
        // The server refuses the call before it runs anything, so nothing is stored when it is refused.
        await call.query(`CALL ${tables.insertRecordsProcedure}(?, ?, ?, ?)`, [
          rows.collection,
          JSON.stringify(rows.records),
          list(rows.uniques),
          list(rows.indexes),
        ])
        return true
      } catch (error) {
        if (!PROCEDURE_UNUSABLE_ERRNOS.has(errnoOf(error) ?? 0)) throw error
        canCallInsertRecords = false
        return false
      }
    },

    pageClause: (limit, offset) =>
      limit === undefined
        ? { sql: 'LIMIT 18446744073709551615 OFFSET ?', params: [offset] }
        : { sql: 'LIMIT ? OFFSET ?', params: [limit, offset] },

    isIncrementTransactional: true,
    async increment(call: SqlCall, key: string, amount: number, ttlMs: number): Promise<SqlRow> {
      // MySQL assigns left to right and later assignments see earlier ones: `value` must be
      // computed first, while `expires_at` still holds the old expiry.
      await call.query(
        `INSERT INTO ${tables.counters} (counter_key, value, expires_at)
         VALUES (?, ?, ${NOW} + CAST(? AS SIGNED))
         ON DUPLICATE KEY UPDATE
           value = IF(expires_at <= ${NOW}, VALUES(value), value + VALUES(value)),
           expires_at = IF(expires_at <= ${NOW}, VALUES(expires_at), expires_at)`,
        [key, amount, ttlMs],
      )
      // Same transaction, row still locked by the upsert: this reads exactly what it wrote.
      const rows = await call.query(`SELECT value, expires_at FROM ${tables.counters} WHERE counter_key = ?`, [key])
      return rows[0]!
    },

    sweepCountersStatement: `DELETE FROM ${tables.counters} WHERE expires_at <= ${NOW} LIMIT 1000`,

    tallies: createMysqlTallies(tables, {
      text,
      isProcedureUnusable: (error) => PROCEDURE_UNUSABLE_ERRNOS.has(errnoOf(error) ?? 0),
      isUniqueViolation,
    }),

    text,

    async withMigrationLock<T>(call: SqlCall, task: () => Promise<T>): Promise<T> {
      const seconds = Math.max(1, Math.ceil(settings.migrationTimeoutMs / 1000))
      const [row] = await call.query('SELECT GET_LOCK(?, ?) AS acquired', [migrationLockName, seconds])
      if (Number(row?.acquired) !== 1) {
        throw new Error('modelgate: timed out waiting for another process to migrate the SQL storage')
      }
      try {
        return await task()
      } finally {
        // The server also frees the lock when this connection ends.
        await call.query('SELECT RELEASE_LOCK(?) AS released', [migrationLockName]).catch(() => call.abort())
      }
    },

    async ensureContainer(call: SqlCall): Promise<void> {
      // Checked first: CREATE DATABASE IF NOT EXISTS needs the CREATE right even when it exists.
      const rows = await call.query('SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [
        database,
      ])
      if (rows.length === 0) {
        await call.query(`CREATE DATABASE IF NOT EXISTS ${quote(database)} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`)
      }
    },

    async migrationsTableExists(call: SqlCall): Promise<boolean> {
      const rows = await call.query(
        'SELECT COUNT(*) AS found FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
        [database, `${tablePrefix}migrations`],
      )
      return Number(rows[0]?.found) > 0
    },

    createMigrationsTableStatement: `CREATE TABLE IF NOT EXISTS ${tables.migrations} (
      version INT NOT NULL PRIMARY KEY,
      name VARCHAR(255) NOT NULL,
      applied_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,

    isUniqueViolation,

    isPermissionDenied: (error) => PERMISSION_ERRNOS.has(errnoOf(error) ?? 0),

    isRetryable: (error) => RETRYABLE_ERRNOS.has(errnoOf(error) ?? 0),

    isUnavailable(error) {
      if ((error as { fatal?: unknown } | null)?.fatal === true) return true
      const code = errorCode(error)
      if (code !== undefined && (NETWORK_ERROR_CODES.has(code) || CLIENT_ERROR_CODES.has(code))) return true
      return UNAVAILABLE_ERRNOS.has(errnoOf(error) ?? 0)
    },
  }
}
