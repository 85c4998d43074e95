/**
 * MariaDB's stored procedures: the one for batches of new records (migration 2, src/storage/sql/migrations.ts) and
 * the tally methods' (migration 3, src/storage/sql/mysql-tallies.ts). An upgrade from version 1, a migrating user
 * without the routine privileges, and the transactions kept where a procedure cannot be called (no EXECUTE, or a
 * dump restored without its routines), which the whole tally suite runs against.
 */
import type { Connection } from 'mysql2/promise'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { isGatewayError } from '../../src/core/errors'
import type { StorageDriver } from '../../src/storage/contract'
import { openSqlStorage, sqlStorage } from '../../src/storage/sql'
import { MIGRATIONS } from '../../src/storage/sql/migrations'
import { createMysqlDialect } from '../../src/storage/sql/mysql'
import { dropMariadbDatabase, requireServer, uniqueNamespace } from '../helpers/stores'
import { openCountingDriver } from './sql-cases'
import { holdAndSettleConcurrently, TALLY_PROCEDURES } from './sql-tallies'
import { describeTallies } from './tallies'

const target = {
  name: 'mariadb',
  createDialect: (settings: Parameters<typeof createMysqlDialect>[0]) => createMysqlDialect({ ...settings, database: settings.schema! }),
}
const PROCEDURE = 'modelgate_insert_records'
const ALL_VERSIONS = MIGRATIONS.map((migration) => migration.version)

let admin: Connection | undefined
const raw = async (text: string, params: unknown[] = []) => {
  const mysql = await import('mysql2/promise')
  admin ??= await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' })
  const [rows] = await admin.query(text, params)
  return Array.isArray(rows) ? (rows as Array<Record<string, unknown>>) : []
}

const urlFor = (user: string, database: string) => `mysql://${user}@127.0.0.1:3306/${database}`

const databases: string[] = []
const users: string[] = []
const drivers: StorageDriver[] = []

const freshDatabase = (kind: string) => {
  const database = uniqueNamespace(kind)
  databases.push(database)
  return database
}

/** A user with exactly `privileges` on `database` (created first, so they can be granted). */
const userWith = async (database: string, privileges: string) => {
  const user = uniqueNamespace('u')
  users.push(user)
  await raw(`CREATE DATABASE IF NOT EXISTS \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`)
  await raw(`CREATE USER '${user}'@'127.0.0.1'`)
  await raw(`GRANT ${privileges} ON \`${database}\`.* TO '${user}'@'127.0.0.1'`)
  return user
}

const open = async (url: string, schema: string) => {
  const driver = await openSqlStorage({ url, schema })
  drivers.push(driver)
  return driver
}

const openCounting = async (url: string, schema: string) => {
  const counting = await openCountingDriver(target, { url, schema })
  drivers.push(counting.driver)
  return counting
}

const versionsOf = async (database: string) =>
  (await raw(`SELECT version FROM \`${database}\`.modelgate_migrations ORDER BY version`)).map((row) => Number(row.version))

const procedureOf = async (database: string) =>
  (await raw('SELECT SECURITY_TYPE AS security FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ? AND ROUTINE_NAME = ?', [database, PROCEDURE]))[0]

/** The state a schema migrated by a release before this procedure is in (later migrations' tables may stay: they are created if missing). */
const backToVersion1 = async (database: string) => {
  for (const procedure of [PROCEDURE, ...TALLY_PROCEDURES.map((name) => `modelgate_${name}`)]) {
    await raw(`DROP PROCEDURE IF EXISTS \`${database}\`.${procedure}`)
  }
  await raw(`DELETE FROM \`${database}\`.modelgate_migrations WHERE version >= 2`)
}

/** The usage ledger's shape: fresh ids, two index rows each. */
const batch = (ids: string[]) => ids.map((id) => ({ id, data: { id }, sortKey: id, indexes: { account: 'a1', day: 'a1:2025-01-01' } }))

const ids = (records: Array<{ id: string } | null>) => records.map((record) => record?.id ?? null)

beforeAll(() => requireServer(3306))

afterEach(async () => {
  await Promise.all(drivers.splice(0).map((driver) => driver.close()))
})

afterAll(async () => {
  for (const user of users) await raw(`DROP USER IF EXISTS '${user}'@'127.0.0.1'`)
  for (const database of databases) await dropMariadbDatabase(database)
  await admin?.end()
})

