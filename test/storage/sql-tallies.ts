/**
 * The SQL driver's own tally cases, run against PostgreSQL and MariaDB from `sql-cases.ts`: the layout of
 * migration 3, the upgrade that carries old `spend:` counters over, one round trip per call, a hold and a
 * settlement of one id that meet while one of them is not committed yet, and several drivers (separate pools, as
 * separate processes have) holding and settling on the same tallies at once.
 */
import { describe, expect, it, vi } from 'vitest'
import { isGatewayError } from '../../src/core/errors'
import { SETTLEMENT_MEMORY_MS, type CounterChange, type StorageDriver, type TallyHold } from '../../src/storage/contract'
import type { SqlStorageOptions } from '../../src/storage/sql'
import type { Dialect, SqlSession } from '../../src/storage/sql/dialect'
import { MIGRATIONS } from '../../src/storage/sql/migrations'
import type { SqlTarget } from './sql-cases'

export interface SqlTallyContext {
  target: SqlTarget
  /** This run's namespace, which `open` uses. */
  namespace: string
  /** A new namespace, dropped after the run. */
  freshNamespace(kind: string): string
  /** A driver on `options.schema` (default: this run's namespace), closed after the test. */
  open(options?: Partial<SqlStorageOptions>): Promise<StorageDriver>
  /** A driver on this run's namespace whose sessions write down every statement they send. */
  openCounting(): Promise<{ driver: StorageDriver; statements: string[] }>
}

const TTL_MS = 86_400_000
const LONG_LEASE_MS = 600_000
/** The tally procedures migration 3 creates on MySQL/MariaDB (src/storage/sql/mysql-tallies.ts). */
export const TALLY_PROCEDURES = ['tally_hold', 'tally_settle', 'tally_renew', 'tally_release']

const change = (key: string, amount: number, ttlMs = TTL_MS): CounterChange => ({ key, amount, ttlMs })
const holdOf = (id: string, changes: CounterChange[], leaseMs = LONG_LEASE_MS): TallyHold => ({ id, owner: 'owner-a', leaseMs, changes })
const suffix = () => Math.random().toString(36).slice(2, 10)
const text = (value: unknown) => (Buffer.isBuffer(value) ? value.toString('utf8') : String(value))

const rejectionOf = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

/**
 * `requests` reservations spread over `drivers`, all at once on the same three tallies (a key's, a workspace's, an
 * account's, as spend limits take them): each holds 1 000 on every tally, then settles at its real cost, sent twice
 * through two different drivers. Every call must succeed, and the tallies end at the sum of the real costs.
 */
export const holdAndSettleConcurrently = async (drivers: StorageDriver[], requests: number) => {
  const run = suffix()
  const keys = ['key', 'workspace', 'account'].map((scope) => `spend:${scope}:${run}:usage:total`)
  const id = (index: number) => `request-${run}-${index}`
  const pick = (index: number) => drivers[index % drivers.length]!
  await Promise.all(
    Array.from({ length: requests }, async (_, index) => {
      await pick(index).hold(holdOf(id(index), keys.map((key) => change(key, 1_000))))
      const settlement = { id: id(index), changes: keys.map((key) => change(key, index)) }
      await Promise.all([pick(index).settle([settlement]), pick(index + 1).settle([settlement])])
    }),
  )
  const sum = (requests * (requests - 1)) / 2
  expect(await drivers[0]!.readTallies(keys)).toEqual([sum, sum, sum])
  // Nothing is held any more: a renewal finds none of the ids.
  expect(await drivers[0]!.renewHolds(Array.from({ length: requests }, (_, index) => id(index)), LONG_LEASE_MS)).toBe(0)
}

