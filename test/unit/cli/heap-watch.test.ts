import { getHeapStatistics } from 'node:v8'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { watchHeap } from '../../../src/cli/heap-watch'
import type { Logger } from '../../../src/core/logger'

const recordingLogger = () => {
  const warnings: Array<{ message: string; fields: unknown }> = []
  const logger: Logger = { debug() {}, info() {}, error() {}, warn: (message, fields) => warnings.push({ message, fields }) }
  return { logger, warnings }
}

afterEach(() => {
  vi.useRealTimers()
})

describe('the runner’s heap watch', () => {
  it('warns once when the heap crosses the threshold, and again only after it fell back and climbed again', () => {
    vi.useFakeTimers()
    const { logger, warnings } = recordingLogger()
    const limit = 4096 * 1024 * 1024
    let used = 0.5 * limit
    const stop = watchHeap(logger, { storage: 'file', intervalMs: 1_000, heapStatistics: () => ({ used_heap_size: used, heap_size_limit: limit }) })

    vi.advanceTimersByTime(1_000)
    expect(warnings).toHaveLength(0)
    used = 0.8 * limit
    vi.advanceTimersByTime(3_000)
    expect(warnings).toHaveLength(1)
    expect(warnings[0]!.message).toMatch(/^the heap is at 80 % of Node's limit; the file store keeps every record in memory/)
    expect(warnings[0]!.message).toContain('MODELGATE_LEDGER_RETENTION_DAYS')
    expect(warnings[0]!.fields).toEqual({ heapUsedMB: 3277, heapLimitMB: 4096, storage: 'file' })

    used = 0.7 * limit // below the threshold, not far enough to warn again
    vi.advanceTimersByTime(1_000)
    used = 0.8 * limit
    vi.advanceTimersByTime(1_000)
    expect(warnings).toHaveLength(1)
    used = 0.6 * limit
    vi.advanceTimersByTime(1_000)
    used = 0.9 * limit
    vi.advanceTimersByTime(1_000)
    expect(warnings).toHaveLength(2)

    stop()
    vi.advanceTimersByTime(10_000)
    expect(warnings).toHaveLength(2)
  })

  it('reads Node’s own heap figures by default', () => {
    vi.useFakeTimers()
    const { logger, warnings } = recordingLogger()
    const stop = watchHeap(logger, { storage: 'memory', intervalMs: 5, threshold: Number.MIN_VALUE })
    vi.advanceTimersByTime(5)
    stop()
    expect(warnings).toHaveLength(1)
    expect(warnings[0]!.fields).toMatchObject({
      heapLimitMB: Math.round(getHeapStatistics().heap_size_limit / (1024 * 1024)),
      storage: 'memory',
    })
  })
})
