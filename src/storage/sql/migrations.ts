/**
 * Versioned schema changes, applied in order when a driver opens. Each version runs once per
 * schema: the runner takes a lock (so several gateway processes may start at once), re-reads the
 * applied versions inside it and records each version it applies. Statements are idempotent
 * (`IF NOT EXISTS`, or drop-then-create), because MySQL commits DDL at once and a crash may leave a
 * version half applied. Never edit a released migration; add a new version.
 *
 * Key columns compare in byte order, never by a locale collation: `COLLATE "C"` on PostgreSQL,
 * VARBINARY on MySQL/MariaDB (utf8mb4_bin would ignore trailing spaces in unique keys), TEXT on SQLite (whose
 * default BINARY collation compares bytes). JSON is stored as the exact text `JSON.stringify` wrote (`json`, not
 * `jsonb`, which reorders keys and refuses `\u0000`; LONGTEXT on MySQL, whose JSON type reorders keys too; TEXT on
 * SQLite).
 *
 * SQLite arrived with all three versions at once (no SQLite store predates them), so its statements are simply the
 * layout of the current release, split as the others are. Its key-ordered tables are `WITHOUT ROWID` (the primary
 * key is the table), and none is `STRICT`, so the `sqlite3` shell of older distributions can still open a backup.
 */
import { NOW_MS, type Dialect, type DialectName, type SqlCall, type TableNames } from './dialect'
import { KEY_LIMITS } from './keys'
import { mysqlTallyProcedures } from './mysql-tallies'

export interface Migration {
  version: number
  name: string
  /** The statements to run, per dialect; `call` may be read first to decide which (nothing may be written with it). */
  up: Record<DialectName, (tables: TableNames, call: SqlCall) => string[] | Promise<string[]>>
  /** The privileges its statements need beyond creating tables, named in the error when the database refuses them. */
  privileges?: Partial<Record<DialectName, string>>
}

const quotePostgres = (name: string) => `"${name}"`
/** SQLite names indexes per database, as PostgreSQL does per schema: each carries the table prefix. */
const quoteSqlite = quotePostgres

/**
 * Where SQLite remembers which embedded file stores it imported (src/storage/sql/sqlite-import.ts): the import's
 * rows and its row here commit together, so an import cut short after its commit is never applied twice.
 */
export const sqliteImportsTable = (t: TableNames) => quoteSqlite(`${t.prefix}imports`)

const MYSQL_TABLE_OPTIONS = 'ENGINE=InnoDB ROW_FORMAT=DYNAMIC DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
const MYSQL_TEXT = 'LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin'

/** JSON_TABLE arrived in MySQL 8.0.4 and MariaDB 10.6; an older server's parser refuses the probe (ER_PARSE_ERROR). */
const hasJsonTable = async (call: SqlCall): Promise<boolean> => {
  try {
    await call.query(`SELECT COUNT(*) AS found FROM JSON_TABLE('[]', '$[*]' COLUMNS (probe INT PATH '$')) AS probe`)
    return true
  } catch (error) {
    if ((error as { errno?: unknown } | null)?.errno === 1064) return false
    throw error
  }
}

/** A JSON_TABLE column holding one string of a row array, extracted as text (never a JSON value, which MySQL reformats). */
const textAt = (name: string, index: number) => `${name} ${MYSQL_TEXT} PATH '$[${index}]'`

/**
 * Stores a batch of new records in one round trip (one `CALL`): MySQL and MariaDB have no data-modifying WITH,
 * and mysql2 sends one statement at a time. The rows arrive as JSON arrays of `NewRecordRows` (src/storage/sql/
 * dialect.ts) whose JSON columns are strings, so they land as the exact text `JSON.stringify` wrote; a list with
 * no rows arrives as NULL. Any failure rolls the whole batch back and is raised again unchanged, so a taken id or
 * key is still a duplicate-key error the driver resolves record by record. Rows go in array order, which keeps
 * unique keys in the key order the driver sorted them into. SQL SECURITY INVOKER: a caller can do nothing
 * through it that it could not do itself, and it keeps working after the account that migrated is dropped.
 */
