/**
 * PostgreSQL through postgres.js (loaded on first use). Each session is a postgres.js instance with
 * one connection whose sockets we create, so a call that times out can destroy exactly its own
 * socket: postgres.js has no per-query timeout, and a connection that stopped answering would
 * otherwise hold its slot forever. The server also enforces `statement_timeout`, so a statement
 * abandoned by a timed-out call does not keep running.
 */
import { createHash } from 'node:crypto'
import { connect as connectSocket, type Socket } from 'node:net'
import type postgres from 'postgres'
import {
  errorCode,
  NETWORK_ERROR_CODES,
  NOW_MS,
  type Dialect,
  type DialectSettings,
  type SqlCall,
  type SqlRow,
  type SqlSession,
  type SqlValue,
} from './dialect'
import { SqlConnectionLostError } from './pool'
import { createPostgresTallies } from './postgres-tallies'

type Postgres = typeof postgres

/** Connection errors that postgres.js raises itself. */
const CLIENT_ERROR_CODES = new Set([
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
])

/**
 * SQLSTATE classes meaning "the server cannot serve us now": connection exception, insufficient
 * resources, operator intervention (shutdown, `statement_timeout`), system error, invalid
 * authorization, internal error.
 */
const UNAVAILABLE_CLASSES = new Set(['08', '53', '57', '58', '28', 'XX'])
/** Missing database, read-only standby, idle-in-transaction timeout, and contention left after retries. */
const UNAVAILABLE_STATES = new Set(['3D000', '25006', '25P03', '40P01', '40001'])
const RETRYABLE_STATES = new Set(['40P01', '40001'])

const isPostgresError = (error: unknown): boolean => (error as { name?: unknown } | null)?.name === 'PostgresError'

const NOW = NOW_MS.postgres

