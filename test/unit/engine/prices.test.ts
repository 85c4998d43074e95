/**
 * Price overrides and refreshed prices: partial overrides by slug and endpoint, configured at start or
 * reloaded from a document (a loader or a loopback URL), reaching billing and `GET /models` (with a new
 * ETag), and a bad document leaving the previous prices in place.
 */

import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Logger } from '../../../src/core/logger'
import { createGateway } from '../../../src/gateway/gateway'
import { applyPriceOverrides, BUILT_IN_MODELS, UnknownPriceTargetError, type ModelEntry } from '../../../src/engine/models'
import { memoryStorage } from '../../../src/storage/memory'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import { fixture, startUpstream, type Upstream, type UpstreamReply } from '../../helpers/upstream'

const CLAUDE = 'anthropic/claude-sonnet-4.5'
const LLAMA = 'meta-llama/llama-3.3-70b-instruct'

interface LogEntry {
  level: string
  message: string
  fields?: Record<string, unknown>
}
const recordingLogger = () => {
  const entries: LogEntry[] = []
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) => void entries.push({ level, message, ...(fields ? { fields } : {}) })
  const logger: Logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') }
  return { logger, entries }
}

const pricingOf = (entries: readonly ModelEntry[], slug: string, provider: string) =>
  entries.find((entry) => entry.slug === slug)!.endpoints.find((endpoint) => endpoint.provider === provider)!.pricing

describe('applyPriceOverrides', () => {
  it('changes only the prices given, on the endpoint given, and copies instead of changing the catalog', () => {
    const before = structuredClone(pricingOf(BUILT_IN_MODELS, LLAMA, 'together'))
    const after = applyPriceOverrides(BUILT_IN_MODELS, [{ model: LLAMA, provider: 'groq', pricing: { prompt: 0.0000005, request: 0.001 } }])
    expect(pricingOf(after, LLAMA, 'groq')).toEqual({ ...pricingOf(BUILT_IN_MODELS, LLAMA, 'groq'), prompt: 0.0000005, request: 0.001 })
    expect(pricingOf(after, LLAMA, 'together')).toEqual(before)
    expect(pricingOf(BUILT_IN_MODELS, LLAMA, 'groq').prompt).toBe(5.9e-7)
    expect(after.map((entry) => entry.slug)).toEqual(BUILT_IN_MODELS.map((entry) => entry.slug))
  })

  it('overrides every endpoint of the model without a provider, later overrides winning, and clears an optional price with null', () => {
    const after = applyPriceOverrides(BUILT_IN_MODELS, [
      { model: LLAMA, pricing: { completion: 0.000001 } },
      { model: LLAMA, provider: 'deepinfra', pricing: { completion: 0.000002 } },
      { model: CLAUDE, pricing: { cacheWritePrompt: null, cacheWrite1hPrompt: null, cachedPrompt: null, webSearch: null, image: 0.04 } },
    ])
    const llama = after.find((entry) => entry.slug === LLAMA)!
    expect(llama.endpoints.map((endpoint) => [endpoint.provider, endpoint.pricing.completion])).toEqual([
      ['deepinfra', 0.000002],
      ['groq', 0.000001],
      ['together', 0.000001],
      ['fireworks', 0.000001],
    ])
    expect(pricingOf(after, CLAUDE, 'anthropic')).toEqual({ prompt: 0.000003, completion: 0.000015, image: 0.04 })
  })

  it('refuses an override of a model or endpoint the catalog lacks, naming it', () => {
    expect(() => applyPriceOverrides(BUILT_IN_MODELS, [{ model: 'acme/nothing', pricing: { prompt: 0 } }])).toThrow(
      new UnknownPriceTargetError('prices[0].model', 'no model "acme/nothing" in the catalog'),
    )
    expect(() => applyPriceOverrides(BUILT_IN_MODELS, [{ model: CLAUDE, pricing: { prompt: 0 } }, { model: CLAUDE, provider: 'groq', pricing: { prompt: 0 } }])).toThrow(
      'prices[1].provider: model "anthropic/claude-sonnet-4.5" has no endpoint on provider "groq"',
    )
  })
})

// The Anthropic fixture: 14 fresh and 2048 cache-read input tokens, 38 output tokens.
const claudeReply = (): UpstreamReply => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic', 'text.json') })
const costAt = (prompt: number, cachedPrompt: number, completion: number) => 14 * prompt + 2048 * cachedPrompt + 38 * completion

let harness: ResponsesHarness | undefined
let priceServer: Upstream | undefined
afterEach(async () => {
  await harness?.close()
  await priceServer?.close()
  harness = undefined
  priceServer = undefined
  vi.useRealTimers()
})

const getModels = async (gateway: ResponsesHarness['gateway']) => {
  const response = await gateway.fetch(new Request('http://gateway.test/api/v1/models'))
  const body = await response.json()
  return { etag: response.headers.get('etag')!, claude: body.data.find((model: { id: string }) => model.id === CLAUDE) }
}

