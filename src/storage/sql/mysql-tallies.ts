/**
 * Tallies on MySQL 8 and MariaDB: each method is one `CALL` of a stored procedure that schema migration 3 creates
 * (src/storage/sql/migrations.ts), since there is no data-modifying `WITH` and mysql2 sends one statement at a time.
 * The procedure runs its transaction inside the server, so the tallies every process contends for stay locked from
 * their upsert to the `COMMIT` a few statements later, never across a round trip to the client. Where a procedure
 * cannot be called (a server without `JSON_TABLE`, routines not restored, no EXECUTE right) the same steps run as a
 * transaction from here, as batches of new records do (src/storage/sql/mysql.ts).
 *
 * InnoDB's locking reads see the latest committed row and wait for an uncommitted one, so the rows where writers of
 * one id meet are read with `FOR UPDATE`. A hold claims its id with a `settled` row whose `expires_at` is NULL; a
 * settlement turns that claim (or no row) into a settled id, so a hold and a settlement of one id always meet on
 * that row, whichever comes first. Every writer locks ids, then holds, then tallies, each in byte order; releasing
 * expired holds skips what others lock. Deadlocks left (with the transaction fallback) are retried by the driver.
 *
 * The procedures are part of migration 3: never edit them; a change is a new migration that replaces them.
 */
import { SETTLEMENT_MEMORY_MS, type CounterChange, type TallyHold, type TallySettlement } from '../contract'
import { NOW_MS, type InTransaction, type SqlCall, type SqlRow, type SqlValue, type TableNames, type TallyStatements } from './dialect'
import { KEY_LIMITS } from './keys'
import { changesJson, settlementsJson } from './tally-json'

const NOW = NOW_MS.mysql
const TEXT = 'LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin'
/** Keys and ids come out of JSON_TABLE as bytes, so they group, sort and compare as the VARBINARY columns do. */
const TALLY_KEY = `VARBINARY(${KEY_LIMITS.counterKey})`
const ID = `VARBINARY(${KEY_LIMITS.id})`
const CHANGE_COLUMNS = `tally_key ${TALLY_KEY} PATH '$.key', amount DOUBLE PATH '$.amount', ttl BIGINT PATH '$.ttlMs'`

/** Rows deleted by one sweep statement, and statements per sweep. */
const SWEEP_BATCH = 1_000
const MAX_SWEEP_BATCHES = 100

/**
 * Applies moves `(k, added, taken, ttl, ord)` to the tallies in one upsert, one row per tally in byte order. A live
 * tally gets `added - taken`; an absent or expired one starts again at `added` with the ttl of its first change, since
 * what a hold added to a tally that expired since is not taken back. A tally with nothing added (ttl NULL) that is
 * absent is inserted already expired, so one upsert takes every tally in key order; it reads as 0 and is swept.
 * `now` is said three times: the procedures' variable, or three parameters. MySQL assigns left to right, each
 * assignment seeing the ones before, so `value` is computed while `expires_at` is still the old expiry.
 */
const applyMoves = (t: TableNames, moves: string, now: string) => `INSERT INTO ${t.tallies} (tally_key, value, expires_at)
    SELECT d.k, d.added, ${now} + COALESCE(d.ttl, 0) FROM (
      SELECT m.k, SUM(m.added) AS added, SUM(m.taken) AS taken,
        CAST(SUBSTRING_INDEX(GROUP_CONCAT(m.ttl ORDER BY m.ord SEPARATOR ','), ',', 1) AS SIGNED) AS ttl
      FROM (${moves}) AS m
      GROUP BY m.k
    ) AS d
    ORDER BY d.k
    ON DUPLICATE KEY UPDATE
      value = IF(expires_at <= ${now}, VALUES(value), value + VALUES(value) - d.taken),
      expires_at = IF(expires_at <= ${now}, VALUES(expires_at), expires_at)`

/** The changes of released holds (a JSON array in `released`), as moves that take back. */
const takenBack = `SELECT r.tally_key AS k, 0e0 AS added, r.amount AS taken, NULL AS ttl, NULL AS ord
        FROM JSON_TABLE(released, '$[*]' COLUMNS (${CHANGE_COLUMNS})) AS r`

