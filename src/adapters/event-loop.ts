/**
 * Watches the process's event loop (Node's `perf_hooks.monitorEventLoopDelay`): every request of every tenant
 * shares it, so a stall is everyone's. The figures go to `/health/ready` (`checks.event_loop`), and a window
 * whose p99 or maximum delay passes the threshold (100 ms by default) is logged as a warning naming the routes
 * that were running then (docs/decisions.md, "No tenant can stall the gateway").
 */

import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import type { EventLoopDelay, EventLoopMonitor } from '../core/event-loop'
import type { Logger } from '../core/logger'

export interface EventLoopMonitorOptions {
  /** Where a stall is reported (a warning per window); none logs nothing. */
  logger?: Logger
  /** Delay, in ms, past which a window is slow (default 100). */
  thresholdMs?: number
  /** Length of one window, in ms (default 10 000). */
  windowMs?: number
}

export interface NodeEventLoopMonitor extends EventLoopMonitor {
  track(route: string): () => void
  /** Stops measuring; the timers never keep the process alive. */
  stop(): void
}

const NANOSECONDS_PER_MS = 1e6
/** How often the loop is sampled, in ms: a stall shorter than this may go unseen. */
const RESOLUTION_MS = 10
/** How often our own timer checks for a late wake-up, in ms. */
const SAMPLE_MS = 50
/** Finished requests remembered, for naming those that ran during a stall that has just ended. */
const RECENT_MAX = 64

type Figures = { p50Ms: number; p99Ms: number; maxMs: number }
const NONE: Figures = { p50Ms: 0, p99Ms: 0, maxMs: 0 }
const round = (ms: number) => Math.round(ms * 10) / 10

/**
 * Starts watching the event loop.
 * @example
 * const eventLoop = createEventLoopMonitor({ logger })
 * const gateway = createGateway({ eventLoop })   // GET /health/ready reports checks.event_loop
 */
export const createEventLoopMonitor = (options: EventLoopMonitorOptions = {}): NodeEventLoopMonitor => {
  const thresholdMs = options.thresholdMs ?? 100
  const windowMs = options.windowMs ?? 10_000
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
  histogram.enable()
  let previous = NONE
  const running = new Map<number, { route: string }>()
  const finished: Array<{ route: string; endedAt: number }> = []
  let nextId = 0

  const current = (): Figures =>
    histogram.count === 0
      ? NONE
      : { p50Ms: histogram.percentile(50) / NANOSECONDS_PER_MS, p99Ms: histogram.percentile(99) / NANOSECONDS_PER_MS, maxMs: histogram.max / NANOSECONDS_PER_MS }

  /** Routes of the requests that ran at some point of the last `spanMs`: running now, or ended within it. */
  const routesWithin = (spanMs: number): string[] => {
    const since = performance.now() - spanMs
    const routes = [...running.values()].map((entry) => entry.route)
    for (const entry of finished) if (entry.endedAt >= since) routes.push(entry.route)
    return routes
  }

  // A timer of our own sees when a stall happened (the histogram only how long), so the routes that ran during
  // it can be named: running when it ended, or finished since it began.
  const stalledRoutes = new Set<string>()
  let expected = performance.now() + SAMPLE_MS
  const sampler = setInterval(() => {
    const now = performance.now()
    const lateMs = now - expected
    expected = now + SAMPLE_MS
    // A stall that ended part-way through this timer's wait shows as less lateness than it lasted.
    if (lateMs >= thresholdMs - SAMPLE_MS) for (const route of routesWithin(lateMs + SAMPLE_MS)) stalledRoutes.add(route)
  }, SAMPLE_MS)
  sampler.unref()

  const timer = setInterval(() => {
    const figures = current()
    histogram.reset()
    previous = figures
    const routes = [...stalledRoutes]
    stalledRoutes.clear()
    if (figures.p99Ms < thresholdMs && figures.maxMs < thresholdMs) return
    options.logger?.warn(`the event loop stalled: p99 delay ${round(figures.p99Ms)} ms, longest ${round(figures.maxMs)} ms over the last ${windowMs / 1000} s; every request waited`, {
      p99Ms: round(figures.p99Ms),
      maxMs: round(figures.maxMs),
      windowSeconds: windowMs / 1000,
      ...(routes.length > 0 ? { routes } : {}),
    })
  }, windowMs)
  timer.unref()

  return {
    read(): EventLoopDelay {
      const now = current()
      const p99Ms = Math.max(now.p99Ms, previous.p99Ms)
      const maxMs = Math.max(now.maxMs, previous.maxMs)
      return {
        p50Ms: round(Math.max(now.p50Ms, previous.p50Ms)),
        p99Ms: round(p99Ms),
        maxMs: round(maxMs),
        windowSeconds: windowMs / 1000,
        thresholdMs,
        isSlow: p99Ms >= thresholdMs || maxMs >= thresholdMs,
      }
    },
    track(route) {
      const id = ++nextId
      running.set(id, { route })
      return () => {
        running.delete(id)
        finished.push({ route, endedAt: performance.now() })
        if (finished.length > RECENT_MAX) finished.shift()
      }
    },
    stop() {
      clearInterval(timer)
      clearInterval(sampler)
      histogram.disable()
    },
  }
}
