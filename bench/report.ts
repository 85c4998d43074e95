/** The table of absolute figures (one column per target) and the count of requests behind each cell. */

import {
  figureAt,
  firstTokenQuantile,
  latencyQuantile,
  ledgerWritesPerRequest,
  perSecond,
  recordsPerLedgerWrite,
  serverCpuPerRequest,
  storeCallsPerRequest,
  upstreamCpuPerRequest,
  type CellFigure,
  type PhaseId,
  type Results,
} from './results'

interface Row {
  metric: string
  values: Array<number | undefined>
  digits: number
}

const DIRECT = 0

/** The ×N phases whose usage-ledger writes the table shows: the phase, and how its rows name the load and the route. */
const LEDGER_ROWS: Array<[PhaseId, 'non-stream' | 'stream', string]> = [
  ['json-n', 'non-stream', ''],
  ['stream-n', 'stream', ''],
  ['json-n/chat', 'non-stream', ', chat upstream'],
  ['stream-n/chat', 'stream', ', chat upstream'],
  ['json-n/chat-completions', 'non-stream', ', /chat/completions'],
  ['stream-n/chat-completions', 'stream', ', /chat/completions'],
]

export const renderTable = (results: Results): string => {
  const { labels, connections: n } = results
  const column = (phase: PhaseId, figure: CellFigure) => labels.map((_, index) => figureAt(results, phase, index, figure))
  const added = (values: Array<number | undefined>) =>
    values.map((value, index) => (index === DIRECT || value === undefined || values[DIRECT] === undefined ? undefined : value - values[DIRECT]))
  const megabytes = (bytes: number[]) => labels.map((_, index) => (bytes[index] ?? Number.NaN) / 1024 / 1024)

  const rows: Row[] = [
    { metric: `throughput, non-stream ×${n} (req/s)`, values: column('json-n', perSecond), digits: 0 },
    { metric: `server CPU / req, non-stream ×${n} (µs)`, values: column('json-n', serverCpuPerRequest), digits: 0 },
    { metric: `  upstream CPU / req, same run (µs)`, values: column('json-n', upstreamCpuPerRequest), digits: 0 },
    { metric: `throughput, stream ×${n} (req/s)`, values: column('stream-n', perSecond), digits: 0 },
    { metric: `server CPU / req, stream ×${n} (µs)`, values: column('stream-n', serverCpuPerRequest), digits: 0 },
    { metric: `  upstream CPU / req, same run (µs)`, values: column('stream-n', upstreamCpuPerRequest), digits: 0 },
    { metric: `throughput, non-stream ×${n}, chat upstream (req/s)`, values: column('json-n/chat', perSecond), digits: 0 },
    { metric: `server CPU / req, non-stream ×${n}, chat upstream (µs)`, values: column('json-n/chat', serverCpuPerRequest), digits: 0 },
    { metric: `  upstream CPU / req, same run (µs)`, values: column('json-n/chat', upstreamCpuPerRequest), digits: 0 },
    { metric: `throughput, stream ×${n}, chat upstream (req/s)`, values: column('stream-n/chat', perSecond), digits: 0 },
    { metric: `server CPU / req, stream ×${n}, chat upstream (µs)`, values: column('stream-n/chat', serverCpuPerRequest), digits: 0 },
    { metric: `  upstream CPU / req, same run (µs)`, values: column('stream-n/chat', upstreamCpuPerRequest), digits: 0 },
    { metric: `throughput, non-stream ×${n}, /chat/completions (req/s)`, values: column('json-n/chat-completions', perSecond), digits: 0 },
    { metric: `server CPU / req, non-stream ×${n}, /chat/completions (µs)`, values: column('json-n/chat-completions', serverCpuPerRequest), digits: 0 },
    { metric: `  upstream CPU / req, same run (µs)`, values: column('json-n/chat-completions', upstreamCpuPerRequest), digits: 0 },
    { metric: `throughput, stream ×${n}, /chat/completions (req/s)`, values: column('stream-n/chat-completions', perSecond), digits: 0 },
    { metric: `server CPU / req, stream ×${n}, /chat/completions (µs)`, values: column('stream-n/chat-completions', serverCpuPerRequest), digits: 0 },
    { metric: `  upstream CPU / req, same run (µs)`, values: column('stream-n/chat-completions', upstreamCpuPerRequest), digits: 0 },
    { metric: `throughput, non-stream ×${n}, cache hit (req/s)`, values: column('cache-hit/json-n', perSecond), digits: 0 },
    { metric: `server CPU / req, non-stream ×${n}, cache hit (µs)`, values: column('cache-hit/json-n', serverCpuPerRequest), digits: 0 },
    { metric: `  upstream CPU / req, same run (µs)`, values: column('cache-hit/json-n', upstreamCpuPerRequest), digits: 0 },
    { metric: `throughput, stream ×${n}, cache hit (req/s)`, values: column('cache-hit/stream-n', perSecond), digits: 0 },
    { metric: `server CPU / req, stream ×${n}, cache hit (µs)`, values: column('cache-hit/stream-n', serverCpuPerRequest), digits: 0 },
    { metric: `  upstream CPU / req, same run (µs)`, values: column('cache-hit/stream-n', upstreamCpuPerRequest), digits: 0 },
    { metric: `store calls / req, non-stream ×${n}`, values: column('json-n', storeCallsPerRequest), digits: 1 },
    { metric: `store calls / req, stream ×${n}`, values: column('stream-n', storeCallsPerRequest), digits: 1 },
    { metric: `store calls / req, non-stream ×${n}, cache hit`, values: column('cache-hit/json-n', storeCallsPerRequest), digits: 1 },
    { metric: `store calls / req, stream ×${n}, cache hit`, values: column('cache-hit/stream-n', storeCallsPerRequest), digits: 1 },
    ...LEDGER_ROWS.flatMap(([phase, load, route]) => [
      { metric: `ledger writes / req, ${load} ×${n}${route}`, values: column(phase, ledgerWritesPerRequest), digits: 2 },
      { metric: '  records / ledger write', values: column(phase, recordsPerLedgerWrite), digits: 1 },
    ]),
    { metric: `peak RSS, ×${n} phases (MB)`, values: megabytes(results.peakRssBytes), digits: 1 },
    { metric: '  live heap after GC, end of run (MB)', values: megabytes(results.liveHeapBytes), digits: 1 },
    { metric: 'latency p50, non-stream ×1 (ms)', values: column('json-1', latencyQuantile(0.5)), digits: 3 },
    { metric: 'latency p90 (ms)', values: column('json-1', latencyQuantile(0.9)), digits: 3 },
    { metric: 'latency p99 (ms)', values: column('json-1', latencyQuantile(0.99)), digits: 3 },
    { metric: '  added p50 vs direct (ms)', values: added(column('json-1', latencyQuantile(0.5))), digits: 3 },
    { metric: '  added p90 vs direct (ms)', values: added(column('json-1', latencyQuantile(0.9))), digits: 3 },
    { metric: '  added p99 vs direct (ms)', values: added(column('json-1', latencyQuantile(0.99))), digits: 3 },
    { metric: 'first token p50, stream ×1 (ms)', values: column('stream-1', firstTokenQuantile(0.5)), digits: 3 },
    { metric: '  added first token p50 (ms)', values: added(column('stream-1', firstTokenQuantile(0.5))), digits: 3 },
    { metric: '  added first token p99 (ms)', values: added(column('stream-1', firstTokenQuantile(0.99))), digits: 3 },
    { metric: 'full stream p50, stream ×1 (ms)', values: column('stream-1', latencyQuantile(0.5)), digits: 3 },
    { metric: '  added full stream p50 (ms)', values: added(column('stream-1', latencyQuantile(0.5))), digits: 3 },
  ]

  const metricWidth = Math.max(...rows.map((row) => row.metric.length))
  // Each column as wide as its label, so one long label does not widen them all.
  const widths = labels.map((label) => Math.max(10, label.length))
  const header = ['metric'.padEnd(metricWidth), ...labels.map((label, index) => label.padStart(widths[index]!))].join('  ')
  const lines = [header, '-'.repeat(header.length)]
  for (const row of rows) {
    const values = row.values.map((value, index) => (value === undefined || Number.isNaN(value) ? '—' : value.toFixed(row.digits)).padStart(widths[index]!))
    lines.push([row.metric.padEnd(metricWidth), ...values].join('  '))
  }
  return lines.join('\n')
}

/** Requests counted per cell, and any failures or skipped cells, so a short or broken run is visible. */
export const renderCounts = (results: Results): string => {
  const lines: string[] = []
  for (const [phase, cells] of Object.entries(results.cells)) {
    const parts = (cells ?? []).map((cell, index) => {
      const label = results.labels[index]
      if (cell.skipped) return `${label} skipped`
      return `${label} ${cell.completed}${cell.failed ? ` (${cell.failed} FAILED: ${cell.firstFailure})` : ''}`
    })
    lines.push(`  ${phase.padEnd(25)} ${parts.join(', ')}`)
  }
  return lines.join('\n')
}