/** Any failure rolls the transaction back and is raised again unchanged (a duplicate id, a deadlock). */
const ROLLBACK_ON_ERROR = `DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
      ROLLBACK;
      RESIGNAL;
    END;`

/**
 * The procedures migration 3 creates, each dropped first (MySQL 8 has no CREATE PROCEDURE IF NOT EXISTS). SQL
 * SECURITY INVOKER, as migration 2's: a caller can do through them only what it could do itself.
 */
export const mysqlTallyProcedures = (t: TableNames): string[] => [
  `DROP PROCEDURE IF EXISTS ${t.holdProcedure}`,
  // The claim first: a settled id or another hold's claim fails the insert as a duplicate (after waiting for its
  // writer), before anything is written; a settlement forgotten by now no longer counts.
  `CREATE PROCEDURE ${t.holdProcedure} (
    IN hold_id ${ID},
    IN hold_owner VARBINARY(${KEY_LIMITS.holdOwner}),
    IN lease_ms BIGINT,
    IN hold_changes ${TEXT}
  )
  MODIFIES SQL DATA
  SQL SECURITY INVOKER
  BEGIN
    DECLARE now_ms BIGINT;
    ${ROLLBACK_ON_ERROR}
    START TRANSACTION;
    SET now_ms = ${NOW};
    DELETE FROM ${t.settled} WHERE id = hold_id AND expires_at <= now_ms;
    INSERT INTO ${t.settled} (id, expires_at) VALUES (hold_id, NULL);
    INSERT INTO ${t.holds} (id, owner, expires_at, changes) VALUES (hold_id, hold_owner, now_ms + lease_ms, hold_changes);
    ${applyMoves(
      t,
      `SELECT c.tally_key AS k, c.amount AS added, 0e0 AS taken, c.ttl, c.ord
        FROM JSON_TABLE(hold_changes, '$[*]' COLUMNS (ord FOR ORDINALITY, ${CHANGE_COLUMNS})) AS c`,
      'now_ms',
    )};
    SELECT t.value, t.expires_at
      FROM JSON_TABLE(hold_changes, '$[*]' COLUMNS (ord FOR ORDINALITY, tally_key ${TALLY_KEY} PATH '$.key')) AS c
      JOIN ${t.tallies} AS t ON t.tally_key = c.tally_key
      ORDER BY c.ord;
    COMMIT;
  END`,

  `DROP PROCEDURE IF EXISTS ${t.settleProcedure}`,
  // Id by id in byte order: lock the id's row (a locking read waits for a hold or settlement of it not committed yet),
  // skip it if settled, else settle it (an insert that meets a row committed meanwhile reads it again) and release its
  // hold. Then every tally in one upsert. \`fresh\` lists the batch positions settled now.
  `CREATE PROCEDURE ${t.settleProcedure} (IN batch ${TEXT})
  MODIFIES SQL DATA
  SQL SECURITY INVOKER
  BEGIN
    DECLARE now_ms BIGINT;
    DECLARE is_done BOOLEAN DEFAULT FALSE;
    DECLARE is_taken BOOLEAN DEFAULT FALSE;
    DECLARE is_fresh BOOLEAN DEFAULT FALSE;
    DECLARE batch_ord BIGINT;
    DECLARE batch_id ${ID};
    DECLARE found_count BIGINT;
    DECLARE found_expiry BIGINT;
    DECLARE held_changes ${TEXT};
    DECLARE fresh ${TEXT} DEFAULT ',';
    DECLARE released ${TEXT} DEFAULT '[]';
    DECLARE batch_ids CURSOR FOR
      SELECT b.ord, b.id FROM JSON_TABLE(batch, '$[*]' COLUMNS (ord FOR ORDINALITY, id ${ID} PATH '$.id')) AS b ORDER BY b.id;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET is_done = TRUE;
    ${ROLLBACK_ON_ERROR}
    START TRANSACTION;
    SET now_ms = ${NOW};
    OPEN batch_ids;
    settle_each: LOOP
      FETCH batch_ids INTO batch_ord, batch_id;
      IF is_done THEN
        LEAVE settle_each;
      END IF;
      claim: LOOP
        SELECT COUNT(*), MAX(expires_at) INTO found_count, found_expiry FROM ${t.settled} WHERE id = batch_id FOR UPDATE;
        IF found_count = 0 THEN
          BEGIN
            DECLARE CONTINUE HANDLER FOR 1062 SET is_taken = TRUE;
            SET is_taken = FALSE;
            INSERT INTO ${t.settled} (id, expires_at) VALUES (batch_id, now_ms + ${SETTLEMENT_MEMORY_MS});
          END;
          IF NOT is_taken THEN
            SET is_fresh = TRUE;
            LEAVE claim;
          END IF;
        ELSEIF found_expiry > now_ms THEN
          SET is_fresh = FALSE;
          LEAVE claim;
        ELSE
          UPDATE ${t.settled} SET expires_at = now_ms + ${SETTLEMENT_MEMORY_MS} WHERE id = batch_id;
          SET is_fresh = TRUE;
          LEAVE claim;
        END IF;
      END LOOP;
      IF is_fresh THEN
        SET fresh = CONCAT(fresh, batch_ord, ',');
        SELECT COUNT(*), MAX(changes) INTO found_count, held_changes FROM ${t.holds} WHERE id = batch_id FOR UPDATE;
        IF found_count > 0 THEN
          DELETE FROM ${t.holds} WHERE id = batch_id;
          SET released = JSON_MERGE_PRESERVE(released, held_changes);
        END IF;
      END IF;
    END LOOP;
    CLOSE batch_ids;
    ${applyMoves(
      t,
      `SELECT c.tally_key AS k, c.amount AS added, 0e0 AS taken, c.ttl, c.ord
        FROM JSON_TABLE(batch, '$[*]' COLUMNS (ord FOR ORDINALITY, NESTED PATH '$.changes[*]' COLUMNS (${CHANGE_COLUMNS}))) AS c
        WHERE c.tally_key IS NOT NULL AND LOCATE(CONCAT(',', c.ord, ','), fresh) > 0
      UNION ALL
      ${takenBack}`,
      'now_ms',
    )};
    COMMIT;
  END`,

  `DROP PROCEDURE IF EXISTS ${t.renewProcedure}`,
  // Holds locked in byte order, as a settlement locks them.
  `CREATE PROCEDURE ${t.renewProcedure} (IN hold_ids ${TEXT}, IN lease_ms BIGINT)
  MODIFIES SQL DATA
  SQL SECURITY INVOKER
  BEGIN
    DECLARE now_ms BIGINT;
    DECLARE is_done BOOLEAN DEFAULT FALSE;
    DECLARE renewed BIGINT DEFAULT 0;
    DECLARE found_count BIGINT;
    DECLARE hold_id ${ID};
    DECLARE renewing CURSOR FOR
      SELECT DISTINCT j.id FROM JSON_TABLE(hold_ids, '$[*]' COLUMNS (id ${ID} PATH '$')) AS j ORDER BY j.id;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET is_done = TRUE;
    ${ROLLBACK_ON_ERROR}
    START TRANSACTION;
    SET now_ms = ${NOW};
    OPEN renewing;
    renew_each: LOOP
      FETCH renewing INTO hold_id;
      IF is_done THEN
        LEAVE renew_each;
      END IF;
      SELECT COUNT(*) INTO found_count FROM ${t.holds} WHERE id = hold_id FOR UPDATE;
      IF found_count > 0 THEN
        UPDATE ${t.holds} SET expires_at = now_ms + lease_ms WHERE id = hold_id;
        SET renewed = renewed + 1;
      END IF;
    END LOOP;
    CLOSE renewing;
    COMMIT;
    SELECT renewed;
  END`,

  `DROP PROCEDURE IF EXISTS ${t.releaseProcedure}`,
  // A hold and its claim are taken together, skipping any a settlement or another sweep has locked: this never waits
  // for an id, and no hold is released twice. Holds are read first (STRAIGHT_JOIN), by expiry, so only the rows
  // returned are locked.
  `CREATE PROCEDURE ${t.releaseProcedure} (IN release_limit BIGINT)
  MODIFIES SQL DATA
  SQL SECURITY INVOKER
  BEGIN
    DECLARE now_ms BIGINT;
    DECLARE is_done BOOLEAN DEFAULT FALSE;
    DECLARE released_count BIGINT DEFAULT 0;
    DECLARE hold_id ${ID};
    DECLARE held_changes ${TEXT};
    DECLARE released ${TEXT} DEFAULT '[]';
    DECLARE expired_holds CURSOR FOR
      SELECT h.id, h.changes FROM ${t.holds} AS h STRAIGHT_JOIN ${t.settled} AS s ON s.id = h.id
      WHERE h.expires_at <= now_ms AND s.expires_at IS NULL
      ORDER BY h.expires_at
      LIMIT release_limit
      FOR UPDATE SKIP LOCKED;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET is_done = TRUE;
    ${ROLLBACK_ON_ERROR}
    START TRANSACTION;
    SET now_ms = ${NOW};
    OPEN expired_holds;
    release_each: LOOP
      FETCH expired_holds INTO hold_id, held_changes;
      IF is_done THEN
        LEAVE release_each;
      END IF;
      DELETE FROM ${t.holds} WHERE id = hold_id;
      DELETE FROM ${t.settled} WHERE id = hold_id AND expires_at IS NULL;
      SET released = JSON_MERGE_PRESERVE(released, held_changes);
      SET released_count = released_count + 1;
    END LOOP;
    CLOSE expired_holds;
    ${applyMoves(t, takenBack, 'now_ms')};
    COMMIT;
    SELECT released_count AS released;
  END`,
]