describe('mariadb: a batch of new records in one procedure call', () => {
  it('upgrades a schema at version 1 once, however many drivers open it at once', async () => {
    const database = freshDatabase('sql_upgrade')
    const root = urlFor('root', database)
    const before = await open(root, database)
    await before.createMany('generations', batch(['old']))
    await backToVersion1(database)
    expect(await versionsOf(database)).toEqual([1])

    await Promise.all([open(root, database), open(root, database), open(root, database)])
    expect(await versionsOf(database)).toEqual(ALL_VERSIONS)
    expect(await procedureOf(database)).toEqual({ security: 'INVOKER' })

    const { driver, statements } = await openCounting(root, database)
    statements.length = 0
    expect(ids(await driver.createMany('generations', batch(['new1', 'new2'])))).toEqual(['new1', 'new2'])
    expect(statements).toEqual([`CALL \`${database}\`.\`${PROCEDURE}\`(?, ?, ?, ?)`])
    expect(ids(await driver.createMany('generations', batch(['old', 'new3'])))).toEqual([null, 'new3'])
    expect((await driver.list('generations', { where: { account: 'a1' } })).totalCount).toBe(4)
  })

  it('applies version 2 again after a crash between creating the procedure and recording it', async () => {
    const database = freshDatabase('sql_rerun')
    const root = urlFor('root', database)
    await open(root, database)
    await raw(`DELETE FROM \`${database}\`.modelgate_migrations WHERE version = 2`)
    await open(root, database)
    expect(await versionsOf(database)).toEqual(ALL_VERSIONS)
    expect(await procedureOf(database)).toBeDefined()
  })

  it('names the privileges a migrating user lacks, and migrates once they are granted', async () => {
    const database = freshDatabase('sql_grants')
    const user = await userWith(database, 'SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, DROP')
    const url = urlFor(user, database)
    const error = await openSqlStorage({ url, schema: database }).then(
      () => undefined,
      (failure: unknown) => failure,
    )
    expect(isGatewayError(error), 'not an outage: retrying will not help').toBe(false)
    expect(String((error as Error)?.message)).toMatch(/^modelgate: could not migrate the SQL storage: migration 2 .* needs the CREATE ROUTINE and ALTER ROUTINE privileges/)
    expect(await versionsOf(database)).toEqual([1])

    await raw(`GRANT CREATE ROUTINE, ALTER ROUTINE ON \`${database}\`.* TO '${user}'@'127.0.0.1'`)
    const { driver, statements } = await openCounting(url, database)
    expect(await versionsOf(database)).toEqual(ALL_VERSIONS)
    statements.length = 0
    expect(ids(await driver.createMany('generations', batch(['g1', 'g2'])))).toEqual(['g1', 'g2'])
    expect(statements).toHaveLength(1)
  })

  it('keeps the transaction for a user that may not run the procedure', async () => {
    const database = freshDatabase('sql_no_execute')
    await open(urlFor('root', database), database)
    const user = await userWith(database, 'SELECT, INSERT, UPDATE, DELETE')
    const { driver, statements } = await openCounting(urlFor(user, database), database)

    statements.length = 0
    expect(ids(await driver.createMany('generations', batch(['g1', 'g2'])))).toEqual(['g1', 'g2'])
    // The refused call stored nothing; the driver then stops trying it.
    expect(statements.map((text) => text.split(' ')[0])).toEqual(['CALL', 'START', 'INSERT', 'INSERT', 'COMMIT'])
    statements.length = 0
    expect(ids(await driver.createMany('generations', batch(['g3', 'g1'])))).toEqual(['g3', null])
    expect(statements[0]).toBe('START TRANSACTION')
    expect((await driver.list('generations', { where: { day: 'a1:2025-01-01' } })).totalCount).toBe(3)
  })

  it('keeps the transaction when the procedure is gone (a dump restored without its routines)', async () => {
    const database = freshDatabase('sql_no_procedure')
    const root = urlFor('root', database)
    await open(root, database)
    await raw(`DROP PROCEDURE \`${database}\`.${PROCEDURE}`)
    const { driver, statements } = await openCounting(root, database)
    statements.length = 0
    expect(ids(await driver.createMany('generations', batch(['g1', 'g2'])))).toEqual(['g1', 'g2'])
    expect(statements).toHaveLength(5)
    statements.length = 0
    await driver.create('generations', { id: 'g3', data: {}, uniques: ['slug:g3'] })
    expect(statements).toHaveLength(4)
    expect((await driver.findByUnique('generations', 'slug:g3'))?.id).toBe('g3')
  })
})

