/**
 * The Node event-loop monitor: a stall shows in its figures and in one warning naming the route that ran during it.
 * The stall is made by holding the thread; nothing here asserts how long anything took.
 */

import { afterEach, describe, expect, it, vi } from 'vitest'
import { createEventLoopMonitor, type NodeEventLoopMonitor } from '../../../src/adapters/node'
import { createRecordingLogger } from '../../helpers/logger'

let monitor: NodeEventLoopMonitor | undefined
afterEach(() => monitor?.stop())

/** Holds the event loop, as a synchronous parse of hostile input would. */
const holdTheLoop = (ms: number) => {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // busy
  }
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 20))

describe('event-loop monitor', () => {
  it('reports a stall in its figures and warns once for the window, naming the route that ran', async () => {
    const log = createRecordingLogger()
    monitor = createEventLoopMonitor({ logger: log.logger, thresholdMs: 100, windowMs: 1_000 })
    await tick()
    const done = monitor.track('POST /responses')
    holdTheLoop(300)
    done()
    await tick()
    expect(monitor.read()).toMatchObject({ isSlow: true, thresholdMs: 100, windowSeconds: 1 })
    expect(monitor.read().maxMs).toBeGreaterThanOrEqual(100)
    await vi.waitFor(() => expect(log.entries.filter((entry) => entry.level === 'warn')).toHaveLength(1), { timeout: 5_000, interval: 50 })
    const [warning] = log.entries
    expect(warning!.message).toMatch(/^the event loop stalled: p99 delay [\d.]+ ms, longest [\d.]+ ms over the last 1 s; every request waited$/)
    expect(warning!.fields).toMatchObject({ windowSeconds: 1, routes: ['POST /responses'] })
  })

  it('names no route that ended before the stall', async () => {
    const log = createRecordingLogger()
    monitor = createEventLoopMonitor({ logger: log.logger, thresholdMs: 100, windowMs: 1_000 })
    monitor.track('GET /models')()
    await new Promise((resolve) => setTimeout(resolve, 250))
    holdTheLoop(300)
    await vi.waitFor(() => expect(log.entries).toHaveLength(1), { timeout: 5_000, interval: 50 })
    expect(log.entries[0]!.fields?.routes).toBeUndefined()
  })
})
