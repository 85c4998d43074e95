/**
 * Holds and settlements as the JSON text the tally statements read (PostgreSQL's `json_to_recordset`, MySQL's and
 * MariaDB's `JSON_TABLE`) and a hold's row keeps: one parameter for any number of rows, so a call stays one
 * statement (or one procedure call) with the same text whatever its size.
 */
import type { CounterChange, TallySettlement } from '../contract'

/** What a hold or settlement adds: `[{ key, amount, ttlMs }]`. */
export const changeRows = (changes: ReadonlyArray<CounterChange>) => changes.map(({ key, amount, ttlMs }) => ({ key, amount, ttlMs }))

export const changesJson = (changes: ReadonlyArray<CounterChange>): string => JSON.stringify(changeRows(changes))

/** `[{ id, changes: [{ key, amount, ttlMs }] }]`, in batch order. */
export const settlementsJson = (settlements: ReadonlyArray<TallySettlement>): string =>
  JSON.stringify(settlements.map((settlement) => ({ id: settlement.id, changes: changeRows(settlement.changes) })))
