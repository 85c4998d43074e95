/**
 * `npm run bench`: modelgate's overhead on `POST /api/v1/responses` and `/chat/completions`, measured side by side
 * in one run against the upstream called directly, bare pass-through baselines and other gateways,
 * with a Responses upstream and with a Chat Completions upstream that modelgate translates; modelgate both as a
 * library on the memory store and as the runner users start (its default store, ledger and log; and two workers).
 * See bench/README.md for what each figure and ratio means.
 *
 * Environment: BENCH_SECONDS (measured seconds per target and phase, default 3), BENCH_REQUESTS
 * (measured requests per target and phase at most, default 100000), BENCH_CONNECTIONS (default 16),
 * BENCH_WARMUP_SECONDS (per target, before any phase, default 2), BENCH_RUNNER_ENV (a JSON object of environment variables
 * the runner columns get besides their own), BENCH_PROFILE=1 (CPU-profile the gateway process and the runner and print their
 * hot spots; its figures are then inflated by the profiler), BENCH_PHASES (a comma-separated subset of
 * json-n, stream-n, json-n/chat, stream-n/chat,
 * json-n/chat-completions, stream-n/chat-completions, json-1, stream-1, cache-hit/json-n, cache-hit/stream-n), BENCH_BUILD=always (rebuild first), BENCH_BUILD_DIR (measure
 * another build, e.g. a branch's dist/), BENCH_STORE=redis or postgres (the modelgate columns on the local Redis at
 * 127.0.0.1:6379 or PostgreSQL at 127.0.0.1:5432 instead of the memory store, and the runner columns instead of the
 * runner's default store), sqlite or file (on disk).
 */

import { mkdtempSync, readdirSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Agent } from 'undici'
import { resolveBuild } from './build'
import { runLoad, type LoadResult } from './load'
import { killAll, startServer, type ProcessStats, type ServerProcess } from './processes'
import { summarizeProfile } from './profile'
import { computeLedgerCosts, renderLedgerCosts } from './ledger-cost'
import { computeRatios, renderRatios } from './ratios'
import { renderCounts, renderTable } from './report'
import type { Cell, PhaseId, Results } from './results'
import { canReadProcesses, startRunner, type RunnerColumn } from './runner'
import { OTHER_GATEWAYS, directTarget, startModelgate, startPassthrough, type RouteId, type Target } from './targets'

