/**
 * The project's targets, each a ratio (or, for latency, a difference) between two columns of the same run, so
 * the machine's drift from run to run cancels out (bench/README.md, "Ratios").
 */

import { figureAt, firstTokenQuantile, perSecond, serverCpuPerRequest, type CellFigure, type PhaseId, type Results } from './results'

const GATEWAY = 'modelgate'
const BASELINE = 'pass/undici'
const PEER = 'portkey'
/** The runner as shipped, and with two workers (bench/runner.ts). */
const RUNNER = 'runner'
const RUNNER_TWO = 'runner×2'

type Comparison = '≤' | '≥' | '<'

export interface Ratio {
  name: string
  /** `undefined` when a phase or a column it needs was not measured. */
  value: number | undefined
  digits: number
  /** None: a figure to read, with no target. */
  comparison?: Comparison
  bound?: number
}

const holds: Record<Comparison, (value: number, bound: number) => boolean> = {
  '≤': (value, bound) => value <= bound,
  '≥': (value, bound) => value >= bound,
  '<': (value, bound) => value < bound,
}

const quotient = (numerator: number | undefined, denominator: number | undefined) =>
  numerator === undefined || denominator === undefined || !(denominator > 0) ? undefined : numerator / denominator
const difference = (minuend: number | undefined, subtrahend: number | undefined) =>
  minuend === undefined || subtrahend === undefined ? undefined : minuend - subtrahend

export const computeRatios = (results: Results): Ratio[] => {
  const n = results.connections
  const at = (label: string, phase: PhaseId, figure: CellFigure) => {
    const index = results.labels.indexOf(label)
    return index === -1 ? undefined : figureAt(results, phase, index, figure)
  }
  const peakRss = (label: string) => {
    const bytes = results.peakRssBytes[results.labels.indexOf(label)]
    return bytes === undefined || Number.isNaN(bytes) ? undefined : bytes
  }
  const cpuRatio = (phase: PhaseId) => quotient(at(GATEWAY, phase, serverCpuPerRequest), at(BASELINE, phase, serverCpuPerRequest))
  const throughputRatio = (phase: PhaseId) => quotient(at(GATEWAY, phase, perSecond), at(PEER, phase, perSecond))
  const firstTokenP50 = firstTokenQuantile(0.5)

  return [
    { name: `stream CPU / req ×${n}, Responses upstream: ${GATEWAY} ÷ ${BASELINE}`, value: cpuRatio('stream-n'), digits: 2, comparison: '≤', bound: 1.1 },
    {
      name: `stream CPU / req ×${n}, Chat Completions upstream: ${GATEWAY} ÷ ${BASELINE}`,
      value: cpuRatio('stream-n/chat'),
      digits: 2,
      comparison: '≤',
      bound: 1.6,
    },
    { name: `stream throughput ×${n}: ${GATEWAY} ÷ ${PEER}`, value: throughputRatio('stream-n'), digits: 2, comparison: '≥', bound: 3 },
    { name: `JSON throughput ×${n}: ${GATEWAY} ÷ ${PEER}`, value: throughputRatio('json-n'), digits: 2, comparison: '≥', bound: 4 },
    { name: `JSON CPU / req ×${n}: ${GATEWAY} ÷ ${BASELINE}`, value: cpuRatio('json-n'), digits: 2, comparison: '≤', bound: 1 },
    // The same targets for a Chat Completions client: the Responses ones, on the route OpenRouter's own clients take.
    { name: `/chat/completions stream CPU / req ×${n}: ${GATEWAY} ÷ ${BASELINE}`, value: cpuRatio('stream-n/chat-completions'), digits: 2, comparison: '≤', bound: 1.1 },
    { name: `/chat/completions stream throughput ×${n}: ${GATEWAY} ÷ ${PEER}`, value: throughputRatio('stream-n/chat-completions'), digits: 2, comparison: '≥', bound: 3 },
    { name: `/chat/completions JSON throughput ×${n}: ${GATEWAY} ÷ ${PEER}`, value: throughputRatio('json-n/chat-completions'), digits: 2, comparison: '≥', bound: 4 },
    { name: `/chat/completions JSON CPU / req ×${n}: ${GATEWAY} ÷ ${BASELINE}`, value: cpuRatio('json-n/chat-completions'), digits: 2, comparison: '≤', bound: 1 },
    {
      name: `added first token p50 ×1 (ms): ${GATEWAY} − ${BASELINE}`,
      value: difference(at(GATEWAY, 'stream-1', firstTokenP50), at(BASELINE, 'stream-1', firstTokenP50)),
      digits: 3,
      comparison: '≤',
      bound: 0.1,
    },
    { name: `peak RSS: ${GATEWAY} ÷ ${BASELINE}`, value: quotient(peakRss(GATEWAY), peakRss(BASELINE)), digits: 2, comparison: '<', bound: 1 },
    ...runnerRatios(results, at, peakRss),
    ...cacheHitRatios(results, at),
  ]
}