describe('configured price overrides (createGateway prices)', () => {
  it('price requests and GET /models without restating the entry', async () => {
    harness = await createResponsesHarness({ anthropic: {} }, { prices: [{ model: CLAUDE, pricing: { prompt: 0.000002, cachedPrompt: 2e-7 } }] })
    harness.upstreams.anthropic!.setHandler(claudeReply)
    const answer = await (await harness.post({ model: CLAUDE, input: 'Capital of France?' })).json()
    expect(answer.usage.cost).toBeCloseTo(costAt(0.000002, 2e-7, 0.000015), 12)
    const { claude } = await getModels(harness.gateway)
    expect(claude.pricing).toEqual({ prompt: '0.000002', completion: '0.000015', input_cache_read: '0.0000002', input_cache_write: '0.00000375', web_search: '0.01' })
  })

  it('refuse an override naming an unknown model, or an invalid price, at start', () => {
    expect(() => createGateway({ storage: memoryStorage(), logger: false, prices: [{ model: 'acme/nothing', pricing: { prompt: 0 } }] })).toThrow(
      'modelgate: options.prices[0].model: no model "acme/nothing" in the catalog',
    )
    expect(() => createGateway({ storage: memoryStorage(), logger: false, prices: [{ model: CLAUDE, pricing: { prompt: -1 } }] })).toThrow(
      'options.prices.0.pricing.prompt: must not be negative',
    )
    expect(() => createGateway({ storage: memoryStorage(), logger: false, prices: [{ model: CLAUDE, pricing: {} }] })).toThrow('options.prices.0.pricing: must set at least one price')
    expect(() => createGateway({ storage: memoryStorage(), logger: false, prices: [{ model: CLAUDE, pricing: { input: 1 } as never }] })).toThrow(
      'options.prices.0.pricing.input: is not a price field',
    )
  })

  it('a configured model can be priced by an override, as a built-in can', async () => {
    harness = await createResponsesHarness(
      { 'my-vllm': { api: 'openai-chat' } },
      {
        models: [{ slug: 'acme/local', name: 'Local', endpoints: [{ provider: 'my-vllm', model: 'local', contextLength: 8192, pricing: { prompt: 0, completion: 0 } }] }],
        prices: [{ model: 'acme/local', provider: 'my-vllm', pricing: { request: 0.002 } }],
      },
    )
    const response = await harness.gateway.fetch(new Request('http://gateway.test/api/v1/models/acme/local/endpoints'))
    expect((await response.json()).data.endpoints[0].pricing).toEqual({ prompt: '0', completion: '0', request: '0.002' })
  })
})

describe('refreshed prices (priceSource)', () => {
  it('apply to billing and to GET /models, whose ETag changes, over the configured overrides', async () => {
    let document: unknown = { prices: [{ model: CLAUDE, provider: 'anthropic', pricing: { completion: 0.00001 } }] }
    const { logger, entries } = recordingLogger()
    harness = await createResponsesHarness(
      { anthropic: {} },
      { logger, prices: [{ model: CLAUDE, pricing: { prompt: 0.000002 } }], priceSource: { load: async () => document, label: 'test document' } },
    )
    harness.upstreams.anthropic!.setHandler(claudeReply)
    expect(await harness.gateway.prices.ready).toEqual({ ok: true, overrides: 1, revision: 1 })
    const first = await getModels(harness.gateway)
    expect(first.claude.pricing).toMatchObject({ prompt: '0.000002', completion: '0.00001' })
    const answer = await (await harness.post({ model: CLAUDE, input: 'Capital of France?' })).json()
    expect(answer.usage.cost).toBeCloseTo(costAt(0.000002, 3e-7, 0.00001), 12)

    document = { prices: [{ model: CLAUDE, pricing: { prompt: 0.000001 } }] }
    expect(await harness.gateway.prices.reload()).toEqual({ ok: true, overrides: 1, revision: 2 })
    const second = await getModels(harness.gateway)
    // The new document replaces the previous one: completion is back to the catalog's.
    expect(second.claude.pricing).toMatchObject({ prompt: '0.000001', completion: '0.000015' })
    expect(second.etag).not.toBe(first.etag)
    const cached = await harness.gateway.fetch(new Request('http://gateway.test/api/v1/models', { headers: { 'if-none-match': first.etag } }))
    expect(cached.status).toBe(200)
    expect(entries.filter((entry) => entry.message === 'prices refreshed').map((entry) => entry.fields)).toEqual([
      { source: 'test document', overrides: 1, revision: 1 },
      { source: 'test document', overrides: 1, revision: 2 },
    ])
  })

  it('keep the previous prices when a document is invalid, names a model the catalog lacks, or cannot be read', async () => {
    let document: unknown = { prices: [{ model: CLAUDE, pricing: { prompt: 0.000001 } }] }
    const { logger, entries } = recordingLogger()
    harness = await createResponsesHarness({ anthropic: {} }, { logger, priceSource: { load: async () => (document instanceof Error ? Promise.reject(document) : document) } })
    await harness.gateway.prices.ready
    const good = await getModels(harness.gateway)

    const failures: Array<[unknown, string]> = [
      [{ prices: [{ model: CLAUDE, pricing: { prompt: 'sk-live-secret' } }] }, 'document.prices.0.pricing.prompt: must be a number'],
      [{ prices: [{ model: 'acme/nothing', pricing: { prompt: 0 } }] }, 'document.prices[0].model: no model "acme/nothing" in the catalog'],
      [{ models: [] }, 'document.prices: is required'],
      [{ prices: [], models: [] }, 'document.models: is not a field of a price document (prices)'],
      [new Error('ENOENT sk-live-secret'), 'the loader failed'],
    ]
    for (const [next, reason] of failures) {
      document = next
      expect(await harness.gateway.prices.reload()).toEqual({ ok: false, error: reason })
      const now = await getModels(harness.gateway)
      expect(now.etag).toBe(good.etag)
      expect(now.claude.pricing.prompt).toBe('0.000001')
    }
    const warnings = entries.filter((entry) => entry.level === 'warn')
    expect(warnings.map((entry) => entry.fields?.reason)).toEqual(failures.map(([, reason]) => reason))
    expect(warnings.every((entry) => entry.message === 'price refresh failed; the previous prices stay' && entry.fields?.source === 'loader')).toBe(true)
    expect(JSON.stringify(entries)).not.toContain('sk-live-secret')
  })

  it('reload on their interval', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
    const load = vi.fn(async () => ({ prices: [] }))
    harness = await createResponsesHarness({ anthropic: {} }, { priceSource: { load, refreshSeconds: 60 } })
    await harness.gateway.prices.ready
    expect(load).toHaveBeenCalledTimes(1)
    await vi.advanceTimersByTimeAsync(60_000)
    await harness.gateway.prices.reload()
    expect(load).toHaveBeenCalledTimes(3)
    await harness.close()
    harness = undefined
    await vi.advanceTimersByTimeAsync(600_000)
    expect(load).toHaveBeenCalledTimes(3)
  })

  it('say so when none is configured', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    expect(await harness.gateway.prices.reload()).toEqual({ ok: false, error: 'no priceSource is configured' })
  })
})