const mysqlInsertRecordsProcedure = (t: TableNames) => `CREATE PROCEDURE ${t.insertRecordsProcedure} (
    IN batch_collection VARBINARY(${KEY_LIMITS.collection}),
    IN batch_records ${MYSQL_TEXT},
    IN batch_uniques ${MYSQL_TEXT},
    IN batch_indexes ${MYSQL_TEXT}
  )
  MODIFIES SQL DATA
  SQL SECURITY INVOKER
  BEGIN
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
      ROLLBACK;
      RESIGNAL;
    END;
    START TRANSACTION;
    INSERT INTO ${t.records} (collection, id, version, data, sort_key, indexes_json, uniques_json)
      SELECT batch_collection, b.id, b.version, b.data, b.sort_key, b.indexes_json, b.uniques_json
      FROM JSON_TABLE(batch_records, '$[*]' COLUMNS (
        ordinal FOR ORDINALITY,
        ${textAt('id', 0)},
        version BIGINT PATH '$[1]',
        ${textAt('data', 2)},
        ${textAt('sort_key', 3)},
        ${textAt('indexes_json', 4)},
        ${textAt('uniques_json', 5)}
      )) AS b
      ORDER BY b.ordinal;
    IF batch_uniques IS NOT NULL THEN
      INSERT INTO ${t.uniques} (collection, unique_key, record_id)
        SELECT batch_collection, b.unique_key, b.record_id
        FROM JSON_TABLE(batch_uniques, '$[*]' COLUMNS (
          ordinal FOR ORDINALITY,
          ${textAt('unique_key', 0)},
          ${textAt('record_id', 1)}
        )) AS b
        ORDER BY b.ordinal;
    END IF;
    IF batch_indexes IS NOT NULL THEN
      INSERT INTO ${t.indexes} (collection, field, value, record_id)
        SELECT batch_collection, b.field, b.value, b.record_id
        FROM JSON_TABLE(batch_indexes, '$[*]' COLUMNS (
          ordinal FOR ORDINALITY,
          ${textAt('field', 0)},
          ${textAt('value', 1)},
          ${textAt('record_id', 2)}
        )) AS b
        ORDER BY b.ordinal;
    END IF;
    COMMIT;
  END`

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'records, uniques, indexes and counters',
    up: {
      postgres: (t) => [
        `CREATE TABLE IF NOT EXISTS ${t.records} (
          collection text COLLATE "C" NOT NULL,
          id text COLLATE "C" NOT NULL,
          version bigint NOT NULL,
          data json NOT NULL,
          sort_key text COLLATE "C" NOT NULL,
          indexes_json json NOT NULL,
          uniques_json json NOT NULL,
          PRIMARY KEY (collection, id)
        )`,
        `CREATE INDEX IF NOT EXISTS ${quotePostgres(`${t.prefix}records_order`)}
          ON ${t.records} (collection, sort_key, id)`,
        `CREATE TABLE IF NOT EXISTS ${t.uniques} (
          collection text COLLATE "C" NOT NULL,
          unique_key text COLLATE "C" NOT NULL,
          record_id text COLLATE "C" NOT NULL,
          PRIMARY KEY (collection, unique_key)
        )`,
        `CREATE TABLE IF NOT EXISTS ${t.indexes} (
          collection text COLLATE "C" NOT NULL,
          field text COLLATE "C" NOT NULL,
          value text COLLATE "C" NOT NULL,
          record_id text COLLATE "C" NOT NULL,
          PRIMARY KEY (collection, field, value, record_id)
        )`,
        `CREATE INDEX IF NOT EXISTS ${quotePostgres(`${t.prefix}indexes_record`)}
          ON ${t.indexes} (collection, record_id)`,
        `CREATE TABLE IF NOT EXISTS ${t.counters} (
          counter_key text COLLATE "C" NOT NULL PRIMARY KEY,
          value double precision NOT NULL,
          expires_at bigint NOT NULL
        )`,
        `CREATE INDEX IF NOT EXISTS ${quotePostgres(`${t.prefix}counters_expiry`)}
          ON ${t.counters} (expires_at)`,
      ],
      // Key sizes stay under InnoDB's 3072-byte index limit: the widest key, indexes' primary key, is 2046 bytes.
      mysql: (t) => [
        `CREATE TABLE IF NOT EXISTS ${t.records} (
          collection VARBINARY(${KEY_LIMITS.collection}) NOT NULL,
          id VARBINARY(${KEY_LIMITS.id}) NOT NULL,
          version BIGINT NOT NULL,
          data ${MYSQL_TEXT} NOT NULL,
          sort_key VARBINARY(${KEY_LIMITS.sortKey}) NOT NULL,
          indexes_json ${MYSQL_TEXT} NOT NULL,
          uniques_json ${MYSQL_TEXT} NOT NULL,
          PRIMARY KEY (collection, id),
          KEY records_order (collection, sort_key, id)
        ) ${MYSQL_TABLE_OPTIONS}`,
        `CREATE TABLE IF NOT EXISTS ${t.uniques} (
          collection VARBINARY(${KEY_LIMITS.collection}) NOT NULL,
          unique_key VARBINARY(${KEY_LIMITS.uniqueKey}) NOT NULL,
          record_id VARBINARY(${KEY_LIMITS.id}) NOT NULL,
          PRIMARY KEY (collection, unique_key)
        ) ${MYSQL_TABLE_OPTIONS}`,
        `CREATE TABLE IF NOT EXISTS ${t.indexes} (
          collection VARBINARY(${KEY_LIMITS.collection}) NOT NULL,
          field VARBINARY(${KEY_LIMITS.indexField}) NOT NULL,
          value VARBINARY(${KEY_LIMITS.indexValue}) NOT NULL,
          record_id VARBINARY(${KEY_LIMITS.id}) NOT NULL,
          PRIMARY KEY (collection, field, value, record_id),
          KEY indexes_record (collection, record_id)
        ) ${MYSQL_TABLE_OPTIONS}`,
        `CREATE TABLE IF NOT EXISTS ${t.counters} (
          counter_key VARBINARY(${KEY_LIMITS.counterKey}) NOT NULL PRIMARY KEY,
          value DOUBLE NOT NULL,
          expires_at BIGINT NOT NULL,
          KEY counters_expiry (expires_at)
        ) ${MYSQL_TABLE_OPTIONS}`,
      ],
      sqlite: (t) => [
        `CREATE TABLE IF NOT EXISTS ${t.records} (
          collection TEXT NOT NULL,
          id TEXT NOT NULL,
          version INTEGER NOT NULL,
          data TEXT NOT NULL,
          sort_key TEXT NOT NULL,
          indexes_json TEXT NOT NULL,
          uniques_json TEXT NOT NULL,
          PRIMARY KEY (collection, id)
        )`,
        `CREATE INDEX IF NOT EXISTS ${quoteSqlite(`${t.prefix}records_order`)} ON ${t.records} (collection, sort_key, id)`,
        `CREATE TABLE IF NOT EXISTS ${t.uniques} (
          collection TEXT NOT NULL,
          unique_key TEXT NOT NULL,
          record_id TEXT NOT NULL,
          PRIMARY KEY (collection, unique_key)
        ) WITHOUT ROWID`,
        `CREATE TABLE IF NOT EXISTS ${t.indexes} (
          collection TEXT NOT NULL,
          field TEXT NOT NULL,
          value TEXT NOT NULL,
          record_id TEXT NOT NULL,
          PRIMARY KEY (collection, field, value, record_id)
        ) WITHOUT ROWID`,
        // No (collection, record_id) index as the others have: every statement that reads index rows names field and
        // value too, so the primary key finds them, and each record's random id would cost a second random insert.
        `CREATE TABLE IF NOT EXISTS ${t.counters} (
          counter_key TEXT NOT NULL PRIMARY KEY,
          value REAL NOT NULL,
          expires_at INTEGER NOT NULL
        ) WITHOUT ROWID`,
        `CREATE INDEX IF NOT EXISTS ${quoteSqlite(`${t.prefix}counters_expiry`)} ON ${t.counters} (expires_at)`,
        `CREATE TABLE IF NOT EXISTS ${sqliteImportsTable(t)} (
          source TEXT NOT NULL PRIMARY KEY,
          seq INTEGER NOT NULL,
          imported_at INTEGER NOT NULL
        )`,
      ],
    },
  },
  {
    version: 2,
    name: 'a batch of new records in one round trip',
    up: {
      // One statement already does it (data-modifying WITH, src/storage/sql/driver.ts).
      postgres: () => [],
      // MySQL 8 has no CREATE PROCEDURE IF NOT EXISTS; the migration lock keeps the pair from racing. Without
      // JSON_TABLE there is no procedure, and batches keep their transaction (the driver finds none to call).
      mysql: async (t, call) =>
        (await hasJsonTable(call))
          ? [`DROP PROCEDURE IF EXISTS ${t.insertRecordsProcedure}`, mysqlInsertRecordsProcedure(t)]
          : [],
      // A transaction of prepared inserts inside this process is already one step (src/storage/sql/sqlite.ts).
      sqlite: () => [],
    },
    privileges: { mysql: 'the CREATE ROUTINE and ALTER ROUTINE privileges on the database' },
  },
  {
    // Tallies, holds and settled ids (src/storage/contract.ts). A `settled` row is a settled id until `expires_at`,
    // or, with `expires_at` NULL, the claim of a held id (see src/storage/sql/postgres-tallies.ts): both decide who
    // wins when writers of one id meet. The spend that releases before tallies kept in ordinary counters (keys
    // `spend:...`, src/repositories/spend-counters.ts) is carried over once, live counters only; the old counters
    // are left as they are (nothing reads them any more; they expire and are swept like any counter, and a rollback
    // to the previous release still finds them). Under the migration lock, with the version recorded in the same
    // transaction on PostgreSQL, so processes upgrading at once copy once; MySQL commits DDL at once, so a run cut
    // short before recording the version copies again, and keeps the tallies the first run wrote (no process uses
    // tallies before the version is recorded).
    version: 3,
    name: 'tallies, holds and settled ids',
    up: {
      postgres: (t) => [
        `CREATE TABLE IF NOT EXISTS ${t.tallies} (
          tally_key text COLLATE "C" NOT NULL PRIMARY KEY,
          value double precision NOT NULL,
          expires_at bigint NOT NULL
        )`,
        `CREATE INDEX IF NOT EXISTS ${quotePostgres(`${t.prefix}tallies_expiry`)} ON ${t.tallies} (expires_at)`,
        `CREATE TABLE IF NOT EXISTS ${t.holds} (
          id text COLLATE "C" NOT NULL PRIMARY KEY,
          owner text NOT NULL,
          expires_at bigint NOT NULL,
          changes json NOT NULL
        )`,
        `CREATE INDEX IF NOT EXISTS ${quotePostgres(`${t.prefix}holds_expiry`)} ON ${t.holds} (expires_at)`,
        `CREATE TABLE IF NOT EXISTS ${t.settled} (
          id text COLLATE "C" NOT NULL PRIMARY KEY,
          expires_at bigint
        )`,
        `CREATE INDEX IF NOT EXISTS ${quotePostgres(`${t.prefix}settled_expiry`)} ON ${t.settled} (expires_at)`,
        `INSERT INTO ${t.tallies} (tally_key, value, expires_at)
          SELECT counter_key, value, expires_at FROM ${t.counters}
          WHERE counter_key LIKE 'spend:%' AND expires_at > ${NOW_MS.postgres}
          ON CONFLICT (tally_key) DO NOTHING`,
      ],
      mysql: async (t, call) => [
        `CREATE TABLE IF NOT EXISTS ${t.tallies} (
          tally_key VARBINARY(${KEY_LIMITS.counterKey}) NOT NULL PRIMARY KEY,
          value DOUBLE NOT NULL,
          expires_at BIGINT NOT NULL,
          KEY tallies_expiry (expires_at)
        ) ${MYSQL_TABLE_OPTIONS}`,
        `CREATE TABLE IF NOT EXISTS ${t.holds} (
          id VARBINARY(${KEY_LIMITS.id}) NOT NULL PRIMARY KEY,
          owner VARBINARY(${KEY_LIMITS.holdOwner}) NOT NULL,
          expires_at BIGINT NOT NULL,
          changes ${MYSQL_TEXT} NOT NULL,
          KEY holds_expiry (expires_at)
        ) ${MYSQL_TABLE_OPTIONS}`,
        `CREATE TABLE IF NOT EXISTS ${t.settled} (
          id VARBINARY(${KEY_LIMITS.id}) NOT NULL PRIMARY KEY,
          expires_at BIGINT NULL,
          KEY settled_expiry (expires_at)
        ) ${MYSQL_TABLE_OPTIONS}`,
        `INSERT INTO ${t.tallies} (tally_key, value, expires_at)
          SELECT counter_key, value, expires_at FROM ${t.counters}
          WHERE counter_key LIKE 'spend:%' AND expires_at > ${NOW_MS.mysql}
          ON DUPLICATE KEY UPDATE tally_key = tally_key`,
        // One call per tally method, as migration 2 does for batches of records; without JSON_TABLE, none, and the
        // driver runs each method as a transaction (src/storage/sql/mysql-tallies.ts).
        ...((await hasJsonTable(call)) ? mysqlTallyProcedures(t) : []),
      ],
      // No claim rows: a write transaction holds the whole database, so a hold and a settlement of one id never
      // overlap (src/storage/sql/sqlite-tallies.ts). A new SQLite store has no spend counters to carry over; the
      // embedded file store's are carried by its import (src/storage/sql/sqlite-import.ts).
      sqlite: (t) => [
        `CREATE TABLE IF NOT EXISTS ${t.tallies} (
          tally_key TEXT NOT NULL PRIMARY KEY,
          value REAL NOT NULL,
          expires_at INTEGER NOT NULL
        ) WITHOUT ROWID`,
        `CREATE INDEX IF NOT EXISTS ${quoteSqlite(`${t.prefix}tallies_expiry`)} ON ${t.tallies} (expires_at)`,
        `CREATE TABLE IF NOT EXISTS ${t.holds} (
          id TEXT NOT NULL PRIMARY KEY,
          owner TEXT NOT NULL,
          expires_at INTEGER NOT NULL,
          changes TEXT NOT NULL
        ) WITHOUT ROWID`,
        `CREATE INDEX IF NOT EXISTS ${quoteSqlite(`${t.prefix}holds_expiry`)} ON ${t.holds} (expires_at)`,
        `CREATE TABLE IF NOT EXISTS ${t.settled} (
          id TEXT NOT NULL PRIMARY KEY,
          expires_at INTEGER NOT NULL
        ) WITHOUT ROWID`,
        `CREATE INDEX IF NOT EXISTS ${quoteSqlite(`${t.prefix}settled_expiry`)} ON ${t.settled} (expires_at)`,
      ],
    },
    privileges: { mysql: 'the CREATE ROUTINE and ALTER ROUTINE privileges on the database' },
  },
]

