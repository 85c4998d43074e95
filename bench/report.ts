/** The results table: one column per target, the target and PASS/MISS for modelgate. */

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
  firstFailure?: string
}

export type PhaseId = 'json-n' | 'stream-n' | 'json-1' | 'stream-1'

export interface Results {
  labels: string[]
  connections: number
  /** Phases left out (BENCH_PHASES) have no row. */
  cells: Partial<Record<PhaseId, Cell[]>>
  /** Peak RSS of each target's server process after the N-connection phases. */
  peakRssBytes: number[]
  /** Heap in use after a full collection at the end of the run: the live set, which a leak would grow. */
  liveHeapBytes: number[]
}

interface Row {
  metric: string
  values: Array<number | undefined>
  digits: number
  /** Upper bound for modelgate, if the issue sets one. */
  limit?: number
  unit?: string
  /** Text for the result column when there is no limit. */
  note?: string
}

const DIRECT = 0
const sorted = (values: number[]) => [...values].sort((a, b) => a - b)

export const renderTable = (results: Results): string => {
  const { labels, cells, connections: n } = results
  const gateway = labels.length - 1
  const column = (phase: PhaseId, pick: (cell: Cell) => number) =>
    labels.map((_, index) => {
      const cell = cells[phase]?.[index]
      return cell && cell.completed > 0 ? pick(cell) : undefined
    })
  const quantile = (phase: PhaseId, q: number, samples: (cell: Cell) => number[] = (cell) => cell.latencies) =>
    column(phase, (cell) => percentile(sorted(samples(cell)), q))
  const added = (values: Array<number | undefined>) =>
    values.map((value, index) => (index === DIRECT || value === undefined || values[DIRECT] === undefined ? undefined : value - values[DIRECT]))
  const perSecond = (cell: Cell) => cell.completed / (cell.elapsedMs / 1000)
  const ttft = (cell: Cell) => cell.firstTokens

  const throughput = column('json-n', perSecond)
  const ratio = throughput[gateway] !== undefined && throughput[DIRECT] ? `${((100 * throughput[gateway]) / throughput[DIRECT]).toFixed(0)} % of direct` : ''
  const rows: Row[] = [
    { metric: `throughput, non-stream ×${n} (req/s)`, values: throughput, digits: 0, note: ratio },
    { metric: `server CPU / req, non-stream ×${n} (µs)`, values: column('json-n', (cell) => cell.serverCpuMicros / cell.completed), digits: 0, limit: 300 },
    { metric: `  upstream CPU / req, same run (µs)`, values: column('json-n', (cell) => cell.upstreamCpuMicros / cell.completed), digits: 0 },
    { metric: `throughput, stream ×${n} (req/s)`, values: column('stream-n', perSecond), digits: 0 },
    { metric: `server CPU / req, stream ×${n} (µs)`, values: column('stream-n', (cell) => cell.serverCpuMicros / cell.completed), digits: 0 },
    { metric: `peak RSS, ×${n} phases (MB)`, values: labels.map((_, index) => (results.peakRssBytes[index] ?? Number.NaN) / 1024 / 1024), digits: 1, limit: 120 },
    { metric: '  live heap after GC, end of run (MB)', values: labels.map((_, index) => (results.liveHeapBytes[index] ?? Number.NaN) / 1024 / 1024), digits: 1 },
    { metric: 'latency p50, non-stream ×1 (ms)', values: quantile('json-1', 0.5), digits: 3 },
    { metric: 'latency p90 (ms)', values: quantile('json-1', 0.9), digits: 3 },
    { metric: 'latency p99 (ms)', values: quantile('json-1', 0.99), digits: 3 },
    { metric: '  added p50 vs direct (ms)', values: added(quantile('json-1', 0.5)), digits: 3, limit: 0.4 },
    { metric: '  added p90 vs direct (ms)', values: added(quantile('json-1', 0.9)), digits: 3 },
    { metric: '  added p99 vs direct (ms)', values: added(quantile('json-1', 0.99)), digits: 3 },
    { metric: 'first token p50, stream ×1 (ms)', values: quantile('stream-1', 0.5, ttft), digits: 3 },
    { metric: '  added first token p50 (ms)', values: added(quantile('stream-1', 0.5, ttft)), digits: 3, limit: 0.5 },
    { metric: '  added first token p99 (ms)', values: added(quantile('stream-1', 0.99, ttft)), digits: 3 },
    { metric: 'full stream p50, stream ×1 (ms)', values: quantile('stream-1', 0.5), digits: 3 },
    { metric: '  added full stream p50 (ms)', values: added(quantile('stream-1', 0.5)), digits: 3 },
  ]

  const metricWidth = Math.max(...rows.map((row) => row.metric.length))
  const width = Math.max(10, ...labels.map((label) => label.length))
  const header = ['metric'.padEnd(metricWidth), ...labels.map((label) => label.padStart(width)), 'target'.padStart(8), '  result']
  const lines = [header.join('  '), '-'.repeat(header.join('  ').length + 12)]
  for (const row of rows) {
    const values = row.values.map((value) => (value === undefined || Number.isNaN(value) ? '—' : value.toFixed(row.digits)).padStart(width))
    const value = row.values[gateway]
    const result =
      row.limit === undefined ? (row.note ?? '') : value === undefined || Number.isNaN(value) ? 'NO DATA' : value <= row.limit ? 'PASS' : 'MISS'
    lines.push([row.metric.padEnd(metricWidth), ...values, (row.limit === undefined ? '' : `≤ ${row.limit}`).padStart(8), `  ${result}`].join('  ').trimEnd())
  }
  return lines.join('\n')
}

/** Requests counted per cell, and any failures, so a short or broken run is visible. */
export const renderCounts = (results: Results): string => {
  const lines: string[] = []
  for (const [phase, cells] of Object.entries(results.cells)) {
    const parts = (cells ?? []).map((cell, index) => `${results.labels[index]} ${cell.completed}${cell.failed ? ` (${cell.failed} FAILED: ${cell.firstFailure})` : ''}`)
    lines.push(`  ${phase.padEnd(8)} ${parts.join(', ')}`)
  }
  return lines.join('\n')
}
