/**
 * Routing by measured speed against scripted upstreams that answer at different speeds: `provider.sort` latency and
 * throughput (string and object forms), `preferred_max_latency` / `preferred_min_throughput` (soft), `:nitro`, the
 * workspace's `default_provider_sort`, and two gateways sharing what they measured through one store.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { StorageDriver } from '../../../src/storage/contract'
import { memoryStorage } from '../../../src/storage/memory'
import { ENDPOINT_PERFORMANCE } from '../../../src/repositories/endpoint-performance'
import { createTestGateway, scriptedProvider, type ScriptedAnswer, type TestGateway, type TestGatewayOptions } from '../../../src/testing'

/** Slow to the first token (150 ms), then a burst of 20 tokens. */
const slowStart: ScriptedAnswer = [{ type: 'wait', ms: 150 }, { type: 'text', text: 'slow start' }, { type: 'usage', inputTokens: 5, outputTokens: 20 }]
/** Quick to answer (5 ms), 20 tokens. */
const quick: ScriptedAnswer = [{ type: 'wait', ms: 5 }, { type: 'text', text: 'quick' }, { type: 'usage', inputTokens: 5, outputTokens: 20 }]

/** A stream whose first token comes at once, then 20 tokens over 200 ms: low latency, about 100 tokens/s. */
const eagerButSlow: ScriptedAnswer = [
  { type: 'text', text: 'a' },
  { type: 'wait', ms: 200 },
  { type: 'text', text: 'b' },
  { type: 'usage', inputTokens: 5, outputTokens: 20 },
]
/** A stream whose first token comes after 120 ms, then 200 tokens over 60 ms: high latency, thousands of tokens/s. */
const lateButFast: ScriptedAnswer = [
  { type: 'wait', ms: 120 },
  { type: 'text', text: 'a' },
  { type: 'wait', ms: 60 },
  { type: 'text', text: 'b' },
  { type: 'usage', inputTokens: 5, outputTokens: 200 },
]

const harnesses: TestGateway[] = []
afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.close()
})

const gatewayWith = async (alpha: ScriptedAnswer, beta: ScriptedAnswer, options: TestGatewayOptions = {}) => {
  const harness = await createTestGateway({ providers: { alpha: scriptedProvider({ reply: alpha }), beta: scriptedProvider({ reply: beta }) }, ...options })
  harnesses.push(harness)
  return harness
}

const ask = async (harness: TestGateway, body: Record<string, unknown>) => {
  const response = await harness.responses({ input: 'hi', ...body }, { headers: { 'x-service-metadata': 'enabled' } })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`${response.status} ${text}`)
  if (body.stream) {
    const done = text.split('\n').filter((line) => line.startsWith('data: {')).map((line) => JSON.parse(line.slice(6))).find((event) => event.type === 'response.completed')
    return done.response
  }
  return JSON.parse(text)
}

const servedBy = (answer: { service_metadata: { endpoints: { available: Array<{ provider: string; selected: boolean }> } } }) =>
  answer.service_metadata.endpoints.available.find((endpoint) => endpoint.selected)!.provider

/** One request through each provider, so both are measured. */
const warmUp = async (harness: TestGateway, stream = false) => {
  await ask(harness, { provider: { only: ['alpha'] }, stream })
  await ask(harness, { provider: { only: ['beta'] }, stream })
}

describe('sort by measured latency', () => {
  it('tries each unmeasured endpoint once, then picks the faster one', async () => {
    const harness = await gatewayWith(slowStart, quick)
    const sort = { provider: { sort: 'latency' } }
    // Catalog order among the unmeasured: alpha first; then beta, still unmeasured, goes first to be measured.
    expect(servedBy(await ask(harness, sort))).toBe('alpha')
    expect(servedBy(await ask(harness, sort))).toBe('beta')
    const answer = await ask(harness, sort)
    expect(servedBy(answer)).toBe('beta')
    const [first, second] = answer.service_metadata.endpoints.available
    expect(first.provider).toBe('beta')
    expect(second.performance.latency.p50).toBeGreaterThan(0.1)
    expect(first.performance.latency.p50).toBeLessThan(second.performance.latency.p50)
    // Without a sort, price (here the catalog's order) decides.
    expect(servedBy(await ask(harness, {}))).toBe('alpha')
  })

  it('takes the object form, across models with partition none', async () => {
    const harness = await gatewayWith(slowStart, quick)
    await warmUp(harness)
    expect(servedBy(await ask(harness, { provider: { sort: { by: 'latency', partition: 'none' } } }))).toBe('beta')
    expect(servedBy(await ask(harness, { provider: { sort: { by: 'latency' } } }))).toBe('beta')
  })

  it('is measured to the first token of a stream, apart from throughput', async () => {
    const harness = await gatewayWith(eagerButSlow, lateButFast)
    await warmUp(harness, true)
    expect(servedBy(await ask(harness, { provider: { sort: 'latency' }, stream: true }))).toBe('alpha')
    const answer = await ask(harness, { provider: { sort: 'throughput' }, stream: true })
    expect(servedBy(answer)).toBe('beta')
    const figures = Object.fromEntries(answer.service_metadata.endpoints.available.map((endpoint: { provider: string; performance: unknown }) => [endpoint.provider, endpoint.performance]))
    expect(figures.alpha.throughput.p50).toBeLessThan(200)
    expect(figures.beta.throughput.p50).toBeGreaterThan(1000)
  })
})

