/**
 * The SQLite storage driver: the shared SQL driver (src/storage/sql/driver.ts) over a database file, through libsql,
 * loaded on first use. The standalone runner's default store. Records live in the file, not in the heap, and several
 * processes on one machine may share it (docs/decisions.md, "The runner's store is SQLite").
 */
import { access, open } from 'node:fs/promises'
import { resolve } from 'node:path'
import type { StorageDriver } from './contract'
import { PRIVATE_FILE_MODE } from './private-files'
import { createSqlDriver } from './sql/driver'
import { createSqliteDialect, sharedSqlitePool } from './sql/sqlite'
import { importFileStore as importFileStoreInto, type FileStoreImport } from './sql/sqlite-import'

export type { FileStoreImport } from './sql/sqlite-import'

export interface SqliteStorageOptions {
  /** The database file, created (owner-only) when missing, with its directory. SQLite adds `-wal` and `-shm` beside it. */
  path: string
  /**
   * How long one storage call may take, waiting for another process's write transaction included, before it fails
   * with `StorageUnavailableError` (default 5000 ms).
   */
  queryTimeoutMs?: number
  /** Prefix of every table name (default `modelgate_`). Lowercase letters, digits and `_`. */
  tablePrefix?: string
}

const DEFAULT_TABLE_PREFIX = 'modelgate_'
const DEFAULT_QUERY_TIMEOUT_MS = 5_000
/** Migrating may wait for another process that is migrating the same file, or importing a file store into it. */
const MIN_MIGRATION_TIMEOUT_MS = 60_000
const TABLE_PREFIX_PATTERN = /^[a-z0-9_]{0,40}$/

function fail(message: string): never {
  throw new TypeError(`sqliteStorage: ${message}`)
}

interface ResolvedSqliteOptions {
  path: string
  tablePrefix: string
  queryTimeoutMs: number
  migrationTimeoutMs: number
}

const resolveOptions = (options: SqliteStorageOptions): ResolvedSqliteOptions => {
  if (typeof options !== 'object' || options === null) fail('options must be an object')
  if (typeof options.path !== 'string' || options.path === '') fail('options.path must be a non-empty string')
  // Each connection to `:memory:` (or a `file:` URI naming one) is a database of its own: use memoryStorage.
  if (options.path === ':memory:' || /^file:/i.test(options.path)) fail('options.path must be a file path (for a store in memory, use memoryStorage)')
  const tablePrefix = options.tablePrefix ?? DEFAULT_TABLE_PREFIX
  if (typeof tablePrefix !== 'string' || !TABLE_PREFIX_PATTERN.test(tablePrefix)) {
    fail('options.tablePrefix must be at most 40 lowercase letters, digits or _')
  }
  const queryTimeoutMs = options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS
  if (!Number.isSafeInteger(queryTimeoutMs) || queryTimeoutMs < 1) fail('options.queryTimeoutMs must be a positive integer')
  return {
    path: resolve(options.path),
    tablePrefix,
    queryTimeoutMs,
    migrationTimeoutMs: Math.max(MIN_MIGRATION_TIMEOUT_MS, queryTimeoutMs),
  }
}

const dialectLoader = (resolved: ResolvedSqliteOptions) => async () => {
  try {
    return await createSqliteDialect({
      path: resolved.path,
      tablePrefix: resolved.tablePrefix,
      busyTimeoutMs: resolved.queryTimeoutMs,
      migrationTimeoutMs: resolved.migrationTimeoutMs,
    })
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error
    throw new Error(
      'modelgate: SQLite storage needs the "libsql" package, an optional dependency of modelgate with prebuilt binaries for ' +
        'Linux, macOS and Windows on x64 and arm64; install it with npm install libsql, or use another store',
      { cause: error },
    )
  }
}

