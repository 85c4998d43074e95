/**
 * Moves an embedded file store (src/storage/file.ts) into a SQLite file, once. The file store is read by its own
 * loader (src/storage/file-load.ts) under its lock, without writing to its files, and as its driver would open it:
 * spend counters of an older version carried into tallies, every hold released (the lock proves their processes are
 * gone). Everything it holds is inserted in one transaction, together with a row in `<prefix>imports` naming the
 * directory and the last write the files hold; then the files move into `<directory>/file-store-backup-<time>/`.
 *
 * A start cut short between that commit and the move finds the files again, with the same last write: it only moves
 * them. Files holding writes the SQLite file has not seen (a store used again by an older version after an import)
 * are imported again, and rows both hold fail the import loudly rather than being merged.
 */
import { mkdir, rename } from 'node:fs/promises'
import { join } from 'node:path'
import { readFileStore, STORE_FILES } from '../file-load'
import { PRIVATE_DIRECTORY_MODE } from '../private-files'
import type { Dialect, SqlCall, SqlValue } from './dialect'
import { migrate, sqliteImportsTable } from './migrations'
import { sharedSqlitePool } from './sqlite'

export interface FileStoreImport {
  /** Records moved, per collection. */
  records: Record<string, number>
  /** Live counters, tallies and remembered settlement ids moved. */
  counters: number
  tallies: number
  settled: number
  /** Holds the file store still had, released before the move (what they held back is free again). */
  releasedHolds: number
  /** False when an earlier start had moved the contents already, and only the files were left to move aside. */
  isNew: boolean
  /** Where the old files are now. */
  backupDirectory: string
}

/** Rows per multi-row insert (SQLite binds at most 32 766 values to one statement; a record row has 7). */
const CHUNK_ROWS = 500

/** Inserts rows as they come, a chunk at a time: a store of millions of records is never copied whole. */
const insertRows = async (call: SqlCall, table: string, columns: string[], rows: Iterable<SqlValue[]>): Promise<void> => {
  const row = `(${columns.map(() => '?').join(', ')})`
  let chunk: SqlValue[][] = []
  const send = async () => {
    if (chunk.length === 0) return
    await call.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${Array(chunk.length).fill(row).join(', ')}`, chunk.flat())
    chunk = []
  }
  for (const values of rows) {
    chunk.push(values)
    if (chunk.length === CHUNK_ROWS) await send()
  }
  await send()
}

/** `items` mapped lazily, each to any number of rows. */
function* rowsOf<T>(items: Iterable<T>, toRows: (item: T) => Iterable<SqlValue[]>): Generator<SqlValue[]> {
  for (const item of items) yield* toRows(item)
}

/** `2025-01-31T12-00-00-000Z`: a name every file system takes, sorting as time does. */
const timestamp = () => new Date().toISOString().replaceAll(':', '-').replace('.', '-')

/** Moves the store's files into a new backup directory: the snapshots first, the journal last (see the header). */
const moveAside = async (directory: string): Promise<string> => {
  const backupDirectory = join(directory, `file-store-backup-${timestamp()}`)
  await mkdir(backupDirectory, { mode: PRIVATE_DIRECTORY_MODE })
  for (const name of STORE_FILES) {
    await rename(join(directory, name), join(backupDirectory, name)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error
    })
  }
  return backupDirectory
}

/** An import of millions of records may take minutes on a slow disk; past this it is rolled back. */
const IMPORT_TIMEOUT_MS = 30 * 60_000

export const importFileStore = async (options: {
  directory: string
  /** The SQLite file. */
  path: string
  loadDialect: () => Promise<Dialect>
}): Promise<FileStoreImport | undefined> => {
  const read = await readFileStore(options.directory)
  if (!read) return undefined
  try {
    const dialect = await options.loadDialect()
    const t = dialect.tables
    const imports = sqliteImportsTable(t)
    const { state } = read
    const summary = {
      records: Object.fromEntries(Object.entries(state.collections).map(([collection, records]) => [collection, records.length])),
      counters: state.counters.length,
      tallies: state.tallies?.length ?? 0,
      settled: state.settled?.length ?? 0,
      releasedHolds: read.releasedHolds,
    }
    let isNew = true
    // The file's one connection of this process, as its drivers use it (src/storage/sql/sqlite.ts).
    const pool = sharedSqlitePool(options.path, dialect.connect)
    try {
      await pool.run(IMPORT_TIMEOUT_MS, async (call) => {
        await migrate(call, dialect)
        // The migration lock is the write lock, waited for as long as a migration may take.
        await dialect.withMigrationLock(call, async () => {
          const [done] = await call.query(`SELECT seq FROM ${imports} WHERE source = ?`, [options.directory])
          if (done && Number(done.seq) === read.seq) {
            isNew = false
            return
          }
          for (const [collection, records] of Object.entries(state.collections)) {
            await insertRows(
              call,
              t.records,
              ['collection', 'id', 'version', 'data', 'sort_key', 'indexes_json', 'uniques_json'],
              rowsOf(records, (record) => [
                [
                  collection,
                  record.id,
                  record.version,
                  JSON.stringify(record.data),
                  record.sortKey,
                  JSON.stringify(record.indexes),
                  JSON.stringify(record.uniques),
                ],
              ]),
            )
            await insertRows(
              call,
              t.uniques,
              ['collection', 'unique_key', 'record_id'],
              rowsOf(records, (record) => record.uniques.map((key) => [collection, key, record.id])),
            )
            await insertRows(
              call,
              t.indexes,
              ['collection', 'field', 'value', 'record_id'],
              rowsOf(records, (record) => Object.entries(record.indexes).map(([field, value]) => [collection, field, value, record.id])),
            )
          }
          await insertRows(call, t.counters, ['counter_key', 'value', 'expires_at'], rowsOf(state.counters, ({ key, value, expiresAt }) => [[key, value, expiresAt]]))
          await insertRows(call, t.tallies, ['tally_key', 'value', 'expires_at'], rowsOf(state.tallies ?? [], ({ key, value, expiresAt }) => [[key, value, expiresAt]]))
          await insertRows(call, t.settled, ['id', 'expires_at'], rowsOf(state.settled ?? [], ({ id, expiresAt }) => [[id, expiresAt]]))
          await call.query(
            `INSERT INTO ${imports} (source, seq, imported_at) VALUES (?, ?, ?)
             ON CONFLICT (source) DO UPDATE SET seq = excluded.seq, imported_at = excluded.imported_at`,
            [options.directory, read.seq, Date.now()],
          )
        })
        // The log holds the whole import; fold it into the file now rather than at the first checkpoint of the traffic.
        if (isNew) await call.query('PRAGMA wal_checkpoint(TRUNCATE)')
      })
    } finally {
      await pool.close(1_000)
    }
    return { ...summary, isNew, backupDirectory: await moveAside(options.directory) }
  } finally {
    await read.release()
  }
}