export function describeSqlTallies(context: SqlTallyContext): void {
  const { target } = context
  const table = (name: string, namespace = context.namespace) => target.table(namespace, name)
  const isMysql = target.name !== 'postgres'

  /** A session of its own on this run's namespace, for a transaction the test keeps open. */
  const adminSession = async (): Promise<{ session: SqlSession; dialect: Dialect; id: number }> => {
    const dialect = await target.createDialect({
      url: target.url(),
      schema: context.namespace,
      tablePrefix: 'modelgate_',
      queryTimeoutMs: 10_000,
      connectTimeoutMs: 3_000,
      migrationTimeoutMs: 60_000,
    })
    const session = await dialect.connect()
    session.startCall()
    const [row] = await session.query(target.sessionIdQuery)
    return { session, dialect, id: Number(row!.id) }
  }

  /**
   * Waits (bounded) until some session waits for a lock `sessionId` holds. Polled no more often than every 100 ms:
   * InnoDB refreshes its lock tables only when nobody read them for that long.
   */
  const blockedBy = (sessionId: number) =>
    vi.waitFor(
      async () => {
        const [row] = await target.raw(target.waitersQuery, [sessionId])
        if (Number(row?.n) === 0) throw new Error('nothing waits yet')
      },
      { timeout: 10_000, interval: 150 },
    )

  describe(`${target.name} tallies`, () => {
    it('keeps a hold and its claim on the id until the settlement, then the settled id for an hour', async () => {
      const driver = await context.open()
      const run = suffix()
      const key = `spend:key:${run}:usage:total`
      const id = `hold-${run}`
      const changes = [change(key, 1_000)]
      const before = Date.now()
      await driver.hold({ id, owner: 'process-1', leaseMs: 30_000, changes })
      const [hold] = await target.raw(`SELECT owner, expires_at, ${target.jsonText('changes')} AS changes FROM ${table('holds')} WHERE id = ?`, [id])
      expect(text(hold!.owner)).toBe('process-1')
      expect(Number(hold!.expires_at)).toBeGreaterThanOrEqual(before + 30_000 - 20)
      expect(JSON.parse(text(hold!.changes))).toEqual(changes)
      const claims = await target.raw(`SELECT expires_at FROM ${table('settled')} WHERE id = ?`, [id])
      expect(claims).toEqual([{ expires_at: null }])

      await driver.settle([{ id, changes: [change(key, 250)] }])
      expect(await target.raw(`SELECT id FROM ${table('holds')} WHERE id = ?`, [id])).toEqual([])
      const [settled] = await target.raw(`SELECT expires_at FROM ${table('settled')} WHERE id = ?`, [id])
      expect(Number(settled!.expires_at)).toBeGreaterThanOrEqual(before + SETTLEMENT_MEMORY_MS - 20)
      const [tally] = await target.raw(`SELECT value, expires_at FROM ${table('tallies')} WHERE tally_key = ?`, [key])
      expect(Number(tally!.value)).toBe(250)
      expect(Number(tally!.expires_at)).toBeGreaterThanOrEqual(before + TTL_MS - 20)
      // Amounts that are not whole numbers keep every bit on the way in and out.
      await driver.settle([{ id: `${id}-fraction`, changes: [change(key, 0.1 + 0.2)] }])
      expect(await driver.readTallies([key])).toEqual([250 + (0.1 + 0.2)])
    })

    it('sends one statement per call', async () => {
      const { driver, statements } = await context.openCounting()
      const run = suffix()
      const key = `spend:key:${run}:usage:total`
      const calls: Array<() => Promise<unknown>> = [
        () => driver.hold(holdOf(`a-${run}`, [change(key, 10), change(`${key}:other`, 10)])),
        () => driver.hold(holdOf(`b-${run}`, [change(key, 10)], 1)),
        () => driver.renewHolds([`a-${run}`, `missing-${run}`], LONG_LEASE_MS),
        () => driver.settle([{ id: `a-${run}`, changes: [change(key, 3)] }, { id: `c-${run}`, changes: [change(key, 4)] }]),
        () => driver.releaseExpiredHolds(10),
        () => driver.readTallies([key, `${key}:other`]),
      ]
      for (const send of calls) {
        statements.length = 0
        await send()
        expect(statements).toHaveLength(1)
        if (isMysql && !statements[0]!.startsWith('SELECT')) expect(statements[0]).toMatch(/^CALL /)
      }
      expect((await driver.readTallies([key]))[0]).toBeGreaterThanOrEqual(7)
    })

    it('carries the live spend counters of an older schema over into tallies once, however many drivers upgrade at once', async () => {
      const fresh = context.freshNamespace('sql_tally_upgrade')
      const first = await context.open({ schema: fresh })
      const spent = 'spend:key:k1:usage:total'
      const daily = 'spend:account:a1:usage:d2025-01-01'
      await first.increment(spent, 500, TTL_MS)
      await first.increment(daily, 7, TTL_MS)
      await first.increment('rate:k1:minute', 3, TTL_MS)
      await first.close()
      // Written after the driver closed, so its background sweep cannot have taken it.
      await target.raw(`INSERT INTO ${table('counters', fresh)} (counter_key, value, expires_at) VALUES (?, 9, 1)`, ['spend:key:k1:usage:d2000-01-01'])
      const [counter] = await target.raw(`SELECT expires_at FROM ${table('counters', fresh)} WHERE counter_key = ?`, [spent])

      // The state a schema migrated by the release before tallies is in.
      for (const name of ['tallies', 'holds', 'settled']) await target.raw(`DROP TABLE ${table(name, fresh)}`)
      if (isMysql) for (const name of TALLY_PROCEDURES) await target.raw(`DROP PROCEDURE IF EXISTS ${table(name, fresh)}`)
      await target.raw(`DELETE FROM ${table('migrations', fresh)} WHERE version >= 3`)

      const [driver] = await Promise.all([1, 2, 3].map(() => context.open({ schema: fresh })))
      const versions = await target.raw(`SELECT version FROM ${table('migrations', fresh)} ORDER BY version`)
      expect(versions.map((row) => Number(row.version))).toEqual(MIGRATIONS.map((migration) => migration.version))
      expect(await driver!.readTallies([spent, daily, 'rate:k1:minute', 'spend:key:k1:usage:d2000-01-01'])).toEqual([500, 7, 0, 0])
      const tallies = await target.raw(`SELECT tally_key, expires_at FROM ${table('tallies', fresh)} ORDER BY tally_key`)
      expect(tallies.map((row) => [text(row.tally_key), Number(row.expires_at)])).toEqual([
        [daily, expect.any(Number)],
        [spent, Number(counter!.expires_at)],
      ])
      // The old counters stay as they were; spend goes on in the tallies.
      expect((await driver!.increment(spent, 0, TTL_MS)).value).toBe(500)
      expect((await driver!.hold(holdOf(`upgrade-${suffix()}`, [change(spent, 10)])))[0]!.value).toBe(510)
    })

    it('settles a hold that commits while the settlement waits for it: the hold is released, not left behind', async () => {
      const { driver, statements } = await context.openCounting()
      const run = suffix()
      const key = `spend:key:${run}:usage:total`
      const id = `late-hold-${run}`
      const admin = await adminSession()
      const t = admin.dialect.tables
      let settleStatements = 0
      try {
        // A hold of this id in flight: its claim, its row and what it added, not committed yet.
        await admin.session.query(admin.dialect.beginStatement)
        await admin.session.query(`INSERT INTO ${t.settled} (id, expires_at) VALUES (?, NULL)`, [id])
        await admin.session.query(`INSERT INTO ${t.holds} (id, owner, expires_at, changes) VALUES (?, ?, ?, ?)`, [
          id,
          'admin',
          Date.now() + LONG_LEASE_MS,
          JSON.stringify([change(key, 1_000)]),
        ])
        await admin.session.query(`INSERT INTO ${t.tallies} (tally_key, value, expires_at) VALUES (?, ?, ?)`, [key, 1_000, Date.now() + TTL_MS])
        statements.length = 0
        const settling = driver.settle([{ id, changes: [change(key, 300)] }])
        await blockedBy(admin.id)
        await admin.session.query('COMMIT')
        await settling
        settleStatements = statements.length
      } finally {
        await admin.session.end(1_000)
      }
      expect(await driver.readTallies([key])).toEqual([300])
      expect(await target.raw(`SELECT id FROM ${table('holds')} WHERE id = ?`, [id])).toEqual([])
      expect(await driver.renewHolds([id], LONG_LEASE_MS)).toBe(0)
      // PostgreSQL's statement could not see the hold in its snapshot, so it asked to be sent again; MySQL's
      // locking reads saw it in the one call.
      expect(settleStatements).toBe(isMysql ? 1 : 2)
    })

    it('refuses a hold that waited for a settlement of its id to commit', async () => {
      const driver = await context.open()
      const run = suffix()
      const key = `spend:key:${run}:usage:total`
      const id = `early-settle-${run}`
      const admin = await adminSession()
      let outcome: unknown
      try {
        await admin.session.query(admin.dialect.beginStatement)
        await admin.session.query(`INSERT INTO ${admin.dialect.tables.settled} (id, expires_at) VALUES (?, ?)`, [id, Date.now() + SETTLEMENT_MEMORY_MS])
        const holding = rejectionOf(driver.hold(holdOf(id, [change(key, 1_000)])))
        await blockedBy(admin.id)
        await admin.session.query('COMMIT')
        outcome = await holding
      } finally {
        await admin.session.end(1_000)
      }
      expect(isGatewayError(outcome)).toBe(true)
      expect(outcome).toMatchObject({ status: 409, kind: 'unique' })
      expect(await driver.readTallies([key])).toEqual([0])
      expect(await target.raw(`SELECT id FROM ${table('holds')} WHERE id = ?`, [id])).toEqual([])
    })

    it('stays exact when a hold times out on the client and the server runs it later', async () => {
      const driver = await context.open({ queryTimeoutMs: 500 })
      const run = suffix()
      const key = `spend:key:${run}:usage:total`
      const id = `timed-out-${run}`
      await driver.settle([{ id: `base-${run}`, changes: [change(key, 10)] }])
      const admin = await adminSession()
      try {
        await admin.session.query(admin.dialect.beginStatement)
        await admin.session.query(`SELECT value FROM ${admin.dialect.tables.tallies} WHERE tally_key = ? FOR UPDATE`, [key])
        const error = await rejectionOf(driver.hold(holdOf(id, [change(key, 1_000)])))
        expect(error).toMatchObject({ status: 503 })
        await admin.session.query('COMMIT')
      } finally {
        await admin.session.end(1_000)
      }
      if (isMysql) {
        // The CALL goes on without its client (a lock wait lasts up to innodb_lock_wait_timeout, 1 s here) and
        // commits: the caller saw a 503 for a hold that landed.
        await vi.waitFor(
          async () => {
            if ((await target.raw(`SELECT id FROM ${table('holds')} WHERE id = ?`, [id])).length === 0) throw new Error('not landed yet')
          },
          { timeout: 5_000, interval: 50 },
        )
      }
      // What the gateway does after a hold it did not hear back from: settle the id. Whether the hold landed, is still
      // running or never will, the tally ends at the real cost, and the hold can never land afterwards.
      await driver.settle([{ id, changes: [change(key, 300)] }])
      expect(await driver.readTallies([key])).toEqual([310])
      expect(await target.raw(`SELECT id FROM ${table('holds')} WHERE id = ?`, [id])).toEqual([])
      expect(await rejectionOf(driver.hold(holdOf(id, [change(key, 1_000)])))).toMatchObject({ status: 409, kind: 'unique' })
    })

    it('settles one id sent by two drivers at once exactly once', async () => {
      const [a, b] = await Promise.all([context.open({ poolSize: 4 }), context.open({ poolSize: 4 })])
      const run = suffix()
      const key = `spend:key:${run}:usage:total`
      for (let round = 0; round < 10; round++) {
        const id = `twice-${run}-${round}`
        await a.hold(holdOf(id, [change(key, 1_000)]))
        const settlement = { id, changes: [change(key, 100)] }
        await Promise.all([a.settle([settlement]), b.settle([settlement]), b.settle([settlement]), a.settle([settlement])])
      }
      expect(await a.readTallies([key])).toEqual([1_000])
    })

    it('stays exact with three drivers holding and settling 150 requests on the same tallies', async () => {
      const drivers = await Promise.all([1, 2, 3].map(() => context.open({ poolSize: 5 })))
      await holdAndSettleConcurrently(drivers, 150)
    })

    it('releases each expired hold once when three drivers sweep at once', async () => {
      const drivers = await Promise.all([1, 2, 3].map(() => context.open({ poolSize: 3 })))
      const run = suffix()
      const key = `spend:key:${run}:usage:total`
      await drivers[0]!.hold(holdOf(`keep-${run}`, [change(key, 5)]))
      await Promise.all(Array.from({ length: 30 }, (_, index) => drivers[index % 3]!.hold(holdOf(`lapse-${run}-${index}`, [change(key, 100)], 1))))
      await vi.waitFor(
        async () => {
          const [row] = await target.raw(`SELECT COUNT(*) AS n FROM ${table('holds')} WHERE id LIKE ? AND expires_at > ?`, [`lapse-${run}-%`, Date.now() - 20])
          if (Number(row?.n) > 0) throw new Error('leases still running')
        },
        { timeout: 5_000, interval: 10 },
      )
      // Other tests' expired holds on this namespace may be released too: only ours are counted.
      await Promise.all(drivers.flatMap((driver) => [driver.releaseExpiredHolds(7), driver.releaseExpiredHolds(7), driver.releaseExpiredHolds(100)]))
      for (const driver of drivers) while ((await driver.releaseExpiredHolds(100)) > 0);
      expect(await drivers[1]!.readTallies([key])).toEqual([5])
    })

    it('sweeps expired tallies and forgotten settlement ids, never a claim', async () => {
      const run = suffix()
      const driver = await context.open()
      await driver.hold(holdOf(`claim-${run}`, [change(`spend:live:${run}`, 1)]))
      await target.raw(`INSERT INTO ${table('tallies')} (tally_key, value, expires_at) VALUES (?, 1, 1)`, [`spend:expired:${run}`])
      await target.raw(`INSERT INTO ${table('settled')} (id, expires_at) VALUES (?, 1)`, [`forgotten-${run}`])
      // Each driver sweeps on its first increment, then at most once a minute.
      const fresh = await context.open()
      await fresh.increment(`trigger-${run}`, 1, 60_000)
      await vi.waitFor(
        async () => {
          const [tallies] = await target.raw(`SELECT COUNT(*) AS n FROM ${table('tallies')} WHERE tally_key = ?`, [`spend:expired:${run}`])
          const [settled] = await target.raw(`SELECT COUNT(*) AS n FROM ${table('settled')} WHERE id = ?`, [`forgotten-${run}`])
          if (Number(tallies?.n) + Number(settled?.n) !== 0) throw new Error('not swept yet')
        },
        { timeout: 15_000, interval: 25 },
      )
      expect(await target.raw(`SELECT expires_at FROM ${table('settled')} WHERE id = ?`, [`claim-${run}`])).toEqual([{ expires_at: null }])
      expect(await driver.readTallies([`spend:live:${run}`])).toEqual([1])
      // A settled id forgotten (expired, not swept yet) counts as never settled: it may settle again.
      await target.raw(`INSERT INTO ${table('settled')} (id, expires_at) VALUES (?, 1)`, [`again-${run}`])
      await driver.settle([{ id: `again-${run}`, changes: [change(`spend:live:${run}`, 2)] }])
      expect(await driver.readTallies([`spend:live:${run}`])).toEqual([3])
    })

    it('refuses ids, owners and keys the database could not store exactly, and reads or renews none', async () => {
      const driver = await context.open()
      const typeError = async (promise: Promise<unknown>) => expect(await rejectionOf(promise)).toBeInstanceOf(TypeError)
      await typeError(driver.hold(holdOf('x'.repeat(513), [change('spend:a', 1)])))
      await typeError(driver.hold({ ...holdOf('ok', [change('spend:a', 1)]), owner: 'o'.repeat(256) }))
      await typeError(driver.hold(holdOf('ok', [change('nul\0inside', 1)])))
      await typeError(driver.settle([{ id: 'lone \uD800', changes: [] }]))
      await typeError(driver.settle([{ id: 'ok', changes: [change('k'.repeat(1025), 1)] }]))
      expect(await driver.readTallies(['nul\0inside', 'k'.repeat(1025)])).toEqual([0, 0])
      expect(await driver.renewHolds(['x'.repeat(513)], LONG_LEASE_MS)).toBe(0)
    })
  })
}