const build = (options: SqliteStorageOptions) => {
  const resolved = resolveOptions(options)
  return createSqlDriver({
    name: 'sqlite',
    loadDialect: dialectLoader(resolved),
    // One connection per file and process, shared by its drivers: libsql's statements block the thread, so a second
    // connection of this process waiting in SQLite's busy handler for the first would wait for a transaction that
    // cannot go on meanwhile.
    poolSize: 1,
    createPool: (dialect) => sharedSqlitePool(resolved.path, dialect.connect),
    queryTimeoutMs: resolved.queryTimeoutMs,
    migrationTimeoutMs: resolved.migrationTimeoutMs,
  })
}

/**
 * A driver on a SQLite file, which processes on one machine may share. It opens and migrates the file on first use;
 * use `openSqliteStorage` to see errors (a file that cannot be opened, no libsql for this platform) at startup.
 *
 * @example
 * const gateway = createGateway({ storage: sqliteStorage({ path: '.modelgate/modelgate.db' }) })
 */
export const sqliteStorage = (options: SqliteStorageOptions): StorageDriver => build(options).driver

/**
 * Opens the file (creating it), migrates its tables and resolves with the driver. Rejects with
 * `StorageUnavailableError` (its `cause` says why) when the file cannot be opened or stays locked, and with a plain
 * `Error` when libsql is missing or a migration fails.
 *
 * @example
 * const storage = await openSqliteStorage({ path: '/var/lib/modelgate/modelgate.db' })
 */
export const openSqliteStorage = async (options: SqliteStorageOptions): Promise<StorageDriver> => {
  const { driver, ready } = build(options)
  try {
    await ready()
  } catch (error) {
    await driver.close()
    throw error
  }
  return driver
}

/**
 * Moves an embedded file store (`fileStorage`'s directory: its snapshot and journal) into a SQLite file, once: every
 * record with its version, unique keys, indexes and sort key, the live counters and tallies and the remembered
 * settlement ids, in one transaction (holds are released, as the file store does when it opens). The old files then
 * move into `<directory>/file-store-backup-<time>/`. Resolves with what was moved, or `undefined` when the
 * directory holds no file store. Rejects, changing nothing, while a process holds the file store.
 *
 * @example
 * const moved = await importFileStore({ directory: '.modelgate', path: '.modelgate/modelgate.db' })
 */
export const importFileStore = async (options: { directory: string } & SqliteStorageOptions): Promise<FileStoreImport | undefined> => {
  if (typeof options?.directory !== 'string' || options.directory === '') fail('options.directory must be a non-empty string')
  const resolved = resolveOptions(options)
  return importFileStoreInto({
    directory: resolve(options.directory),
    path: resolved.path,
    loadDialect: dialectLoader(resolved),
  })
}

/** A copy of millions of records takes a while; past this it is given up (and its file left to remove). */
const BACKUP_TIMEOUT_MS = 60 * 60_000

/**
 * Writes a consistent copy of the SQLite store at `options.path` to `options.to` (owner-only, a file that must not
 * exist yet) while other processes keep using the store: SQLite's `VACUUM INTO` reads one snapshot, and writers go
 * on beside it. The copy is compact and needs no `-wal` file. Its statement runs on the calling thread until done, so
 * call it from a process of its own (`modelgate backup`), not from a gateway serving traffic.
 *
 * @example
 * await backupSqliteStorage({ path: '.modelgate/modelgate.db', to: 'backups/modelgate-2025-01-31.db' })
 */
export const backupSqliteStorage = async (options: { path: string; to: string }): Promise<void> => {
  if (typeof options?.to !== 'string' || options.to === '') fail('options.to must be a non-empty string')
  const resolved = resolveOptions({ path: options.path })
  const to = resolve(options.to)
  // Never a new, empty store where the caller expected one.
  await access(resolved.path)
  // Created empty and owner-only first: VACUUM INTO writes into an empty file, keeping its permissions.
  await (await open(to, 'wx', PRIVATE_FILE_MODE)).close()
  const dialect = await dialectLoader(resolved)()
  const pool = sharedSqlitePool(resolved.path, dialect.connect)
  try {
    await pool.run(BACKUP_TIMEOUT_MS, (call) => call.query('VACUUM INTO ?', [to]))
  } finally {
    await pool.close(1_000)
  }
}
