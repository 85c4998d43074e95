/**
 * Tallies on SQLite: each method is one write transaction (`BEGIN IMMEDIATE`), which holds the database's one write
 * lock from its first statement to its `COMMIT`. Every statement runs on this process's thread, so the lock is held
 * for microseconds and never across a wait for anything else; no other writer, in this process or another, sees any
 * part of a hold or a settlement before all of it. That leaves nothing to claim: a hold and a settlement of one id
 * never overlap, so a hold simply finds the id held or settled, and a settlement finds the hold (the memory engine's
 * rules, src/storage/memory-engine.ts, written as statements).
 *
 * Layout (migration 3, src/storage/sql/migrations.ts): `tallies` (key, value, expiry), `holds` (id, owner, lease
 * expiry, the changes as JSON) and `settled` (id, when it is forgotten). Time is the machine's clock, which every
 * process sharing the file reads alike: read once per transaction, in this process (`Date.now()`, the clock SQLite's
 * `'now'` reads too), which saves a statement per call.
 */
import { SETTLEMENT_MEMORY_MS, type CounterChange, type TallyHold, type TallySettlement } from '../contract'
import { NOW_MS, type InTransaction, type SqlCall, type SqlRow, type TableNames, type TallyStatements } from './dialect'
import { changesJson } from './tally-json'

const NOW = NOW_MS.sqlite

/** Rows deleted by one sweep statement, and statements per sweep. */
const SWEEP_BATCH = 1_000
const MAX_SWEEP_BATCHES = 100

/** The statements of one table prefix, written once (each is prepared once per connection). */
const statementsFor = (t: TableNames) => ({
  // Returns the id only when it is neither held (the conflict) nor settled and remembered at `?5` (now).
  insertHold: `INSERT INTO ${t.holds} (id, owner, expires_at, changes)
    SELECT ?1, ?2, ?3, ?4 WHERE NOT EXISTS (SELECT 1 FROM ${t.settled} WHERE id = ?1 AND expires_at > ?5)
    ON CONFLICT (id) DO NOTHING
    RETURNING id`,
  // A live tally gets the amount; an absent or expired one starts again at it, expiring ttl after now (?3).
  add: `INSERT INTO ${t.tallies} AS t (tally_key, value, expires_at) VALUES (?1, ?2, ?3 + ?4)
    ON CONFLICT (tally_key) DO UPDATE SET
      value = CASE WHEN t.expires_at <= ?3 THEN excluded.value ELSE t.value + excluded.value END,
      expires_at = CASE WHEN t.expires_at <= ?3 THEN excluded.expires_at ELSE t.expires_at END
    RETURNING value, expires_at`,
  // What a released hold added comes off a tally only while it lives: an expired one is not made negative.
  takeBack: `UPDATE ${t.tallies} SET value = value - ?1 WHERE tally_key = ?2 AND expires_at > ?3`,
  // Returns the id only when it was not settled (absent, or forgotten by now): that settlement applies.
  markSettled: `INSERT INTO ${t.settled} AS s (id, expires_at) VALUES (?1, ?2 + ${SETTLEMENT_MEMORY_MS})
    ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at WHERE s.expires_at <= ?2
    RETURNING id`,
  releaseHold: `DELETE FROM ${t.holds} WHERE id = ? RETURNING changes`,
  releaseExpired: `DELETE FROM ${t.holds} WHERE id IN (
      SELECT id FROM ${t.holds} WHERE expires_at <= ?1 ORDER BY expires_at, id LIMIT ?2
    ) RETURNING changes`,
  renew: `UPDATE ${t.holds} SET expires_at = ${NOW} + ?1 WHERE id IN (SELECT value FROM json_each(?2)) RETURNING id`,
  read: `SELECT tally_key, value FROM ${t.tallies}
    WHERE tally_key IN (SELECT value FROM json_each(?)) AND expires_at > ${NOW}`,
  sweeps: [
    `DELETE FROM ${t.tallies} WHERE tally_key IN (
      SELECT tally_key FROM ${t.tallies} WHERE expires_at <= ${NOW} LIMIT ${SWEEP_BATCH}) RETURNING 1`,
    `DELETE FROM ${t.settled} WHERE id IN (
      SELECT id FROM ${t.settled} WHERE expires_at <= ${NOW} LIMIT ${SWEEP_BATCH}) RETURNING 1`,
  ],
})

export const createSqliteTallies = (tables: TableNames): TallyStatements => {
  const statements = statementsFor(tables)

  const add = async (call: SqlCall, change: CounterChange, now: number): Promise<SqlRow> =>
    (await call.query(statements.add, [change.key, change.amount, now, change.ttlMs]))[0]!

  /** Takes back what released holds (their `changes` rows) added. */
  const takeBack = async (call: SqlCall, released: SqlRow[], now: number): Promise<void> => {
    for (const row of released) {
      for (const change of JSON.parse(String(row.changes)) as CounterChange[]) {
        await call.query(statements.takeBack, [change.amount, change.key, now])
      }
    }
  }

  return {
    hold(call: SqlCall, inTransaction: InTransaction, hold: TallyHold) {
      return inTransaction(async () => {
        const now = Date.now()
        const claimed = await call.query(statements.insertHold, [hold.id, hold.owner, now + hold.leaseMs, changesJson(hold.changes), now])
        if (claimed.length === 0) return null
        const rows: SqlRow[] = []
        // In order, each seeing the ones before: a hold that adds to one tally twice resolves both steps.
        for (const change of hold.changes) rows.push(await add(call, change, now))
        return rows
      })
    },

    async settle(call: SqlCall, inTransaction: InTransaction, settlements: ReadonlyArray<TallySettlement>) {
      await inTransaction(async () => {
        const now = Date.now()
        for (const settlement of settlements) {
          if ((await call.query(statements.markSettled, [settlement.id, now])).length === 0) continue
          await takeBack(call, await call.query(statements.releaseHold, [settlement.id]), now)
          for (const change of settlement.changes) await add(call, change, now)
        }
      })
      // Nothing committed meanwhile could hide from this transaction: it held the write lock throughout.
      return true
    },

    async renewHolds(call: SqlCall, _inTransaction: InTransaction, ids: ReadonlyArray<string>, leaseMs: number) {
      return (await call.query(statements.renew, [leaseMs, JSON.stringify(ids)])).length
    },

    releaseExpiredHolds(call: SqlCall, inTransaction: InTransaction, limit: number) {
      return inTransaction(async () => {
        const now = Date.now()
        const released = await call.query(statements.releaseExpired, [now, limit])
        await takeBack(call, released, now)
        return released.length
      })
    },

    async readTallies(call: SqlCall, keys: ReadonlyArray<string>) {
      const rows = await call.query(statements.read, [JSON.stringify(keys)])
      return new Map(rows.map((row) => [String(row.tally_key), Number(row.value)]))
    },

    async sweep(call: SqlCall) {
      for (const statement of statements.sweeps) {
        for (let batch = 0; batch < MAX_SWEEP_BATCHES; batch++) {
          if ((await call.query(statement)).length < SWEEP_BATCH) break
        }
      }
    },
  }
}