const readNumber = (name: string, fallback: number): number => {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`)
  return value
}

const SECONDS = readNumber('BENCH_SECONDS', 3)
const REQUESTS = Math.floor(readNumber('BENCH_REQUESTS', 100_000))
const CONNECTIONS = Math.floor(readNumber('BENCH_CONNECTIONS', 16))
const WARMUP_SECONDS = readNumber('BENCH_WARMUP_SECONDS', 2)
/** Enough for V8 to optimise the hot path (measured: the gateway still compiles after 1,000 requests). */
const WARMUP_REQUESTS = 5_000
/** Before each phase, to settle the connection pools at that phase's concurrency. */
const SETTLE_MS = 400
const IS_PROFILING = process.env.BENCH_PROFILE === '1'
/** Where the modelgate columns keep their state (bench/gateway.mjs reads the same variable). */
const STORE_DESCRIPTIONS = {
  memory: 'the memory store (BENCH_STORE=redis or postgres for a local server, sqlite or file on disk): store calls cost no round trip',
  redis: 'the local Redis at 127.0.0.1:6379 (one key prefix per gateway process, deleted at its end): each store call is a network round trip',
  postgres:
    'the local PostgreSQL at 127.0.0.1:5432, database postgres (one schema per gateway process, dropped at its end): each statement is a network round trip',
  sqlite: "a SQLite file (the runner's default store) in a temporary directory per gateway process: each statement runs in the gateway's thread",
  file: "the embedded file store (the runner's default before SQLite) in a temporary directory per gateway process: each write appended to its journal and synced",
}
const STORE = process.env.BENCH_STORE || 'memory'
if (!Object.hasOwn(STORE_DESCRIPTIONS, STORE)) throw new Error(`BENCH_STORE must be memory, redis, postgres, sqlite or file, got "${STORE}"`)
const STORE_DESCRIPTION = STORE_DESCRIPTIONS[STORE as keyof typeof STORE_DESCRIPTIONS]
/** Targets take turns in short rounds, so a slow drift of the machine hits every column alike. */
const ROUNDS = 3
/** The whole run, however it is configured, ends by then. */
const TIME_LIMIT_MS = 10 * 60_000

/**
 * `share`: the part of BENCH_SECONDS and BENCH_REQUESTS a cell of the phase gets. The cache phases run three columns
 * on half of it: a hit is cheap, so half still counts thousands of requests, and the run grows by seconds, not a minute.
 */
const ALL_PHASES: Array<{ id: PhaseId; wire: RouteId; isStream: boolean; connections: number; share?: number }> = [
  { id: 'json-n', wire: 'responses', isStream: false, connections: CONNECTIONS },
  { id: 'stream-n', wire: 'responses', isStream: true, connections: CONNECTIONS },
  { id: 'json-n/chat', wire: 'chat', isStream: false, connections: CONNECTIONS },
  { id: 'stream-n/chat', wire: 'chat', isStream: true, connections: CONNECTIONS },
  { id: 'json-n/chat-completions', wire: 'chat-completions', isStream: false, connections: CONNECTIONS },
  { id: 'stream-n/chat-completions', wire: 'chat-completions', isStream: true, connections: CONNECTIONS },
  { id: 'json-1', wire: 'responses', isStream: false, connections: 1 },
  { id: 'stream-1', wire: 'responses', isStream: true, connections: 1 },
  { id: 'cache-hit/json-n', wire: 'cache-hit', isStream: false, connections: CONNECTIONS, share: 0.5 },
  { id: 'cache-hit/stream-n', wire: 'cache-hit', isStream: true, connections: CONNECTIONS, share: 0.5 },
]
/** BENCH_PHASES=json-n,stream-1 runs only those (e.g. to profile one load shape). */
const choosePhases = () => {
  const names = process.env.BENCH_PHASES?.split(',').filter((name) => name !== '')
  if (!names?.length) return ALL_PHASES
  const unknown = names.filter((name) => !ALL_PHASES.some((phase) => phase.id === name))
  if (unknown.length) throw new Error(`BENCH_PHASES: unknown phase ${unknown.join(', ')}; choose from ${ALL_PHASES.map((phase) => phase.id).join(', ')}`)
  return ALL_PHASES.filter((phase) => names.includes(phase.id))
}
const PHASES = choosePhases()
/**
 * Where the `modelgate/no-ledger` column runs: the ×N phases of both client APIs on the Responses-speaking and Chat
 * Completions upstreams it needs to show the ledger's CPU per request, and no more, so the run stays short.
 */
const LEDGER_PHASES: readonly PhaseId[] = ['json-n', 'stream-n', 'json-n/chat-completions', 'stream-n/chat-completions']
const NO_LEDGER_WHY = `run only in ${LEDGER_PHASES.join(', ')}, to measure the usage ledger's CPU per request`
/** The runner as shipped (bench/runner.ts), and with `--workers 2`, measured only where "two workers vs one" needs it. */
const RUNNER = 'runner'
const RUNNER_TWO = 'runner×2'
const TWO_WORKER_PHASES: readonly PhaseId[] = ['json-n', 'stream-n']
const TWO_WORKERS_WHY = `run only in ${TWO_WORKER_PHASES.join(', ')}, for "two workers vs one"`
/** The routes the chosen phases take (`wire`: the upstream's wire, or a Chat Completions client): only these are checked and warmed up. */
const WIRES = [...new Set(PHASES.map((phase) => phase.wire))]

const watchdog = setTimeout(() => {
  console.error(`bench: still running after ${TIME_LIMIT_MS / 60_000} minutes; stopping`)
  killAll()
  process.exit(1)
}, TIME_LIMIT_MS)
watchdog.unref()
process.once('SIGINT', () => {
  killAll()
  process.exit(130)
})

const emptyCell = (): Cell => ({
  completed: 0,
  failed: 0,
  elapsedMs: 0,
  latencies: [],
  firstTokens: [],
  serverCpuMicros: 0,
  upstreamCpuMicros: 0,
  roundCpuPerRequest: [],
})

/** The gateway's own counts (store calls, ledger writes and records), added over a measured round. */
const COUNTS = ['storeCalls', 'ledgerWrites', 'ledgerRecords'] as const
const addCounts = (cell: Cell, before: ProcessStats, after: ProcessStats) => {
  for (const name of COUNTS) {
    const [start, end] = [before[name], after[name]]
    if (start !== undefined && end !== undefined) cell[name] = (cell[name] ?? 0) + end - start
  }
}

const addLoad = (cell: Cell, load: LoadResult) => {
  cell.completed += load.completed
  cell.failed += load.failed
  cell.elapsedMs += load.elapsedMs
  for (const value of load.latencies) cell.latencies.push(value)
  for (const value of load.firstTokens) cell.firstTokens.push(value)
  cell.firstFailure ??= load.firstFailure
}

const main = async () => {
  const runStarted = performance.now()
  // Before the bench starts anything: how busy the machine already is.
  const loadAverageBefore = loadavg()[0]!
  const build = await resolveBuild()
  const profileDir = IS_PROFILING ? mkdtempSync(join(tmpdir(), 'modelgate-bench-profile-')) : undefined
  const runnerProfileDir = IS_PROFILING ? mkdtempSync(join(tmpdir(), 'modelgate-bench-runner-profile-')) : undefined
  const upstream = await startServer('upstream', './upstream.mjs', {})
  const upstreamUrl = upstream.ready.url!
  const targets: Target[] = [
    directTarget(upstream),
    ...(await Promise.all([startPassthrough(upstreamUrl, 'undici'), startPassthrough(upstreamUrl, 'fetch')])),
  ]
  const skipped: string[] = []
  for (const other of OTHER_GATEWAYS) {
    const started = await other.start(upstreamUrl)
    if ('skipped' in started) skipped.push(`${other.name}: ${started.skipped}`)
    else targets.push(started)
  }
  // modelgate is the last column, next to its targets, and then the same build with its usage ledger off.
  const profileFlags = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-interval', '250'] : []
  targets.push(await startModelgate(upstreamUrl, build.dir, { label: 'modelgate', execArgv: profileFlags }))
  if (PHASES.some((phase) => LEDGER_PHASES.includes(phase.id))) {
    targets.push(await startModelgate(upstreamUrl, build.dir, { label: 'modelgate/no-ledger', ledger: 'off', onlyIn: { phases: LEDGER_PHASES, why: NO_LEDGER_WHY } }))
  }
  // Then the runner as shipped, and with two workers where that phase is measured.
  const runners: RunnerColumn[] = [
    { label: RUNNER, workers: 1, execArgv: runnerProfileDir ? ['--cpu-prof', '--cpu-prof-dir', runnerProfileDir, '--cpu-prof-interval', '250'] : [] },
    ...(PHASES.some((phase) => TWO_WORKER_PHASES.includes(phase.id)) ? [{ label: RUNNER_TWO, workers: 2, onlyIn: { phases: TWO_WORKER_PHASES, why: TWO_WORKERS_WHY } }] : []),
  ]
  for (const column of runners) {
    if (!canReadProcesses()) {
      skipped.push(`${column.label}: its CPU and memory are read from /proc, which this system lacks`)
      continue
    }
    const started = await startRunner(upstreamUrl, build.dir, STORE, column)
    if ('skipped' in started) skipped.push(`${column.label}: ${started.skipped}`)
    else targets.push(started)
  }
  const agents = targets.map(() => new Agent({ connections: CONNECTIONS, keepAliveTimeout: 60_000, pipelining: 1 }))

  /** The target's way in for `wire`, or why it has none. */
  const routeOf = (index: number, wire: RouteId) => targets[index]!.routes[wire]
  const load = (index: number, wire: RouteId, isStream: boolean, connections: number, maxRequests: number, maxMs: number) => {
    const route = routeOf(index, wire)
    if ('skipped' in route) throw new Error(`${targets[index]!.label} cannot serve the ${wire} phases: ${route.skipped}`)
    const { url, headers, body, expect } = route
    return runLoad(agents[index]!, { url, headers, body: body(isStream), expect, isStream, connections, maxRequests, maxMs })
  }
  /** Whether the target takes part in `phase` at all (a column measured only in some phases). */
  const isMeasuredIn = (index: number, phase: PhaseId) => targets[index]!.onlyIn?.phases.includes(phase) ?? true
  /** The routes a target is checked, warmed up and measured on: those it serves, in the phases it takes part in. */
  const servedWires = (index: number) =>
    WIRES.filter((wire) => !('skipped' in routeOf(index, wire)) && PHASES.some((phase) => phase.wire === wire && isMeasuredIn(index, phase.id)))

  // One request of each kind per target first: a broken target stops the run with its answer.
  for (const [index, target] of targets.entries()) {
    for (const wire of servedWires(index)) {
      const route = routeOf(index, wire)
      if (!('skipped' in route) && route.expect.header) {
        // The first request of a cached route fills the cache (a miss), so it is not held to the header; every later one is.
        const { header: _header, ...expect } = route.expect
        const fill = await runLoad(agents[index]!, { url: route.url, headers: route.headers, body: route.body(false), expect, isStream: false, connections: 1, maxRequests: 1, maxMs: 10_000 })
        if (fill.completed !== 1) throw new Error(`${target.label} failed the ${wire} request that fills its cache: ${fill.firstFailure}`)
      }
      for (const isStream of [false, true]) {
        const check = await load(index, wire, isStream, 1, 1, 10_000)
        if (check.completed !== 1) throw new Error(`${target.label} failed its ${wire} ${isStream ? 'streaming' : 'non-streaming'} check: ${check.firstFailure}`)
      }
    }
  }

  // Warm-up: for each route in use, half non-streaming, half streaming, at full concurrency; nothing of it is counted.
  // A route two wires share (a relay's, which has nothing to translate or cache) is warmed once.
  for (const index of targets.keys()) {
    const warmed = new Set<unknown>()
    for (const wire of servedWires(index)) {
      const route = routeOf(index, wire)
      if (warmed.has(route)) continue
      warmed.add(route)
      const mustHit = !('skipped' in route) && route.expect.header !== undefined
      for (const isStream of [false, true]) {
        const warmUp = await load(index, wire, isStream, CONNECTIONS, WARMUP_REQUESTS / 2, (WARMUP_SECONDS * 1000) / 2)
        // A cached route whose answers are not all hits would measure something else: the run stops (load.ts checks the header).
        if (mustHit && warmUp.failed > 0) throw new Error(`${targets[index]!.label} failed its ${wire} warm-up: ${warmUp.firstFailure}`)
      }
    }
  }

  const cells: Partial<Record<PhaseId, Cell[]>> = {}
  let peakRssBytes: number[] = []
  for (const phase of PHASES) {
    const row = (cells[phase.id] = targets.map(emptyCell))
    const measured = [...targets.keys()].filter((index) => servedWires(index).includes(phase.wire) && isMeasuredIn(index, phase.id))
    for (const index of targets.keys()) {
      const route = routeOf(index, phase.wire)
      if ('skipped' in route) row[index]!.skipped = route.skipped
      else if (!isMeasuredIn(index, phase.id)) row[index]!.skipped = targets[index]!.onlyIn!.why
    }
    for (const index of measured) await load(index, phase.wire, phase.isStream, phase.connections, WARMUP_REQUESTS, SETTLE_MS)
    for (let round = 0; round < ROUNDS; round++) {
      for (const index of measured) {
        const target = targets[index]!
        const before = await Promise.all([target.server.stats(), upstream.stats()])
        const share = phase.share ?? 1
        const result = await load(index, phase.wire, phase.isStream, phase.connections, Math.ceil((REQUESTS * share) / ROUNDS), (SECONDS * 1000 * share) / ROUNDS)
        const after = await Promise.all([target.server.stats(), upstream.stats()])
        const cell = row[index]!
        addLoad(cell, result)
        cell.serverCpuMicros += after[0].cpuMicros - before[0].cpuMicros
        cell.upstreamCpuMicros += after[1].cpuMicros - before[1].cpuMicros
        cell.roundCpuPerRequest.push((after[0].cpuMicros - before[0].cpuMicros) / result.completed)
        addCounts(cell, before[0], after[0])
      }
    }
    if (phase.connections > 1) peakRssBytes = (await Promise.all(targets.map((target) => target.server.stats()))).map((stats) => stats.maxRssBytes)
  }

  const liveHeapBytes = (await Promise.all(targets.map((target) => target.server.stats(true)))).map((stats) => stats.heapUsedBytes)
  await Promise.all(agents.map((agent) => agent.close()))
  await Promise.all(targets.map((target) => target.server.stop()))

  const results: Results = {
    labels: targets.map((target) => target.label),
    connections: CONNECTIONS,
    cells,
    peakRssBytes,
    liveHeapBytes,
    streamEvents: { responses: Number(upstream.ready.responsesEvents), chat: Number(upstream.ready.chatEvents) },
  }
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU'
  console.log(
    'modelgate bench: POST /responses, loopback upstream with 0 ms latency (text.json / text.sse of the OpenAI Responses fixtures; ' +
      '"chat upstream" rows: of the OpenAI Chat Completions fixtures, which modelgate translates and the pass-throughs relay as Chat Completions; ' +
      '"/chat/completions" rows: the same upstream, every client on POST /chat/completions; ' +
      '"cache hit" rows: modelgate and the runner answer the Responses request from their response cache (x-modelgate-cache-ttl: 3600), pass/undici forwards it)',
  )
  console.log(`node ${process.version}, ${cpus().length} × ${cpu}; gateway from ${build.description}`)
  console.log(`modelgate's store: ${STORE_DESCRIPTION}`)
  console.log(
    `runner: that build's cli.js serve as shipped, usage ledger on, log at info (to a file), ` +
      (STORE === 'memory' ? 'its default store (MODELGATE_STORAGE unset) in a fresh temporary data directory' : `on the ${STORE} server above, in a namespace of its own`) +
      `; ${RUNNER_TWO}: the same with --workers 2`,
  )
  console.log(
    `each cell: ${SECONDS} s or ${REQUESTS} requests (whichever first) in ${ROUNDS} interleaved rounds, after a ${WARMUP_SECONDS} s warm-up per target; ` +
      `×${CONNECTIONS} / ×1 = concurrent connections; "server" = the target's own process (direct: the upstream); cache-hit cells: half of that`,
  )
  const loadAverageAfter = loadavg()[0]!
  console.log(
    `load average (1 min) before the bench / at its end: ${loadAverageBefore.toFixed(2)} / ${loadAverageAfter.toFixed(2)}` +
      (loadAverageBefore > 0.5
        ? ' — the machine was busy before the bench started: latencies are noisy, CPU per request less so'
        : ''),
  )
  if (IS_PROFILING) console.log('PROFILING: modelgate and the runner ran under --cpu-prof, so their figures are inflated')
  console.log('')
  console.log(renderTable(results))
  console.log('')
  console.log(renderRatios(computeRatios(results)))
  console.log('')
  const ledgerCosts = computeLedgerCosts(results)
  if (ledgerCosts.length > 0) {
    console.log(renderLedgerCosts(ledgerCosts))
    console.log('')
  }
  console.log('requests measured per cell:')
  console.log(renderCounts(results))
  console.log('')
  console.log('not measured:')
  for (const [index, target] of targets.entries()) {
    for (const wire of WIRES) {
      const route = routeOf(index, wire)
      const phases = PHASES.filter((phase) => phase.wire === wire).map((phase) => phase.id)
      if ('skipped' in route) console.log(`  ${target.label} in ${phases.join(', ')}: ${route.skipped}`)
    }
    const leftOut = PHASES.filter((phase) => !isMeasuredIn(index, phase.id)).map((phase) => phase.id)
    if (leftOut.length > 0) console.log(`  ${target.label} in ${leftOut.join(', ')}: ${target.onlyIn!.why}`)
  }
  for (const line of skipped) console.log(`  ${line}`)
  console.log(`\ntotal ${((performance.now() - runStarted) / 1000).toFixed(1)} s`)

  for (const [label, dir] of [['modelgate', profileDir], [RUNNER, runnerProfileDir]] as const) {
    if (!dir) continue
    const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'))
    console.log(`\n${label}:`)
    console.log(file ? summarizeProfile(join(dir, file)) : `no .cpuprofile was written to ${dir}`)
  }
  const hasFailures = Object.values(cells).some((row) => row?.some((cell) => cell.failed > 0))
  process.exitCode = hasFailures ? 1 : 0
}

main().catch((error: unknown) => {
  console.error('bench failed:', error instanceof Error ? error.message : error)
  killAll()
  process.exit(1)
})