describe('sort by measured throughput', () => {
  it('picks the endpoint with more output tokens per second, as :nitro does', async () => {
    const harness = await gatewayWith(slowStart, quick)
    await warmUp(harness)
    expect(servedBy(await ask(harness, { provider: { sort: 'throughput' } }))).toBe('beta')
    expect(servedBy(await ask(harness, { provider: { sort: { by: 'throughput', partition: 'model' } } }))).toBe('beta')
    const nitro = await ask(harness, { model: 'test/model:nitro' })
    expect(servedBy(nitro)).toBe('beta')
    expect(nitro.model).toBe('test/model')
  })
})

describe('preferred_max_latency and preferred_min_throughput', () => {
  it('put endpoints that miss them last, without excluding them', async () => {
    const harness = await gatewayWith(slowStart, quick)
    await warmUp(harness)
    for (const provider of [
      { preferred_max_latency: 0.1 },
      { preferred_max_latency: { p90: 0.1 } },
      { preferred_min_throughput: 500 },
      { preferred_min_throughput: { p50: 500, p99: 400 } },
    ]) {
      const answer = await ask(harness, { provider })
      expect(servedBy(answer)).toBe('beta')
      expect(answer.service_metadata.endpoints.available.map((endpoint: { provider: string }) => endpoint.provider)).toEqual(['beta', 'alpha'])
    }
    // Met by both: price order stands.
    expect(servedBy(await ask(harness, { provider: { preferred_max_latency: 10 } }))).toBe('alpha')
  })

  it('still serve from the endpoint that misses them when the other fails', async () => {
    let betaAnswer: ScriptedAnswer = quick
    const harness = await createTestGateway({ providers: { alpha: scriptedProvider({ reply: slowStart }), beta: scriptedProvider({ reply: () => betaAnswer }) } })
    harnesses.push(harness)
    await warmUp(harness)
    betaAnswer = [{ type: 'http_error', status: 503 }]
    const answer = await ask(harness, { provider: { preferred_max_latency: 0.1 } })
    expect(servedBy(answer)).toBe('alpha')
    expect(answer.service_metadata.attempt).toBe(2)
  })
})

describe("the workspace's default_provider_sort", () => {
  it('orders requests that set no sort, and a request sort wins over it', async () => {
    const harness = await gatewayWith(slowStart, quick)
    await warmUp(harness)
    const patched = await harness.call('PATCH', `/workspaces/${harness.defaultWorkspaceId}`, { json: { default_provider_sort: 'latency' } })
    expect(patched.status).toBe(200)
    expect(servedBy(await ask(harness, {}))).toBe('beta')
    expect(servedBy(await ask(harness, { provider: { sort: 'price' } }))).toBe('alpha')
  })

  it('refuses exacto, which has nothing to route on', async () => {
    const harness = await gatewayWith(slowStart, quick)
    const patched = await harness.call('PATCH', `/workspaces/${harness.defaultWorkspaceId}`, { json: { default_provider_sort: 'exacto' } })
    expect(patched.status).toBe(400)
    expect((await patched.json()).error.message).toBe(
      'body.default_provider_sort: must be price, throughput or latency: the tool-calling quality sort is not supported (the gateway has no figures to route on)',
    )
  })
})

describe('two gateways sharing one store', () => {
  it('route on what the other measured, after a merge', async () => {
    const store = memoryStorage()
    // The store outlives each gateway: closed once, by the test.
    const shared: StorageDriver = new Proxy(store, { get: (target, property) => (property === 'close' ? async () => {} : Reflect.get(target, property)) })
    // The test goes on once the measuring gateway has published its figures after its warm-up, and a merge of the routing
    // gateway has read them since.
    let isWarm = false
    let isPublished = false
    let onFiguresRead: () => void
    const figuresRead = new Promise<void>((resolve) => (onFiguresRead = resolve))
    const isPerformanceWrite = (property: string | symbol) => property === 'create' || property === 'update'
    const measuringStore: StorageDriver = new Proxy(shared, {
      get: (target, property) => {
        const value = Reflect.get(target, property)
        if (!isPerformanceWrite(property)) return value
        return async (collection: string, ...rest: unknown[]) => {
          const wasWarm = isWarm
          const result = await (value as (...args: unknown[]) => Promise<unknown>).call(target, collection, ...rest)
          if (collection === ENDPOINT_PERFORMANCE && wasWarm) isPublished = true
          return result
        }
      },
    })
    const routingStore: StorageDriver = new Proxy(shared, {
      get: (target, property) => {
        if (property !== 'list') return Reflect.get(target, property)
        return async (...args: Parameters<StorageDriver['list']>) => {
          const wasPublished = isPublished
          const page = await target.list(...args)
          if (args[0] === ENDPOINT_PERFORMANCE && wasPublished) onFiguresRead()
          return page
        }
      },
    })
    const options = { endpointPerformance: { mergeIntervalMs: 20 } }
    const measuring = await gatewayWith(slowStart, quick, { ...options, storage: measuringStore })
    const routing = await gatewayWith(slowStart, quick, { ...options, storage: routingStore })
    await warmUp(measuring)
    isWarm = true
    await figuresRead
    // The merge that read them takes them in before its next turn.
    await new Promise((resolve) => setImmediate(resolve))
    // The routing gateway measured nothing itself: without the other's figures it would try alpha, unmeasured, first.
    const answer = await ask(routing, { provider: { sort: 'latency' } })
    expect(servedBy(answer)).toBe('beta')
    expect(answer.service_metadata.endpoints.available.every((endpoint: { performance: unknown }) => endpoint.performance !== null)).toBe(true)
    for (const harness of harnesses.splice(0)) await harness.close()
    await store.close()
  })
})
