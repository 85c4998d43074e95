/**
 * Versioned schema changes, applied in order when a driver opens. Each version runs once per
 * schema: the runner takes a lock (so several gateway processes may start at once), re-reads the
 * applied versions inside it and records each version it applies. Statements are idempotent
 * (`IF NOT EXISTS`), because MySQL commits DDL at once and a crash may leave a version half applied.
 * Never edit a released migration; add a new version.
 *
 * Key columns compare in byte order, never by a locale collation: `COLLATE "C"` on PostgreSQL,
 * VARBINARY on MySQL/MariaDB (utf8mb4_bin would ignore trailing spaces in unique keys). JSON is
 * stored as the exact text `JSON.stringify` wrote (`json`, not `jsonb`, which reorders keys and
 * refuses `\u0000`; LONGTEXT on MySQL, whose JSON type reorders keys too).
 */
import type { Dialect, DialectName, SqlCall, TableNames } from './dialect'
import { KEY_LIMITS } from './keys'

export interface Migration {
  version: number
  name: string
  up: Record<DialectName, (tables: TableNames) => string[]>
}

const quotePostgres = (name: string) => `"${name}"`

const MYSQL_TABLE_OPTIONS = 'ENGINE=InnoDB ROW_FORMAT=DYNAMIC DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
const MYSQL_TEXT = 'LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin'

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
    },
  },
]

const appliedVersions = async (call: SqlCall, tables: TableNames): Promise<Set<number>> => {
  const rows = await call.query(`SELECT version FROM ${tables.migrations}`)
  return new Set(rows.map((row) => Number(row.version)))
}

const isComplete = (applied: Set<number>) => MIGRATIONS.every((migration) => applied.has(migration.version))

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
      for (const statement of migration.up[dialect.name](tables)) await call.query(statement)
      await call.query(`INSERT INTO ${tables.migrations} (version, name) VALUES (?, ?)`, [
        migration.version,
        migration.name,
      ])
    }
  })
}