/** Statements are written with `?`; postgres.js wants `$1`, `$2`, ... */
const positionalCache = new Map<string, string>()
const toPositional = (text: string): string => {
  let converted = positionalCache.get(text)
  if (converted === undefined) {
    let index = 0
    converted = text.replace(/\?/g, () => `$${++index}`)
    if (positionalCache.size < 1_000) positionalCache.set(text, converted)
  }
  return converted
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`

/**
 * JSON columns travel as text both ways (the driver stringifies and parses itself, so stored text
 * is exactly what `JSON.stringify` wrote), and bigint columns come back as numbers.
 */
const TYPES = {
  json: { to: 114, from: [114, 3802], serialize: (value: unknown) => value, parse: (value: string) => value },
  bigint: { to: 20, from: [20], serialize: (value: unknown) => String(value), parse: (value: string) => Number(value) },
}

/** Creates the PostgreSQL dialect, importing postgres.js now. */
export const createPostgresDialect = async (settings: DialectSettings): Promise<Dialect> => {
  const postgresModule = await import('postgres')
  const connectPostgres = ((postgresModule as { default?: Postgres }).default ?? postgresModule) as Postgres
  const { schema, tablePrefix } = settings
  const qualify = (table: string) => (schema ? `${quote(schema)}.` : '') + quote(`${tablePrefix}${table}`)
  const tables = {
    records: qualify('records'),
    uniques: qualify('uniques'),
    indexes: qualify('indexes'),
    counters: qualify('counters'),
    migrations: qualify('migrations'),
    tallies: qualify('tallies'),
    holds: qualify('holds'),
    settled: qualify('settled'),
    // Never created: one statement stores a batch here (`hasMultiTableInsert`), and one runs each tally method.
    insertRecordsProcedure: qualify('insert_records'),
    holdProcedure: qualify('tally_hold'),
    settleProcedure: qualify('tally_settle'),
    renewProcedure: qualify('tally_renew'),
    releaseProcedure: qualify('tally_release'),
    prefix: tablePrefix,
  }
  // Advisory locks are per database; one key per schema also serializes creating the schema itself.
  const migrationLockKey = createHash('sha256')
    .update(`modelgate:migrations:${schema ?? ''}`)
    .digest()
    .readBigInt64BE(0)
    .toString()

  const connect = async (): Promise<SqlSession> => {
    const sockets = new Set<Socket>()
    /** Bumped whenever the connection closes, so a call notices it is not on its first connection. */
    let generation = 0
    let isConnected = false
    let callGeneration: number | undefined
    /** Bumped by every new call and every abort: a statement of an older call is never sent. */
    let callNumber = 0
    /**
     * Set when a statement failed on the connection rather than in the server (a reset, a close): postgres.js
     * reconnects by itself, but a statement sent before it noticed the close waits for an answer for ever, so the
     * pool replaces the session.
     */
    let isBroken = false

    const sql = connectPostgres(settings.url, {
      max: 1,
      prepare: true,
      fetch_types: false,
      connect_timeout: settings.connectTimeoutMs / 1000,
      onnotice: () => {},
      onclose: () => {
        isConnected = false
        generation++
      },
      types: TYPES,
      connection: {
        application_name: 'modelgate',
        statement_timeout: settings.queryTimeoutMs,
        // Frees row locks of a transaction whose client vanished without closing its socket.
        idle_in_transaction_session_timeout: Math.max(settings.queryTimeoutMs * 2, 10_000),
      },
      // Our own sockets, so `abort` can destroy the one this session uses.
      socket: (options: { host: string[]; port: number[]; path?: string | false }) => {
        for (const socket of sockets) if (socket.destroyed) sockets.delete(socket)
        const socket = options.path
          ? connectSocket(options.path)
          : connectSocket(options.port[0] ?? 5432, options.host[0] ?? 'localhost')
        sockets.add(socket)
        return socket
      },
    } as postgres.Options<Record<string, postgres.PostgresType>>)

    const send = async (text: string, params: readonly SqlValue[]): Promise<SqlRow[]> =>
      (await sql.unsafe(toPositional(text), params as SqlValue[], { prepare: params.length > 0 })) as unknown as SqlRow[]

    return {
      startCall() {
        callNumber++
        callGeneration = undefined
      },

      async query(text: string, params: readonly SqlValue[] = []): Promise<SqlRow[]> {
        const number = callNumber
        try {
          if (callGeneration === undefined) {
            // A statement sent while postgres.js is (re)connecting would run whenever the connection
            // comes up, even after its call timed out. Only a harmless probe ever waits for one.
            if (!isConnected) {
              await send('SELECT 1', [])
              // The call timed out (or a later call took the session) while the probe waited.
              if (number !== callNumber) throw new SqlConnectionLostError()
              isConnected = true
            }
            callGeneration = generation
          } else if (!isConnected || generation !== callGeneration) {
            // The transaction's connection is gone; the rest of it must not run on a new one.
            throw new SqlConnectionLostError()
          }
          return await send(text, params)
        } catch (error) {
          if (!isPostgresError(error)) {
            isBroken = true
            isConnected = false
          }
          throw error
        }
      },

      abort() {
        callNumber++
        isConnected = false
        for (const socket of sockets) socket.destroy()
        sockets.clear()
      },

      get isBroken() {
        return isBroken
      },

      async end(graceMs: number) {
        // A connection that closed under a statement never finishes ending by itself in postgres.js.
        await sql.end({ timeout: isConnected ? graceMs / 1000 : 0 }).catch(() => {})
        for (const socket of sockets) socket.destroy()
        sockets.clear()
      },
    }
  }

  return {
    name: 'postgres',
    tables,
    connect,
    beginStatement: 'BEGIN',
    lockRowsClause: ' FOR UPDATE',
    // Data-modifying WITH: every insert of the statement commits together or not at all.
    hasMultiTableInsert: true,

    pageClause: (limit, offset) => ({ sql: 'LIMIT ? OFFSET ?', params: [limit ?? null, offset] }),

    isIncrementTransactional: false,
    async increment(call: SqlCall, key: string, amount: number, ttlMs: number): Promise<SqlRow> {
      // Every SET expression sees the row as it was, so both CASEs test the old expiry.
      const rows = await call.query(
        `INSERT INTO ${tables.counters} AS c (counter_key, value, expires_at)
         VALUES (?, ?, ${NOW} + ?)
         ON CONFLICT (counter_key) DO UPDATE SET
           value = CASE WHEN c.expires_at <= ${NOW} THEN EXCLUDED.value ELSE c.value + EXCLUDED.value END,
           expires_at = CASE WHEN c.expires_at <= ${NOW} THEN EXCLUDED.expires_at ELSE c.expires_at END
         RETURNING value, expires_at`,
        [key, amount, ttlMs],
      )
      return rows[0]!
    },

    // The outer expiry test re-checks each row after locking it, so a counter renewed meanwhile stays.
    sweepCountersStatement: `DELETE FROM ${tables.counters} WHERE expires_at <= ${NOW} AND counter_key IN (
      SELECT counter_key FROM ${tables.counters} WHERE expires_at <= ${NOW} LIMIT 1000)`,

    tallies: createPostgresTallies(tables),

    text: (value) => String(value),

    async withMigrationLock<T>(call: SqlCall, task: () => Promise<T>): Promise<T> {
      // DDL is transactional here: the whole migration commits or none of it does.
      await call.query('BEGIN')
      try {
        await call.query(`SET LOCAL statement_timeout = ${settings.migrationTimeoutMs}`)
        await call.query('SELECT pg_advisory_xact_lock(?::bigint)', [migrationLockKey])
        const result = await task()
        await call.query('COMMIT')
        return result
      } catch (error) {
        await call.query('ROLLBACK').catch(() => call.abort())
        throw error
      }
    },

    async ensureContainer(call: SqlCall): Promise<void> {
      if (!schema) return
      // Checked first: CREATE SCHEMA IF NOT EXISTS needs the CREATE right even when the schema exists.
      const rows = await call.query('SELECT 1 AS found FROM pg_namespace WHERE nspname = ?', [schema])
      if (rows.length === 0) await call.query(`CREATE SCHEMA IF NOT EXISTS ${quote(schema)}`)
    },

    async migrationsTableExists(call: SqlCall): Promise<boolean> {
      const rows = await call.query('SELECT to_regclass(?) IS NOT NULL AS found', [tables.migrations])
      return rows[0]?.found === true
    },

    createMigrationsTableStatement: `CREATE TABLE IF NOT EXISTS ${tables.migrations} (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`,

    isUniqueViolation: (error) => isPostgresError(error) && errorCode(error) === '23505',

    isPermissionDenied: (error) => isPostgresError(error) && errorCode(error) === '42501',

    isRetryable: (error) => isPostgresError(error) && RETRYABLE_STATES.has(errorCode(error) ?? ''),

    isUnavailable(error) {
      const code = errorCode(error)
      if (code === undefined) return false
      if (NETWORK_ERROR_CODES.has(code) || CLIENT_ERROR_CODES.has(code)) return true
      return isPostgresError(error) && (UNAVAILABLE_CLASSES.has(code.slice(0, 2)) || UNAVAILABLE_STATES.has(code))
    },
  }
}