/**
 * A response-cache hit against the cheapest forwarded request: what answering from the cache costs beside relaying to a
 * provider with no delay. No target: a hit still authenticates, reads its entry and records a generation, and its
 * worth is the provider's latency and cost it saves, which a 0 ms loopback upstream does not have.
 */
const cacheHitRatios = (results: Results, at: (label: string, phase: PhaseId, figure: CellFigure) => number | undefined): Ratio[] => {
  const n = results.connections
  const versus = (label: string, phase: PhaseId, figure: CellFigure) => quotient(at(label, phase, figure), at(BASELINE, phase, figure))
  return [GATEWAY, RUNNER].flatMap((label) => [
    { name: `cache hit, JSON CPU / req ×${n}: ${label} ÷ ${BASELINE}`, value: versus(label, 'cache-hit/json-n', serverCpuPerRequest), digits: 2 },
    { name: `cache hit, JSON throughput ×${n}: ${label} ÷ ${BASELINE}`, value: versus(label, 'cache-hit/json-n', perSecond), digits: 2 },
    { name: `cache hit, stream CPU / req ×${n}: ${label} ÷ ${BASELINE}`, value: versus(label, 'cache-hit/stream-n', serverCpuPerRequest), digits: 2 },
    { name: `cache hit, stream throughput ×${n}: ${label} ÷ ${BASELINE}`, value: versus(label, 'cache-hit/stream-n', perSecond), digits: 2 },
  ])
}

/**
 * The runner's targets: what users run (its default store, the ledger on, an access log line per request) against
 * Portkey and the bare pass-through. Its own CPU is a difference from the pass-through's, not a ratio: the runner pays
 * for its store and log, which the pass-through has not, so the bound says how much that may be.
 */