/** One tally's moves of a call, summed as `applyMoves` sums them. */
interface TallySum {
  key: string
  added: number
  taken: number
  /** The first change's ttl; null when nothing is added. */
  ttl: number | null
}

/** Sums what `adds` (in call order) add and `takes` take back, per tally. */
const sumMoves = (adds: ReadonlyArray<CounterChange>, takes: ReadonlyArray<{ key: string; amount: number }>): TallySum[] => {
  const sums = new Map<string, TallySum>()
  const sumOf = (key: string) => {
    let sum = sums.get(key)
    if (!sum) {
      sum = { key, added: 0, taken: 0, ttl: null }
      sums.set(key, sum)
    }
    return sum
  }
  for (const change of adds) {
    const sum = sumOf(change.key)
    sum.added += change.amount
    sum.ttl ??= change.ttlMs
  }
  for (const take of takes) sumOf(take.key).taken += take.amount
  return [...sums.values()]
}

const list = (count: number) => Array.from({ length: count }, () => '?').join(', ')

/** The first result set of a `CALL` (mysql2 answers a procedure with its result sets, then a status). */
const resultSet = (rows: SqlRow[]): SqlRow[] => (Array.isArray(rows[0]) ? (rows[0] as unknown as SqlRow[]) : [])

/** Raised inside a fallback settlement whose insert met an id committed meanwhile; the batch goes again. */
class SettleAgain extends Error {}

