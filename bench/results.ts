/** What one bench run measured: a cell per phase and target, and the figures derived from a cell. */

import { percentile } from './load'

export interface Cell {
  completed: number
  failed: number
  elapsedMs: number
  latencies: number[]
  firstTokens: number[]
  /** CPU time of the target's own server process over the measured windows. */
  serverCpuMicros: number
  /** CPU time of the upstream process over the same windows. */
  upstreamCpuMicros: number
  /** Storage driver calls of the target over the measured windows; absent for targets without a store. */
  storeCalls?: number
  /** Of those, the usage ledger's writes (one group-commit batch each), and the records they carried. */
  ledgerWrites?: number
  ledgerRecords?: number
  /** Server CPU per request of each measured round, in order: rounds of two columns taken side by side pair up. */
  roundCpuPerRequest: number[]
  firstFailure?: string
  /** Why the target was not measured in this phase. */
  skipped?: string
}

/**
 * `/chat`: the upstream speaks Chat Completions, so modelgate translates; `/chat-completions`: the client speaks
 * Chat Completions to that same upstream; `cache-hit/`: modelgate answers from its response cache (bench/README.md).
 */
export type PhaseId =
  | 'json-n'
  | 'stream-n'
  | 'json-n/chat'
  | 'stream-n/chat'
  | 'json-n/chat-completions'
  | 'stream-n/chat-completions'
  | 'json-1'
  | 'stream-1'
  | 'cache-hit/json-n'
  | 'cache-hit/stream-n'

export interface Results {
  labels: string[]
  connections: number
  /** Phases left out (BENCH_PHASES) have no row. */
  cells: Partial<Record<PhaseId, Cell[]>>
  /** Peak RSS of each target's server process after the N-connection phases. */
  peakRssBytes: number[]
  /** Heap in use after a full collection at the end of the run: the live set, which a leak would grow. */
  liveHeapBytes: number[]
  /** Events in each of the upstream's streams (bench/upstream.mjs): the Responses one and the Chat Completions one. */
  streamEvents: { responses: number; chat: number }
}

/** A figure computed from one cell that measured something. */
export type CellFigure = (cell: Cell) => number

export const perSecond: CellFigure = (cell) => cell.completed / (cell.elapsedMs / 1000)
export const serverCpuPerRequest: CellFigure = (cell) => cell.serverCpuMicros / cell.completed
export const upstreamCpuPerRequest: CellFigure = (cell) => cell.upstreamCpuMicros / cell.completed
export const storeCallsPerRequest: CellFigure = (cell) => (cell.storeCalls === undefined ? Number.NaN : cell.storeCalls / cell.completed)
export const ledgerWritesPerRequest: CellFigure = (cell) => (cell.ledgerWrites === undefined ? Number.NaN : cell.ledgerWrites / cell.completed)
/** NaN where nothing was written (the ledger off), which the table shows as —. */
export const recordsPerLedgerWrite: CellFigure = (cell) =>
  cell.ledgerWrites === undefined || cell.ledgerRecords === undefined || cell.ledgerWrites === 0 ? Number.NaN : cell.ledgerRecords / cell.ledgerWrites

const sorted = (values: number[]) => [...values].sort((a, b) => a - b)
export const latencyQuantile = (q: number): CellFigure => (cell) => percentile(sorted(cell.latencies), q)
export const firstTokenQuantile = (q: number): CellFigure => (cell) => percentile(sorted(cell.firstTokens), q)

/** `figure` of the cell of `phase` in the column `index`, or `undefined` if that cell measured nothing. */
export const figureAt = (results: Results, phase: PhaseId, index: number, figure: CellFigure): number | undefined => {
  const cell = results.cells[phase]?.[index]
  return cell && cell.completed > 0 ? figure(cell) : undefined
}
