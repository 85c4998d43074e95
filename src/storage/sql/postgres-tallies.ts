/**
 * Tallies on PostgreSQL: every method is one statement (one round trip), data-modifying `WITH` clauses doing in
 * one atomic step what would otherwise be a transaction. The rows many processes contend for, the tallies, are
 * locked by one upsert in key order, after every other row the statement needs, and only for that statement: never
 * across a round trip to the client.
 *
 * Every statement sees one snapshot, taken when it starts; only the rows it inserts into or updates are read again at
 * their latest version. So the rows where writers of one id meet are `settled` rows (migration 3,
 * src/storage/sql/migrations.ts), claimed with `INSERT ... ON CONFLICT`: a hold claims its id with a row whose
 * `expires_at` is NULL, and a settlement turns that claim (or no row) into a settled id. A hold that meets a settled
 * id, or a claim, waits for its writer to commit and is refused; a settlement that meets a claim it cannot see in its
 * snapshot (a hold committed while it ran) applies the rest of the batch and asks to be sent again.
 */
import { SETTLEMENT_MEMORY_MS, type TallyHold, type TallySettlement } from '../contract'
import { NOW_MS, type SqlCall, type TableNames, type TallyStatements } from './dialect'
import { changesJson, settlementsJson } from './tally-json'

const NOW = NOW_MS.postgres

/** Rows deleted by one sweep statement, and statements per sweep. */
const SWEEP_BATCH = 1_000
const MAX_SWEEP_BATCHES = 100

/**
 * Applies `sums(tally_key, added, taken, ttl)` (one row per tally) in one upsert, in key order. A live tally gets
 * `added - taken`; an absent or expired one starts again at `added` with `ttl` (the first change's), since what a
 * hold added to a tally that expired since is not taken back. A tally with nothing added (ttl NULL) that is absent
 * is inserted already expired, so that one upsert takes every tally in key order; it reads as 0 and is swept.
 */
const applySums = (t: TableNames) => `applied AS (
    INSERT INTO ${t.tallies} AS t (tally_key, value, expires_at)
    SELECT tally_key, added, ${NOW} + COALESCE(ttl, 0) FROM sums ORDER BY tally_key
    ON CONFLICT (tally_key) DO UPDATE SET
      value = CASE WHEN t.expires_at <= ${NOW} THEN EXCLUDED.value
        ELSE t.value + EXCLUDED.value - (SELECT s.taken FROM sums AS s WHERE s.tally_key = EXCLUDED.tally_key) END,
      expires_at = CASE WHEN t.expires_at <= ${NOW} THEN EXCLUDED.expires_at ELSE t.expires_at END
    RETURNING t.tally_key, t.value, t.expires_at
  )`

/** The changes of released holds (`released(id, changes)`), as rows to take back. */
const takenBack = `SELECT c.key COLLATE "C" AS tally_key, 0::float8 AS added, c.amount AS taken, NULL::bigint AS ttl, NULL::bigint AS ord
    FROM released AS r CROSS JOIN LATERAL json_to_recordset(r.changes) AS c(key text, amount float8)`