export interface MysqlTallyOptions {
  /** Decodes a key column (VARBINARY comes back as bytes). */
  text(value: unknown): string
  /** The procedure is missing, or this user may not run it. */
  isProcedureUnusable(error: unknown): boolean
  isUniqueViolation(error: unknown): boolean
}

export const createMysqlTallies = (t: TableNames, options: MysqlTallyOptions): TallyStatements => {
  const { text } = options
  /**
   * Cleared, for the life of this driver, by the first call that finds a procedure missing or not runnable by this
   * user; the server refuses such a call before it runs anything, so nothing was written.
   */
  let canCallProcedures = true

  /** Runs a procedure, resolving its first result set; `undefined` (nothing done) when it cannot be called here. */
  const procedure = async (call: SqlCall, name: string, params: SqlValue[]): Promise<SqlRow[] | undefined> => {
    if (!canCallProcedures) return undefined
    try {
      return resultSet(await call.query(`CALL ${name}(${list(params.length)})`, params))
    } catch (error) {
      if (!options.isProcedureUnusable(error)) throw error
      canCallProcedures = false
      return undefined
    }
  }

  /** The database clock, read once so every statement of a fallback transaction uses the same instant. */
  const clock = async (call: SqlCall): Promise<number> => Number((await call.query(`SELECT ${NOW} AS now_ms`))[0]!.now_ms)

  /** `applyMoves` over summed rows bound as parameters (no JSON_TABLE: the fallback serves servers without it). */
  const applySums = async (call: SqlCall, now: number, sums: TallySum[]) => {
    if (sums.length === 0) return
    const rows = sums
      .map(() => 'SELECT CAST(? AS BINARY) AS k, ? + 0e0 AS added, ? + 0e0 AS taken, CAST(? AS SIGNED) AS ttl, 0 AS ord')
      .join(' UNION ALL ')
    const now3 = 'CAST(? AS SIGNED)'
    await call.query(applyMoves(t, rows, now3), [
      now,
      ...sums.flatMap((sum): SqlValue[] => [sum.key, sum.added, sum.taken, sum.ttl]),
      now,
      now,
    ])
  }

  const holdInTransaction = (call: SqlCall, inTransaction: InTransaction, hold: TallyHold) =>
    inTransaction(async () => {
      const now = await clock(call)
      await call.query(`DELETE FROM ${t.settled} WHERE id = ? AND expires_at <= ?`, [hold.id, now])
      await call.query(`INSERT INTO ${t.settled} (id, expires_at) VALUES (?, NULL)`, [hold.id])
      await call.query(`INSERT INTO ${t.holds} (id, owner, expires_at, changes) VALUES (?, ?, ?, ?)`, [
        hold.id,
        hold.owner,
        now + hold.leaseMs,
        changesJson(hold.changes),
      ])
      await applySums(call, now, sumMoves(hold.changes, []))
      const keys = hold.changes.map((change) => change.key)
      const rows = await call.query(`SELECT tally_key, value, expires_at FROM ${t.tallies} WHERE tally_key IN (${list(keys.length)})`, keys)
      const byKey = new Map(rows.map((row) => [text(row.tally_key), row]))
      return keys.map((key) => byKey.get(key)!)
    })

  const settleInTransaction = async (call: SqlCall, inTransaction: InTransaction, settlements: ReadonlyArray<TallySettlement>) => {
    try {
      await inTransaction(async () => {
        const now = await clock(call)
        const ids = settlements.map((settlement) => settlement.id)
        const found = await call.query(`SELECT id, expires_at FROM ${t.settled} WHERE id IN (${list(ids.length)}) ORDER BY id FOR UPDATE`, ids)
        const expiries = new Map(found.map((row) => [text(row.id), row.expires_at === null ? null : Number(row.expires_at)]))
        const fresh = settlements.filter((settlement) => !((expiries.get(settlement.id) ?? Number.NEGATIVE_INFINITY) > now))
        if (fresh.length === 0) return
        const absent = fresh.filter((settlement) => !expiries.has(settlement.id)).map((settlement) => settlement.id)
        const reclaimed = fresh.filter((settlement) => expiries.has(settlement.id)).map((settlement) => settlement.id)
        const forgetAt = now + SETTLEMENT_MEMORY_MS
        if (absent.length > 0) {
          try {
            await call.query(
              `INSERT INTO ${t.settled} (id, expires_at) VALUES ${absent.map(() => '(?, ?)').join(', ')}`,
              absent.flatMap((id) => [id, forgetAt]),
            )
          } catch (error) {
            if (options.isUniqueViolation(error)) throw new SettleAgain()
            throw error
          }
        }
        if (reclaimed.length > 0) {
          await call.query(`UPDATE ${t.settled} SET expires_at = ? WHERE id IN (${list(reclaimed.length)})`, [forgetAt, ...reclaimed])
        }
        const freshIds = fresh.map((settlement) => settlement.id)
        const held = await call.query(`SELECT id, changes FROM ${t.holds} WHERE id IN (${list(freshIds.length)}) ORDER BY id FOR UPDATE`, freshIds)
        if (held.length > 0) {
          await call.query(`DELETE FROM ${t.holds} WHERE id IN (${list(held.length)})`, held.map((row) => text(row.id)))
        }
        const takes = held.flatMap((row) => JSON.parse(String(row.changes)) as CounterChange[])
        await applySums(call, now, sumMoves(fresh.flatMap((settlement) => settlement.changes), takes))
      })
      return true
    } catch (error) {
      if (error instanceof SettleAgain) return false
      throw error
    }
  }

  return {
    async hold(call, inTransaction, hold) {
      const rows = await procedure(call, t.holdProcedure, [hold.id, hold.owner, hold.leaseMs, changesJson(hold.changes)])
      return rows ?? (await holdInTransaction(call, inTransaction, hold))
    },

    async settle(call, inTransaction, settlements) {
      if ((await procedure(call, t.settleProcedure, [settlementsJson(settlements)])) !== undefined) return true
      return settleInTransaction(call, inTransaction, settlements)
    },

    async renewHolds(call, inTransaction, ids, leaseMs) {
      const rows = await procedure(call, t.renewProcedure, [JSON.stringify(ids), leaseMs])
      if (rows) return Number(rows[0]?.renewed ?? 0)
      return inTransaction(async () => {
        const held = await call.query(`SELECT id FROM ${t.holds} WHERE id IN (${list(ids.length)}) ORDER BY id FOR UPDATE`, [...ids])
        if (held.length === 0) return 0
        await call.query(`UPDATE ${t.holds} SET expires_at = ${NOW} + CAST(? AS SIGNED) WHERE id IN (${list(held.length)})`, [
          leaseMs,
          ...held.map((row) => text(row.id)),
        ])
        return held.length
      })
    },

    async releaseExpiredHolds(call, inTransaction, limit) {
      const rows = await procedure(call, t.releaseProcedure, [limit])
      if (rows) return Number(rows[0]?.released ?? 0)
      // Servers without JSON_TABLE have no SKIP LOCKED either: a second sweep waits for the first, then finds the
      // holds it released gone. The limit is a checked integer, written out (LIMIT takes no DOUBLE parameter).
      return inTransaction(async () => {
        const now = await clock(call)
        const picked = await call.query(
          `SELECT h.id, h.changes FROM ${t.holds} AS h STRAIGHT_JOIN ${t.settled} AS s ON s.id = h.id
           WHERE h.expires_at <= ? AND s.expires_at IS NULL ORDER BY h.expires_at LIMIT ${limit} FOR UPDATE`,
          [now],
        )
        if (picked.length === 0) return 0
        const ids = picked.map((row) => text(row.id))
        await call.query(`DELETE FROM ${t.holds} WHERE id IN (${list(ids.length)})`, ids)
        await call.query(`DELETE FROM ${t.settled} WHERE id IN (${list(ids.length)}) AND expires_at IS NULL`, ids)
        const takes = picked.flatMap((row) => JSON.parse(String(row.changes)) as CounterChange[])
        await applySums(call, now, sumMoves([], takes))
        return picked.length
      })
    },

    async readTallies(call, keys) {
      const rows = await call.query(`SELECT tally_key, value FROM ${t.tallies} WHERE tally_key IN (${list(keys.length)}) AND expires_at > ${NOW}`, [
        ...keys,
      ])
      return new Map(rows.map((row) => [text(row.tally_key), Number(row.value)]))
    },

    async sweep(call) {
      for (const table of [t.tallies, t.settled]) {
        for (let batch = 0; batch < MAX_SWEEP_BATCHES; batch++) {
          // A claim (expires_at NULL) never matches.
          await call.query(`DELETE FROM ${table} WHERE expires_at <= ${NOW} LIMIT ${SWEEP_BATCH}`)
          const [row] = await call.query('SELECT ROW_COUNT() AS swept')
          if (Number(row?.swept) < SWEEP_BATCH) break
        }
      }
    },
  }
}