const runnerRatios = (
  results: Results,
  at: (label: string, phase: PhaseId, figure: CellFigure) => number | undefined,
  peakRss: (label: string) => number | undefined,
): Ratio[] => {
  const n = results.connections
  const { responses: responsesEvents, chat: chatEvents } = results.streamEvents
  const throughput = (phase: PhaseId) => quotient(at(RUNNER, phase, perSecond), at(PEER, phase, perSecond))
  const addedCpu = (phase: PhaseId) => difference(at(RUNNER, phase, serverCpuPerRequest), at(BASELINE, phase, serverCpuPerRequest))
  const twoToOne = (phase: PhaseId, figure: CellFigure) => quotient(at(RUNNER_TWO, phase, figure), at(RUNNER, phase, figure))
  const firstTokenP50 = firstTokenQuantile(0.5)
  return [
    { name: `JSON throughput ×${n}: ${RUNNER} ÷ ${PEER}`, value: throughput('json-n'), digits: 2, comparison: '≥', bound: 4 },
    { name: `stream throughput ×${n}: ${RUNNER} ÷ ${PEER}`, value: throughput('stream-n'), digits: 2, comparison: '≥', bound: 3 },
    { name: `/chat/completions JSON throughput ×${n}: ${RUNNER} ÷ ${PEER}`, value: throughput('json-n/chat-completions'), digits: 2, comparison: '≥', bound: 4 },
    { name: `/chat/completions stream throughput ×${n}: ${RUNNER} ÷ ${PEER}`, value: throughput('stream-n/chat-completions'), digits: 2, comparison: '≥', bound: 3 },
    { name: `JSON CPU / req ×${n} (µs): ${RUNNER} − ${BASELINE}`, value: addedCpu('json-n'), digits: 0, comparison: '≤', bound: 150 },
    { name: `/chat/completions JSON CPU / req ×${n} (µs): ${RUNNER} − ${BASELINE}`, value: addedCpu('json-n/chat-completions'), digits: 0, comparison: '≤', bound: 150 },
    // The bound is set for a stream of 20 events; the upstream's fixtures have these many.
    { name: `stream CPU / req ×${n}, ${responsesEvents} events (µs): ${RUNNER} − ${BASELINE}`, value: addedCpu('stream-n'), digits: 0, comparison: '≤', bound: 250 },
    {
      name: `/chat/completions stream CPU / req ×${n}, ${chatEvents} events (µs): ${RUNNER} − ${BASELINE}`,
      value: addedCpu('stream-n/chat-completions'),
      digits: 0,
      comparison: '≤',
      bound: 250,
    },
    {
      name: `added first token p50 ×1 (ms): ${RUNNER} − ${BASELINE}`,
      value: difference(at(RUNNER, 'stream-1', firstTokenP50), at(BASELINE, 'stream-1', firstTokenP50)),
      digits: 3,
      comparison: '≤',
      bound: 0.3,
    },
    { name: `peak RSS: ${RUNNER} ÷ ${BASELINE}`, value: quotient(peakRss(RUNNER), peakRss(BASELINE)), digits: 2, comparison: '≤', bound: 1.5 },
    // Two workers vs one: no target on a 2-core machine the load generator and the upstream share.
    { name: `two workers vs one, JSON throughput ×${n}: ${RUNNER_TWO} ÷ ${RUNNER}`, value: twoToOne('json-n', perSecond), digits: 2 },
    { name: `two workers vs one, stream throughput ×${n}: ${RUNNER_TWO} ÷ ${RUNNER}`, value: twoToOne('stream-n', perSecond), digits: 2 },
    { name: `two workers vs one, JSON CPU / req ×${n}: ${RUNNER_TWO} ÷ ${RUNNER}`, value: twoToOne('json-n', serverCpuPerRequest), digits: 2 },
    { name: `two workers vs one, stream CPU / req ×${n}: ${RUNNER_TWO} ÷ ${RUNNER}`, value: twoToOne('stream-n', serverCpuPerRequest), digits: 2 },
  ]
}

export const renderRatios = (ratios: Ratio[]): string => {
  const nameWidth = Math.max('ratios (same run)'.length, ...ratios.map((ratio) => ratio.name.length))
  const header = ['ratios (same run)'.padEnd(nameWidth), 'value'.padStart(8), 'target'.padStart(8), 'result'].join('  ')
  const lines = [header, '-'.repeat(header.length)]
  for (const ratio of ratios) {
    const value = ratio.value === undefined ? '—' : ratio.value.toFixed(ratio.digits)
    const { comparison, bound } = ratio
    const hasTarget = comparison !== undefined && bound !== undefined
    const target = hasTarget ? `${comparison} ${Number.isInteger(bound) && bound >= 10 ? bound : bound.toFixed(1)}` : '—'
    const result = ratio.value === undefined ? 'NO DATA' : !hasTarget ? 'no target' : holds[comparison](ratio.value, bound) ? 'PASS' : 'MISS'
    lines.push([ratio.name.padEnd(nameWidth), value.padStart(8), target.padStart(8), result].join('  '))
  }
  return lines.join('\n')
}
