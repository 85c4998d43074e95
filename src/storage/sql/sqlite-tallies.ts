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
import { IN_PROCESS_SETTLEMENT_MEMORY_MS, type CounterChange, type TallyHold, type TallySettlement } from '../contract'
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
  // Each change of the JSON `[{ key, amount, ttlMs }]` (?2) in one statement: a live tally gets the amount, an absent
  // or expired one starts again at it, expiring ttl after now (?1). Where the released hold (?3, the same JSON, or
  // `[]`) had added to a tally that still lives, that comes off first: what a settlement does to each tally it names.
  addMany: `INSERT INTO ${t.tallies} AS t (tally_key, value, expires_at)
    SELECT c.value ->> 'key', c.value ->> 'amount', ?1 + (c.value ->> 'ttlMs') FROM json_each(?2) c WHERE true
    ON CONFLICT (tally_key) DO UPDATE SET
      value = CASE WHEN t.expires_at <= ?1 THEN excluded.value
        ELSE t.value - coalesce((SELECT sum(h.value ->> 'amount') FROM json_each(?3) h WHERE h.value ->> 'key' = t.tally_key), 0) + excluded.value END,
      expires_at = CASE WHEN t.expires_at <= ?1 THEN excluded.expires_at ELSE t.expires_at END
    RETURNING tally_key, value, expires_at`,
  // What released holds added (?1, `[{ key, amount }]`, a key any number of times) comes off each tally only while it
  // lives (now: ?2): an expired one is not made negative.
  takeBackMany: `UPDATE ${t.tallies} SET value = value - (SELECT sum(h.value ->> 'amount') FROM json_each(?1) h WHERE h.value ->> 'key' = tally_key)
    WHERE tally_key IN (SELECT h.value ->> 'key' FROM json_each(?1) h) AND expires_at > ?2`,
  // Returns the id only when it was not settled (absent, or forgotten by now): that settlement applies. Remembered a
  // minute, as in the memory store: statements run on this thread, so no call succeeds without its caller seeing it.
  markSettled: `INSERT INTO ${t.settled} AS s (id, expires_at) VALUES (?1, ?2 + ${IN_PROCESS_SETTLEMENT_MEMORY_MS})
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

  /**
   * Applies `changes` (distinct tallies: the contract's rule) in one statement, taking back what the released hold
   * `released` (its `changes` JSON) added to the same tallies; resolves with each tally's row, in `changes` order.
   */
  const addAll = async (call: SqlCall, changes: ReadonlyArray<CounterChange>, now: number, released = '[]'): Promise<SqlRow[]> => {
    if (changes.length === 0) return []
    const rows = await call.query(statements.addMany, [now, changesJson(changes), released])
    const byKey = new Map(rows.map((row) => [String(row.tally_key), row]))
    return changes.map((change) => byKey.get(change.key)!)
  }

  /** Takes back what released holds (their `changes` JSON) added, except from the tallies in `settledKeys`. */
  const takeBack = async (call: SqlCall, released: ReadonlyArray<string>, now: number, settledKeys: ReadonlySet<string> = new Set()): Promise<void> => {
    const changes = released.flatMap((text) => (JSON.parse(text) as CounterChange[]).filter((change) => !settledKeys.has(change.key)))
    if (changes.length === 0) return
    await call.query(statements.takeBackMany, [JSON.stringify(changes.map(({ key, amount }) => ({ key, amount }))), now])
  }

  return {
    hold(call: SqlCall, inTransaction: InTransaction, hold: TallyHold) {
      return inTransaction(async () => {
        const now = Date.now()
        const claimed = await call.query(statements.insertHold, [hold.id, hold.owner, now + hold.leaseMs, changesJson(hold.changes), now])
        if (claimed.length === 0) return null
        return addAll(call, hold.changes, now)
      })
    },

    async settle(call: SqlCall, inTransaction: InTransaction, settlements: ReadonlyArray<TallySettlement>) {
      await inTransaction(async () => {
        const now = Date.now()
        for (const settlement of settlements) {
          if ((await call.query(statements.markSettled, [settlement.id, now])).length === 0) continue
          const released = (await call.query(statements.releaseHold, [settlement.id])).map((row) => String(row.changes))
          // The tallies the settlement names take the hold back in its own statement; the others on their own.
          await addAll(call, settlement.changes, now, released[0])
          await takeBack(call, released, now, new Set(settlement.changes.map((change) => change.key)))
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
        await takeBack(
          call,
          released.map((row) => String(row.changes)),
          now,
        )
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