describe('a price document served over HTTP(S)', () => {
  const serveDocument = async (reply: UpstreamReply) => {
    priceServer = await startUpstream(() => reply)
    return priceServer
  }
  const json = (value: unknown): UpstreamReply => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) })

  it('is fetched, validated and applied; the query (where a token may sit) never reaches the log', async () => {
    const server = await serveDocument(json({ prices: [{ model: CLAUDE, pricing: { prompt: 0.000001 } }] }))
    const { logger, entries } = recordingLogger()
    harness = await createResponsesHarness({ anthropic: {} }, { logger, priceSource: { url: `${server.url}/prices.json?token=sk-price-secret` } })
    expect(await harness.gateway.prices.ready).toEqual({ ok: true, overrides: 1, revision: 1 })
    expect((await getModels(harness.gateway)).claude.pricing.prompt).toBe('0.000001')
    expect(server.requests.map((request) => [request.method, request.url])).toEqual([['GET', '/prices.json?token=sk-price-secret']])
    expect(entries.find((entry) => entry.message === 'prices refreshed')?.fields?.source).toBe(`${server.url}/prices.json`)
    expect(JSON.stringify(entries)).not.toContain('sk-price-secret')
  })

  it.each<[string, UpstreamReply, Record<string, number>, string]>([
    ['a redirect, which is not followed', { status: 302, headers: { location: 'http://127.0.0.1:9/elsewhere' } }, {}, 'answered 302, a redirect, which is not followed'],
    ['an error status', { status: 503, body: 'busy' }, {}, 'answered 503'],
    ['a document over the size cap', json({ prices: [{ model: CLAUDE, pricing: { prompt: 0.000001 } }], padding: 'x'.repeat(4096) }), { maxBytes: 2048 }, 'the document is larger than 2048 bytes'],
    ['an answer that is not JSON', { status: 200, body: '<html>' }, {}, 'the answer is not JSON'],
    ['no answer in time', { shouldHang: true }, { timeoutMs: 200 }, 'no answer within 200 ms'],
  ])('is refused on %s, the catalog prices staying', async (_case, reply, bounds, reason) => {
    const server = await serveDocument(reply)
    harness = await createResponsesHarness({ anthropic: {} }, { logger: false, priceSource: { url: `${server.url}/prices.json`, ...bounds } })
    expect(await harness.gateway.prices.ready).toEqual({ ok: false, error: reason })
    expect((await getModels(harness.gateway)).claude.pricing.prompt).toBe('0.000003')
    expect(server.requests).toHaveLength(1)
  })

  it('must be https, or http on a loopback host, and either a URL or a loader', () => {
    const make = (priceSource: unknown) => () => createGateway({ storage: memoryStorage(), logger: false, priceSource: priceSource as never })
    expect(make({ url: 'http://prices.example.test/p.json' })).toThrow('options.priceSource.url: must be an https:// URL (http:// only on a loopback host)')
    expect(make({ url: 'file:///etc/prices.json' })).toThrow('options.priceSource.url: must be an https:// URL')
    expect(make({})).toThrow('options.priceSource: must have either url or load')
    expect(make({ url: 'https://prices.example.test/p.json', load: async () => ({}) })).toThrow('options.priceSource: must have either url or load')
  })
})
