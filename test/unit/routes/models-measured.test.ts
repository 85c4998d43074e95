/**
 * What the catalog answers from the gateway's measurements and the catalog's facts: the speed sorts of `GET /models`,
 * the endpoints' `latency_last_30m` / `throughput_last_30m`, and the `distillable` filter. Figures are fed as another
 * gateway process would: published to the shared store by a performance component, merged by the gateway under test.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { silentLogger } from '../../../src/core/logger'
import { createEndpointPerformance, endpointKey } from '../../../src/engine/endpoint-performance'
import type { ModelEntry } from '../../../src/engine/models'
import { createEndpointPerformanceRepository, ENDPOINT_PERFORMANCE } from '../../../src/repositories/endpoint-performance'
import type { StorageDriver } from '../../../src/storage/contract'
import { memoryStorage } from '../../../src/storage/memory'
import { createTestGateway, type TestGateway } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'

// Never called: the catalog only describes them.
const host = (displayName: string) => ({ api: 'openai-chat', baseURL: 'http://127.0.0.1:9/v1', displayName, apiKey: 'test-key' }) as const
const PROVIDERS = { 'host-a': host('Host A'), 'host-b': host('Host B') }

const endpoint = (provider: string, model: string, facts: Partial<ModelEntry['endpoints'][number]> = {}) => ({
  provider,
  model,
  contextLength: 8_192,
  pricing: { prompt: 0.000001, completion: 0.000002 },
  ...facts,
})

const MODELS: ModelEntry[] = [
  { slug: 'speed/unmeasured-first', name: 'Unmeasured first', endpoints: [endpoint('host-a', 'unmeasured-first')] },
  // Slow to start, quick to write.
  { slug: 'speed/steady', name: 'Steady', endpoints: [endpoint('host-a', 'steady', { isDistillable: true })] },
  // Its first endpoint is unmeasured; its second starts quickly and writes slowly.
  { slug: 'speed/snappy', name: 'Snappy', endpoints: [endpoint('host-a', 'snappy-a', { isDistillable: false }), endpoint('host-b', 'snappy-b', { isDistillable: false })] },
  { slug: 'speed/unmeasured-last', name: 'Unmeasured last', endpoints: [endpoint('host-b', 'unmeasured-last')] },
]

/** Samples as another process measured them: median latency (ms) and throughput (tokens per second). */
const MEASURED = [
  { provider: 'host-a', model: 'steady', latencyMs: 800, tokensPerSecond: 400 },
  { provider: 'host-b', model: 'snappy-b', latencyMs: 100, tokensPerSecond: 40 },
]

const harnesses: TestGateway[] = []
afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.close()
})

/** A gateway whose store already holds another process's figures, resolved once its own merge has read them. */
const measuredGateway = async () => {
  const store = memoryStorage()
  const other = createEndpointPerformance({ now: Date.now, halfLifeMs: 300_000, mergeEveryMs: false, logger: silentLogger, repository: createEndpointPerformanceRepository(store) })
  for (const { provider, model, latencyMs, tokensPerSecond } of MEASURED) {
    for (let count = 0; count < 5; count++) other.record(endpointKey('shared', provider, model), { latencyMs, tokensPerSecond })
  }
  await other.merge()
  let onRead!: () => void
  const read = new Promise<void>((resolve) => (onRead = resolve))
  const watched: StorageDriver = new Proxy(store, {
    get: (target, property) => {
      if (property !== 'list') return Reflect.get(target, property)
      return async (...args: Parameters<StorageDriver['list']>) => {
        const page = await target.list(...args)
        if (args[0] === ENDPOINT_PERFORMANCE) onRead()
        return page
      }
    },
  })
  const harness = await createTestGateway({ logger: false, providers: PROVIDERS, models: MODELS, storage: watched, endpointPerformance: { mergeIntervalMs: 10 } })
  harnesses.push(harness)
  await read
  // The merge that listed them takes them in before its next turn.
  await new Promise((resolve) => setImmediate(resolve))
  return harness
}

const get = async (harness: TestGateway, path: string) => {
  const response = await harness.call('GET', path, { key: null })
  expect(response.status, path).toBe(200)
  return readJson(response)
}

const ids = (body: { data: { id: string }[] }) => body.data.map((model) => model.id)

describe('GET /models speed sorts', () => {
  it('order models by their best measured endpoint, the unmeasured after them in catalog order', async () => {
    const harness = await measuredGateway()
    expect(ids(await get(harness, '/models?q=speed/&sort=latency-low-to-high'))).toEqual(['speed/snappy', 'speed/steady', 'speed/unmeasured-first', 'speed/unmeasured-last'])
    expect(ids(await get(harness, '/models?q=speed/&sort=throughput-high-to-low'))).toEqual(['speed/steady', 'speed/snappy', 'speed/unmeasured-first', 'speed/unmeasured-last'])
  })

  it('keep catalog order while nothing is measured', async () => {
    const harness = await createTestGateway({ logger: false, providers: PROVIDERS, models: MODELS })
    harnesses.push(harness)
    const catalogOrder = MODELS.map((model) => model.slug)
    expect(ids(await get(harness, '/models?q=speed/&sort=latency-low-to-high'))).toEqual(catalogOrder)
    expect(ids(await get(harness, '/models?q=speed/&sort=throughput-high-to-low'))).toEqual(catalogOrder)
  })
})

describe('GET /models/{author}/{slug}/endpoints figures', () => {
  it('shows each measured endpoint its latency and throughput percentiles, null for the unmeasured', async () => {
    const harness = await measuredGateway()
    const { data } = await get(harness, '/models/speed/snappy/endpoints')
    const [unmeasured, measured] = data.endpoints
    expect(unmeasured).toMatchObject({ tag: 'host-a', latency_last_30m: null, throughput_last_30m: null, uptime_last_30m: null })
    expect(measured.tag).toBe('host-b')
    // Within a bucket of the samples (the sketch's resolution).
    expect(measured.latency_last_30m.p50).toBeGreaterThan(100 / 1.25)
    expect(measured.latency_last_30m.p50).toBeLessThan(100 * 1.25)
    expect(measured.throughput_last_30m.p50).toBeGreaterThan(40 / 1.25)
    expect(measured.throughput_last_30m.p50).toBeLessThan(40 * 1.25)
    expect(Object.keys(measured.latency_last_30m)).toEqual(['p50', 'p75', 'p90', 'p99'])
  })
})

describe('GET /models?distillable', () => {
  it('keeps the models whose terms allow distillation (true) or leaves them out (false)', async () => {
    const harness = await createTestGateway({ logger: false, providers: PROVIDERS, models: MODELS })
    harnesses.push(harness)
    expect(ids(await get(harness, '/models?q=speed/&distillable=true'))).toEqual(['speed/steady'])
    expect(ids(await get(harness, '/models?q=speed/&distillable=false'))).toEqual(['speed/unmeasured-first', 'speed/snappy', 'speed/unmeasured-last'])
    // The built-in first-party models' terms forbid it.
    expect(ids(await get(harness, '/models?distillable=true&model_authors=openai,anthropic,google'))).toEqual([])
    const refused = await harness.call('GET', '/models?distillable=yes', { key: null })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toEqual({ error: { code: 400, message: 'query.distillable: must be true or false' } })
  })
})
