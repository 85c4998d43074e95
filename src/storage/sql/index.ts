/**
 * The SQL storage driver: PostgreSQL (through postgres.js) or MySQL 8 / MariaDB (through mysql2),
 * chosen by the URL's scheme. The client library is imported on first use, so importing this
 * module loads neither, and a PostgreSQL deployment never loads mysql2 (or the other way round).
 */
import type { StorageDriver } from '../contract'
import type { Dialect, DialectSettings } from './dialect'
import { createSqlDriver } from './driver'
import { createMysqlDialect } from './mysql'
import { createPostgresDialect } from './postgres'

export interface SqlStorageOptions {
  /**
   * Where the database is: `postgres://` or `postgresql://` for PostgreSQL, `mysql://` or
   * `mariadb://` for MySQL 8 / MariaDB. Must never be logged: it may hold a password.
   */
  url: string
  /**
   * Where the tables live, created when missing: a PostgreSQL schema (default: the connection's
   * current schema), or a MySQL/MariaDB database that overrides the URL's. Lowercase letters,
   * digits and `_`.
   */
  schema?: string
  /** Prefix of every table name (default `modelgate_`). Lowercase letters, digits and `_`. */
  tablePrefix?: string
  /** Connections per driver (default 10). */
  poolSize?: number
  /**
   * How long one storage call may take, waiting for a free connection included, before it fails
   * with `StorageUnavailableError` and its connection is discarded (default 5000 ms).
   */
  queryTimeoutMs?: number
  /** How long opening a connection may take (default 3000 ms). */
  connectTimeoutMs?: number
}

const DEFAULT_TABLE_PREFIX = 'modelgate_'
const DEFAULT_POOL_SIZE = 10
const DEFAULT_QUERY_TIMEOUT_MS = 5_000
const DEFAULT_CONNECT_TIMEOUT_MS = 3_000
/** Migrating may wait for another process that is migrating the same schema. */
const MIN_MIGRATION_TIMEOUT_MS = 60_000
const MAX_POOL_SIZE = 1_000
/** Keeps every table and index name within PostgreSQL's 63-byte identifiers. */
const MAX_TABLE_PREFIX_LENGTH = 40
const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/
const TABLE_PREFIX_PATTERN = new RegExp(`^[a-z0-9_]{0,${MAX_TABLE_PREFIX_LENGTH}}$`)

type Flavor = 'postgres' | 'mysql' | 'mariadb'

const FLAVORS: Record<string, Flavor> = {
  'postgres:': 'postgres',
  'postgresql:': 'postgres',
  'mysql:': 'mysql',
  'mariadb:': 'mariadb',
}

function fail(message: string): never {
  throw new TypeError(`sqlStorage: ${message}`)
}

const positiveInteger = (value: unknown, name: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number => {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > max) {
    fail(`options.${name} must be an integer from 1 to ${max}`)
  }
  return value as number
}

interface ResolvedSqlOptions {
  flavor: Flavor
  poolSize: number
  dialect: DialectSettings & { database: string | undefined }
}

// Messages never quote the URL: it may hold a password.
const resolveOptions = (options: SqlStorageOptions): ResolvedSqlOptions => {
  if (typeof options !== 'object' || options === null) fail('options must be an object')
  if (typeof options.url !== 'string' || options.url === '') fail('options.url must be a non-empty string')
  let url: URL
  try {
    url = new URL(options.url)
  } catch {
    return fail('options.url is not a valid URL')
  }
  const flavor = FLAVORS[url.protocol]
  if (!flavor) fail('options.url must start with postgres://, postgresql://, mysql:// or mariadb://')
  if (url.host.includes(',')) fail('options.url must name a single host')

  const { schema } = options
  if (schema !== undefined && (typeof schema !== 'string' || !SCHEMA_PATTERN.test(schema))) {
    fail('options.schema must be 1 to 63 lowercase letters, digits or _, not starting with a digit')
  }
  const tablePrefix = options.tablePrefix ?? DEFAULT_TABLE_PREFIX
  if (typeof tablePrefix !== 'string' || !TABLE_PREFIX_PATTERN.test(tablePrefix)) {
    fail(`options.tablePrefix must be at most ${MAX_TABLE_PREFIX_LENGTH} lowercase letters, digits or _`)
  }
  const poolSize = positiveInteger(options.poolSize, 'poolSize', DEFAULT_POOL_SIZE, MAX_POOL_SIZE)
  const queryTimeoutMs = positiveInteger(options.queryTimeoutMs, 'queryTimeoutMs', DEFAULT_QUERY_TIMEOUT_MS)
  const connectTimeoutMs = positiveInteger(options.connectTimeoutMs, 'connectTimeoutMs', DEFAULT_CONNECT_TIMEOUT_MS)

  let database: string | undefined
  if (flavor !== 'postgres') {
    database = schema ?? decodeURIComponent(url.pathname.slice(1))
    if (!database) fail('a mysql:// or mariadb:// URL needs a database name, or pass options.schema')
    if (database.length > 64) fail('the database name must be at most 64 characters')
  }

  return {
    flavor,
    poolSize,
    dialect: {
      url: options.url,
      schema,
      tablePrefix,
      queryTimeoutMs,
      connectTimeoutMs,
      migrationTimeoutMs: Math.max(MIN_MIGRATION_TIMEOUT_MS, queryTimeoutMs),
      database,
    },
  }
}

const PACKAGES: Record<Flavor, string> = { postgres: 'postgres', mysql: 'mysql2', mariadb: 'mysql2' }

const dialectLoader = ({ flavor, dialect }: ResolvedSqlOptions) => async (): Promise<Dialect> => {
  try {
    return flavor === 'postgres'
      ? await createPostgresDialect(dialect)
      : await createMysqlDialect({ ...dialect, database: dialect.database! })
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error
    const name = PACKAGES[flavor]
    throw new Error(`modelgate: ${flavor}:// storage needs the "${name}" package; install it with npm install ${name}`, {
      cause: error,
    })
  }
}

const build = (options: SqlStorageOptions) => {
  const resolved = resolveOptions(options)
  return createSqlDriver({
    name: resolved.flavor,
    loadDialect: dialectLoader(resolved),
    poolSize: resolved.poolSize,
    queryTimeoutMs: resolved.dialect.queryTimeoutMs,
    migrationTimeoutMs: resolved.dialect.migrationTimeoutMs,
  })
}

/**
 * A driver for PostgreSQL, MySQL 8 or MariaDB that several gateway processes can share. It
 * connects and migrates in the background on first use; calls made while the database is down
 * fail with `StorageUnavailableError` (503) and it recovers by itself. Use `openSqlStorage` to
 * see connection or migration errors at startup.
 *
 * @example
 * const gateway = createGateway({ storage: sqlStorage({ url: process.env.DATABASE_URL! }) })
 */
export const sqlStorage = (options: SqlStorageOptions): StorageDriver => build(options).driver

/**
 * Connects, migrates the schema and resolves with the driver. Rejects with
 * `StorageUnavailableError` (its `cause` says why) when the database cannot be reached in time,
 * and with a plain `Error` when the client package is missing or a migration fails.
 *
 * @example
 * const storage = await openSqlStorage({ url: 'postgres://gateway@db:5432/gateway', schema: 'modelgate' })
 */
export const openSqlStorage = async (options: SqlStorageOptions): Promise<StorageDriver> => {
  const { driver, ready } = build(options)
  try {
    await ready()
  } catch (error) {
    await driver.close()
    throw error
  }
  return driver
}
