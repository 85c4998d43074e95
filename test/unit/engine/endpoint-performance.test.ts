/** Measured endpoint performance: decayed percentiles, forgetting, and the merge of processes through one store. */

import { describe, expect, it } from 'vitest'
import { silentLogger } from '../../../src/core/logger'
import { createEndpointPerformance, endpointKey, performanceSample } from '../../../src/engine/endpoint-performance'
import { createEndpointPerformanceRepository } from '../../../src/repositories/endpoint-performance'
import { memoryStorage } from '../../../src/storage/memory'

const HALF_LIFE_MS = 60_000
const KEY = endpointKey('shared', 'alpha', 'alpha-model')

const clock = () => {
  let time = Date.parse('2026-03-01T12:00:00Z')
  return { now: () => time, advance: (ms: number) => void (time += ms) }
}

const tracker = (now: () => number, repository?: ReturnType<typeof createEndpointPerformanceRepository>) =>
  createEndpointPerformance({ now, halfLifeMs: HALF_LIFE_MS, mergeEveryMs: false, logger: silentLogger, ...(repository ? { repository } : {}) })

describe('endpoint performance', () => {
  it('reads percentiles within a bucket (a quarter) of the samples', () => {
    const time = clock()
    const performance = tracker(time.now)
    for (let index = 1; index <= 100; index++) performance.record(KEY, { latencyMs: index * 10, tokensPerSecond: index })
    const figures = performance.figures(KEY)!
    expect(figures.latencyMs.p50).toBeGreaterThan(500 / 1.25)
    expect(figures.latencyMs.p50).toBeLessThan(500 * 1.25)
    expect(figures.latencyMs.p99).toBeGreaterThan(990 / 1.25)
    expect(figures.tokensPerSecond!.p90).toBeGreaterThan(90 / 1.25)
    expect(figures.tokensPerSecond!.p90).toBeLessThan(90 * 1.25)
  })

  it('follows recent traffic and forgets an endpoint whose samples decayed away', () => {
    const time = clock()
    const performance = tracker(time.now)
    for (let index = 0; index < 10; index++) performance.record(KEY, { latencyMs: 1000 })
    time.advance(5 * HALF_LIFE_MS)
    for (let index = 0; index < 10; index++) performance.record(KEY, { latencyMs: 100 })
    // The old second-long samples weigh 1/32 of the new ones: the median is the new latency.
    expect(performance.figures(KEY)!.latencyMs.p50).toBeLessThan(125)
    time.advance(10 * HALF_LIFE_MS)
    expect(performance.figures(KEY)).toBeUndefined()
  })

  it('has no throughput without output tokens, and counts a burst over the whole attempt', () => {
    expect(performanceSample(200, 0, undefined)).toEqual({ latencyMs: 200 })
    expect(performanceSample(200, 0, 100)).toEqual({ latencyMs: 200, tokensPerSecond: 500 })
    expect(performanceSample(200, 1000, 100)).toEqual({ latencyMs: 200, tokensPerSecond: 100 })
  })

  it('merges the processes sharing a store, and drops a process gone for long', async () => {
    const time = clock()
    const store = memoryStorage()
    const repository = createEndpointPerformanceRepository(store)
    const first = tracker(time.now, repository)
    const second = tracker(time.now, repository)
    for (let index = 0; index < 5; index++) first.record(KEY, { latencyMs: 400, tokensPerSecond: 50 })
    expect(second.figures(KEY)).toBeUndefined()
    await first.merge()
    await second.merge()
    expect(second.figures(KEY)!.latencyMs.p50).toBeGreaterThan(400 / 1.25)
    expect(second.figures(KEY)!.tokensPerSecond!.p50).toBeLessThan(50 * 1.25)
    // The second process's own traffic weighs in with the first's.
    for (let index = 0; index < 15; index++) second.record(KEY, { latencyMs: 40 })
    expect(second.figures(KEY)!.latencyMs.p50).toBeLessThan(50)
    expect(second.figures(KEY)!.latencyMs.p90).toBeGreaterThan(300)
    // The first process stops writing: after ten half-lives its record goes from the store.
    time.advance(11 * HALF_LIFE_MS)
    await second.merge()
    expect((await repository.list()).map((record) => record.endpoints)).toHaveLength(1)
    await store.close()
  })
})