const appliedVersions = async (call: SqlCall, tables: TableNames): Promise<Set<number>> => {
  const rows = await call.query(`SELECT version FROM ${tables.migrations}`)
  return new Set(rows.map((row) => Number(row.version)))
}

const isComplete = (applied: Set<number>) => MIGRATIONS.every((migration) => applied.has(migration.version))

/** A refused privilege named in plain words: the database's own message often names only the database. */
const explained = (dialect: Dialect, migration: Migration, error: unknown): unknown => {
  const privileges = migration.privileges?.[dialect.name]
  if (privileges === undefined || !dialect.isPermissionDenied(error)) return error
  return new Error(
    `migration ${migration.version} (${migration.name}) needs ${privileges}; grant them to the user that migrates, ` +
      `or open the storage once as a user that has them (${(error as Error)?.message ?? error})`,
    { cause: error },
  )
}

/**
 * Brings the schema up to date. The common case (already migrated) reads one table and takes no
 * lock, so a runtime user without DDL rights can open a schema that an admin migrated.
 */
export const migrate = async (call: SqlCall, dialect: Dialect): Promise<void> => {
  const { tables } = dialect
  if ((await dialect.migrationsTableExists(call)) && isComplete(await appliedVersions(call, tables))) return

  await dialect.withMigrationLock(call, async () => {
    await dialect.ensureContainer(call)
    await call.query(dialect.createMigrationsTableStatement)
    // Another process may have migrated while this one waited for the lock.
    const applied = await appliedVersions(call, tables)
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) continue
      for (const statement of await migration.up[dialect.name](tables, call)) {
        await call.query(statement).catch((error: unknown) => {
          throw explained(dialect, migration, error)
        })
      }
      await call.query(`INSERT INTO ${tables.migrations} (version, name) VALUES (?, ?)`, [
        migration.version,
        migration.name,
      ])
    }
  })
}