/** The statements of one table prefix, written once. */
const statementsFor = (t: TableNames) => ({
  // The claim comes first: the hold's row and its tallies are written only when it returns the id.
  hold: `WITH claim AS (
      INSERT INTO ${t.settled} AS s (id, expires_at) VALUES (?, NULL)
      ON CONFLICT (id) DO UPDATE SET expires_at = NULL WHERE s.expires_at <= ${NOW}
      RETURNING s.id
    ),
    held AS (
      INSERT INTO ${t.holds} (id, owner, expires_at, changes) SELECT id, ?, ${NOW} + ?, ?::json FROM claim
    ),
    input AS (
      SELECT c.key COLLATE "C" AS tally_key, c.amount, c.ttl, c.ord
      FROM ROWS FROM (json_to_recordset(?::json) AS (key text, amount float8, "ttlMs" bigint)) WITH ORDINALITY AS c(key, amount, ttl, ord)
    ),
    sums AS (SELECT tally_key, amount AS added, 0::float8 AS taken, ttl FROM input WHERE EXISTS (SELECT 1 FROM claim)),
    ${applySums(t)}
    SELECT a.value, a.expires_at FROM input AS i JOIN applied AS a ON a.tally_key = i.tally_key ORDER BY i.ord`,

  // `fresh`: the ids settled now. An id whose row is a claim is settled only when the claim is in this statement's
  // snapshot, so the hold it claims for is too and `released` finds it; a claim committed while the statement ran
  // leaves the id to the next attempt (`pending`), as does a settlement committed meanwhile. Ids, then the holds, then
  // the tallies are locked, each in key order.
  settle: `WITH input AS (
      SELECT b.id COLLATE "C" AS id, b.changes, b.ord
      FROM ROWS FROM (json_to_recordset(?::json) AS (id text, changes json)) WITH ORDINALITY AS b(id, changes, ord)
    ),
    fresh AS (
      INSERT INTO ${t.settled} AS s (id, expires_at)
      SELECT id, ${NOW} + ${SETTLEMENT_MEMORY_MS} FROM input ORDER BY id
      ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at
      WHERE s.expires_at <= ${NOW}
        OR (s.expires_at IS NULL AND EXISTS (SELECT 1 FROM ${t.settled} AS seen WHERE seen.id = s.id AND seen.expires_at IS NULL))
      RETURNING s.id
    ),
    released AS (
      DELETE FROM ${t.holds} AS h
      WHERE h.id IN (SELECT l.id FROM ${t.holds} AS l WHERE l.id IN (SELECT id FROM fresh) ORDER BY l.id FOR UPDATE)
      RETURNING h.id, h.changes
    ),
    sums AS (
      SELECT tally_key, sum(added) AS added, sum(taken) AS taken, (array_agg(ttl ORDER BY ord) FILTER (WHERE ttl IS NOT NULL))[1] AS ttl
      FROM (
        SELECT c.key COLLATE "C" AS tally_key, c.amount AS added, 0::float8 AS taken, c."ttlMs" AS ttl, i.ord
          FROM input AS i JOIN fresh AS f ON f.id = i.id
          CROSS JOIN LATERAL json_to_recordset(i.changes) AS c(key text, amount float8, "ttlMs" bigint)
        UNION ALL
        ${takenBack}
      ) AS moves
      GROUP BY tally_key
    ),
    ${applySums(t)}
    SELECT count(*) AS pending FROM input AS i
    WHERE NOT EXISTS (SELECT 1 FROM fresh AS f WHERE f.id = i.id)
      AND NOT EXISTS (SELECT 1 FROM ${t.settled} AS s WHERE s.id = i.id AND s.expires_at > ${NOW})`,

  // The hold's row and its claim are taken together, skipping any another writer holds: a settlement or a sweep
  // already working on them decides them, and this statement never waits for an id, so it cannot deadlock.
  release: `WITH picked AS (
      SELECT h.id FROM ${t.holds} AS h JOIN ${t.settled} AS s ON s.id = h.id
      WHERE h.expires_at <= ${NOW} AND s.expires_at IS NULL
      ORDER BY h.expires_at LIMIT ?
      FOR UPDATE OF h, s SKIP LOCKED
    ),
    released AS (DELETE FROM ${t.holds} AS h USING picked AS p WHERE h.id = p.id RETURNING h.id, h.changes),
    unclaimed AS (DELETE FROM ${t.settled} AS s USING released AS r WHERE s.id = r.id AND s.expires_at IS NULL),
    sums AS (SELECT tally_key, 0::float8 AS added, sum(taken) AS taken, NULL::bigint AS ttl FROM (${takenBack}) AS moves GROUP BY tally_key),
    ${applySums(t)}
    SELECT count(*) AS released FROM released`,

  // Holds locked in id order, as a settlement locks them.
  renew: `WITH renewed AS (
      UPDATE ${t.holds} AS h SET expires_at = ${NOW} + ?
      WHERE h.id IN (
        SELECT l.id FROM ${t.holds} AS l WHERE l.id IN (SELECT json_array_elements_text(?::json) COLLATE "C") ORDER BY l.id FOR UPDATE
      )
      RETURNING h.id
    )
    SELECT count(*) AS renewed FROM renewed`,

  read: `SELECT tally_key, value FROM ${t.tallies}
    WHERE tally_key IN (SELECT json_array_elements_text(?::json) COLLATE "C") AND expires_at > ${NOW}`,

  // The outer expiry test re-checks each row after locking it, so a row renewed or claimed meanwhile stays.
  sweeps: [
    `WITH swept AS (
      DELETE FROM ${t.tallies} WHERE expires_at <= ${NOW} AND tally_key IN (
        SELECT tally_key FROM ${t.tallies} WHERE expires_at <= ${NOW} LIMIT ${SWEEP_BATCH})
      RETURNING 1
    ) SELECT count(*) AS swept FROM swept`,
    `WITH swept AS (
      DELETE FROM ${t.settled} WHERE expires_at <= ${NOW} AND id IN (
        SELECT id FROM ${t.settled} WHERE expires_at <= ${NOW} LIMIT ${SWEEP_BATCH})
      RETURNING 1
    ) SELECT count(*) AS swept FROM swept`,
  ],
})

export const createPostgresTallies = (tables: TableNames): TallyStatements => {
  const statements = statementsFor(tables)
  return {
    async hold(call: SqlCall, _inTransaction, hold: TallyHold) {
      const changes = changesJson(hold.changes)
      const rows = await call.query(statements.hold, [hold.id, hold.owner, hold.leaseMs, changes, changes])
      return rows.length === 0 ? null : rows
    },

    async settle(call: SqlCall, _inTransaction, settlements: ReadonlyArray<TallySettlement>) {
      const [row] = await call.query(statements.settle, [settlementsJson(settlements)])
      return Number(row?.pending) === 0
    },

    async renewHolds(call: SqlCall, _inTransaction, ids: ReadonlyArray<string>, leaseMs: number) {
      const [row] = await call.query(statements.renew, [leaseMs, JSON.stringify(ids)])
      return Number(row?.renewed ?? 0)
    },

    async releaseExpiredHolds(call: SqlCall, _inTransaction, limit: number) {
      const [row] = await call.query(statements.release, [limit])
      return Number(row?.released ?? 0)
    },

    async readTallies(call: SqlCall, keys: ReadonlyArray<string>) {
      const rows = await call.query(statements.read, [JSON.stringify(keys)])
      return new Map(rows.map((row) => [String(row.tally_key), Number(row.value)]))
    },

    async sweep(call: SqlCall) {
      for (const statement of statements.sweeps) {
        for (let batch = 0; batch < MAX_SWEEP_BATCHES; batch++) {
          const [row] = await call.query(statement)
          if (Number(row?.swept) < SWEEP_BATCH) break
        }
      }
    },
  }
}