describe('mariadb: the tally methods without their procedures', () => {
  const database = freshDatabase('sql_tally_fallback')
  const root = urlFor('root', database)
  const dropTallyProcedures = async () => {
    for (const name of TALLY_PROCEDURES) await raw(`DROP PROCEDURE IF EXISTS \`${database}\`.modelgate_${name}`)
  }

  beforeAll(async () => {
    await open(root, database)
    await dropTallyProcedures()
  })

  /** Lets the database clock pass `instant` (this machine's clock, read to the millisecond), by a bounded poll. */
  const waitUntilPast = async (instant: number) => {
    const deadline = Date.now() + Math.max(0, instant - Date.now()) + 2_000
    while (Date.now() <= instant + 20) {
      if (Date.now() > deadline) throw new Error(`clock did not pass ${instant} within the wait bound`)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }

  describeTallies(
    () => {
      const driver = sqlStorage({ url: root, schema: database })
      drivers.push(driver)
      return driver
    },
    { now: Date.now, waitUntilPast },
  )

  it('runs each method as a transaction, having tried the procedure once', async () => {
    const { driver, statements } = await openCounting(root, database)
    const firstWords = () => statements.splice(0).map((statement) => statement.trim().split(/\s+/)[0])
    firstWords()
    await driver.hold({ id: 'h1', owner: 'o', leaseMs: 60_000, changes: [{ key: 'spend:a', amount: 100, ttlMs: 60_000 }] })
    // The refused call wrote nothing; the driver then stops trying the procedures.
    expect(firstWords()).toEqual(['CALL', 'START', 'SELECT', 'DELETE', 'INSERT', 'INSERT', 'INSERT', 'SELECT', 'COMMIT'])
    await driver.settle([{ id: 'h1', changes: [{ key: 'spend:a', amount: 30, ttlMs: 60_000 }] }])
    // The hold's claim on the id becomes the settled id (an UPDATE); its hold is read, deleted and taken back.
    expect(firstWords()).toEqual(['START', 'SELECT', 'SELECT', 'UPDATE', 'SELECT', 'DELETE', 'INSERT', 'COMMIT'])
    expect(await driver.readTallies(['spend:a'])).toEqual([30])
    expect(await driver.renewHolds(['h1'], 60_000)).toBe(0)
    expect(firstWords()).toEqual(['SELECT', 'START', 'SELECT', 'COMMIT'])
  })

  it('stays exact with three drivers holding and settling 150 requests on the same tallies', async () => {
    const several = await Promise.all([1, 2, 3].map(() => openSqlStorage({ url: root, schema: database, poolSize: 5 })))
    drivers.push(...several)
    await holdAndSettleConcurrently(several, 150)
  })

  it('uses the procedures again once they are back, and transactions for a user that may not run them', async () => {
    await raw(`DELETE FROM \`${database}\`.modelgate_migrations WHERE version = 3`)
    await open(root, database)
    const { driver, statements } = await openCounting(root, database)
    statements.length = 0
    await driver.hold({ id: 'h2', owner: 'o', leaseMs: 60_000, changes: [{ key: 'spend:b', amount: 5, ttlMs: 60_000 }] })
    expect(statements).toEqual([`CALL \`${database}\`.\`modelgate_tally_hold\`(?, ?, ?, ?)`])

    const user = await userWith(database, 'SELECT, INSERT, UPDATE, DELETE')
    const limited = await openCounting(urlFor(user, database), database)
    limited.statements.length = 0
    await limited.driver.settle([{ id: 'h2', changes: [{ key: 'spend:b', amount: 2, ttlMs: 60_000 }] }])
    expect(limited.statements[0]).toMatch(/^CALL /)
    expect(limited.statements[1]).toBe('START TRANSACTION')
    expect(await limited.driver.readTallies(['spend:b'])).toEqual([2])
    await dropTallyProcedures()
  })
})
