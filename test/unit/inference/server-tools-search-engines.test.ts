/**
 * `service:web_search` through Firecrawl (`POST /v2/search`), Parallel (`POST /v1/search`) and Perplexity
 * (`POST /search`), each a loopback engine answering in its API's real shape (test/fixtures/search/): what the
 * gateway sends each one, what the model reads, what the client sees and pays, and what each engine refuses.
 */

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createTestGateway, readEvents, scriptedProvider, type ScriptedCall, type ScriptedReply, type TestGateway } from '../../../src/testing'
import { assertValidEventSequence } from '../../helpers/stream-events'
import { startUpstream, type Upstream, type UpstreamHandler } from '../../helpers/upstream'

const fixture = (name: string) => readFileSync(join(__dirname, '../../fixtures/search', name), 'utf8')
const KEY = 'search-key-7d1e9a3c5b2f4e6a8c0d'
const FIXTURE_OF: Record<string, string> = { '/v2/search': 'firecrawl-search.json', '/v1/search': 'parallel-search.json', '/search': 'perplexity-search.json' }
const byPath: UpstreamHandler = (request) => ({ headers: { 'content-type': 'application/json' }, body: fixture(FIXTURE_OF[request.url]!) })

let engine: Upstream
let testGateway: TestGateway | undefined
beforeAll(async () => {
  engine = await startUpstream(byPath)
})
afterAll(() => engine.close())
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
  engine.requests.length = 0
  engine.setHandler(byPath)
})

const searchCall = (query: string, callId = 'call_search') => ({ type: 'function_call' as const, name: 'service_web_search', arguments: JSON.stringify({ query }), callId })
const ANSWER = 'Brest has two high tides a day (https://tides.example.org/brest).'

const serve = async (replies: ScriptedReply[], webSearch: Record<string, unknown>) => {
  const model = scriptedProvider({ replies })
  testGateway = await createTestGateway({ providers: { scripted: model }, serverTools: { webSearch } })
  return model
}
const keyed = (extra: Record<string, unknown> = {}) => ({ apiKey: KEY, baseURL: engine.url, ...extra })
const whole = async (tools: unknown[]) => {
  const response = await testGateway!.responses({ input: 'Tides in Brest?', tools })
  expect(response.status).toBe(200)
  return response.json()
}
const resultsOf = (call: ScriptedCall) =>
  (call.input as Array<Record<string, unknown>>).filter((item) => item.type === 'function_call_output').map((item) => String(item.output))
const refused = async (tool: Record<string, unknown>, message: string) => {
  const response = await testGateway!.responses({ input: 'hi', tools: [tool] })
  expect(response.status).toBe(400)
  expect(await response.json()).toEqual({ error: { code: 400, message } })
}

describe('Firecrawl', () => {
  it('posts to /v2/search with the key as a bearer token, hosts for the domain list and the country', async () => {
    const model = await serve([[searchCall('tides in brest')], ANSWER], { firecrawl: keyed({ pricePerRequest: 0.002 }) })
    const body = await whole([{ type: 'service:web_search', parameters: { max_results: 3, allowed_domains: ['*.example.org/brest', 'sailing.example.net'], user_location: { type: 'approximate', country: 'fr' } } }])
    const [request] = engine.requests
    expect(request).toMatchObject({ method: 'POST', url: '/v2/search' })
    expect(request!.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(request!.json).toEqual({ query: 'tides in brest', limit: 3, includeDomains: ['example.org', 'sailing.example.net'], country: 'FR' })
    // Without a text size the model reads the descriptions; a path in the list is enforced on the results.
    expect(resultsOf(model.calls[1]!)[0]).toBe(
      'Results for "tides in brest":\n\n' +
        '[1] Brest tide times and tables\nURL: https://tides.example.org/brest\nHigh and low tide times for Brest, Finistère, for the next seven days.\n\n' +
        "[2] A sailor's guide to Brittany tides\nURL: https://sailing.example.net/guides/brittany-tides\nThe tidal range at Brest can exceed seven metres at spring tides.",
    )
    expect(body.output[0]).toMatchObject({ type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'tides in brest' } })
    expect(body.output[1].content[0].annotations).toEqual([expect.objectContaining({ type: 'url_citation', url: 'https://tides.example.org/brest' })])
    expect(body.usage.server_tool_use_details).toEqual({ tool_calls_requested: 1, tool_calls_executed: 1, web_search_requests: 1 })
    expect(body.usage.cost).toBeCloseTo(0.002, 12)
    expect(JSON.stringify(body)).not.toContain(KEY)
  })

  it('scrapes the results as markdown when a text size is asked for, cut at that size', async () => {
    const model = await serve([[searchCall('tides')], 'ok'], { firecrawl: keyed() })
    const body = await whole([{ type: 'service:web_search', parameters: { engine: 'firecrawl', max_characters: 120, excluded_domains: ['forum.example.com'] } }])
    expect(engine.requests[0]!.json).toEqual({ query: 'tides', limit: 5, excludeDomains: ['forum.example.com'], scrapeOptions: { formats: ['markdown'], onlyMainContent: true } })
    const [result] = resultsOf(model.calls[1]!)
    expect(result).toContain('# Brest tide times\n\nHigh tide 06:12')
    // A result without markdown falls back to its description.
    expect(result).toContain('The tidal range at Brest can exceed seven metres at spring tides.')
    // Firecrawl reports credits, not dollars: no price set, no cost.
    expect(body.usage.cost).toBe(0)
  })

  it('streams the search as a web_search_call', async () => {
    await serve([[searchCall('tides')], ANSWER], { firecrawl: keyed() })
    const events = await readEvents(await testGateway!.responses({ input: 'Tides?', tools: [{ type: 'service:web_search' }], stream: true }))
    assertValidEventSequence(events)
    expect(events.filter((event) => event.output_index === 0).map((event) => event.type)).toEqual([
      'response.output_item.added',
      'response.web_search_call.in_progress',
      'response.web_search_call.searching',
      'response.web_search_call.completed',
      'response.output_item.done',
    ])
    expect(events.at(-1)!.response.output[0].action.sources).toEqual([
      { type: 'url', url: 'https://tides.example.org/brest' },
      { type: 'url', url: 'https://sailing.example.net/guides/brittany-tides' },
    ])
  })
})

describe('Parallel', () => {
  it('posts one search query to /v1/search with its key, mode and advanced settings', async () => {
    const model = await serve([[searchCall('tides in brest')], ANSWER], { parallel: keyed({ pricePerRequest: 0.005 }) })
    const body = await whole([
      { type: 'service:web_search', parameters: { engine: 'parallel', mode: 'basic', max_results: 4, excluded_domains: ['forum.example.com/t'], search_context_size: 'low', user_location: { type: 'approximate', country: 'FR' } } },
    ])
    const [request] = engine.requests
    expect(request).toMatchObject({ method: 'POST', url: '/v1/search' })
    expect(request!.headers['x-api-key']).toBe(KEY)
    expect(request!.json).toEqual({
      search_queries: ['tides in brest'],
      mode: 'basic',
      advanced_settings: { max_results: 4, source_policy: { exclude_domains: ['forum.example.com'] }, excerpt_settings: { max_chars_per_result: 5_000 }, location: 'fr' },
    })
    expect(resultsOf(model.calls[1]!)[0]).toBe(
      'Results for "tides in brest":\n\n' +
        '[1] Brest tide times and tables\nURL: https://tides.example.org/brest\nPublished: 2025-02-27\nHigh tide 06:12 (6.9 m), low tide 12:31 (1.2 m). … High tide 18:40 (6.7 m).\n\n' +
        '[2] \nURL: https://sailing.example.net/guides/brittany-tides\nThe tidal range at Brest can exceed seven metres at spring tides.',
    )
    expect(body.usage.cost).toBeCloseTo(0.005, 12)
    expect(JSON.stringify(body)).not.toContain(KEY)
  })

  it('sends no mode when none is asked for, and an allow list as include_domains', async () => {
    await serve([[searchCall('tides')], 'ok'], { parallel: keyed() })
    await whole([{ type: 'service:web_search', parameters: { allowed_domains: ['tides.example.org'], max_characters: 800 } }])
    expect(engine.requests[0]!.json).toEqual({
      search_queries: ['tides'],
      advanced_settings: { max_results: 5, source_policy: { include_domains: ['tides.example.org'] }, excerpt_settings: { max_chars_per_result: 800 } },
    })
  })
})

describe('Perplexity', () => {
  it('posts to /search with the key as a bearer token, a domain filter, the country and a page size in tokens', async () => {
    const model = await serve([[searchCall('tides in brest')], ANSWER], { perplexity: keyed({ pricePerRequest: 0.005 }) })
    const body = await whole([
      { type: 'service:web_search', parameters: { engine: 'perplexity', max_results: 20, excluded_domains: ['forum.example.com', '*.spam.example'], max_characters: 1_001, user_location: { type: 'approximate', country: 'gb' } } },
    ])
    const [request] = engine.requests
    expect(request).toMatchObject({ method: 'POST', url: '/search' })
    expect(request!.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(request!.json).toEqual({ query: 'tides in brest', max_results: 20, search_domain_filter: ['-forum.example.com', '-spam.example'], country: 'GB', max_tokens_per_page: 251 })
    expect(resultsOf(model.calls[1]!)[0]).toContain('[1] Brest tide times and tables\nURL: https://tides.example.org/brest\nPublished: 2025-02-27\nBrest tide times.')
    expect(body.output[0].action.sources).toHaveLength(2)
    expect(body.usage.cost).toBeCloseTo(0.005, 12)
    expect(JSON.stringify(body)).not.toContain(KEY)
  })

  it('maps search_context_size to tokens per page and an allow list as it is', async () => {
    await serve([[searchCall('tides')], 'ok'], { perplexity: keyed() })
    await whole([{ type: 'service:web_search', parameters: { allowed_domains: ['tides.example.org'], search_context_size: 'high' } }])
    expect(engine.requests[0]!.json).toEqual({ query: 'tides', max_results: 5, search_domain_filter: ['tides.example.org'], max_tokens_per_page: 7_500 })
  })

  it('tells the model when the engine refuses the key, without quoting its answer', async () => {
    const model = await serve([[searchCall('tides')], 'Sorry.'], { perplexity: keyed() })
    engine.setHandler(() => ({ status: 401, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: { message: `bad key ${KEY}` } }) }))
    const body = await whole([{ type: 'service:web_search' }])
    expect(resultsOf(model.calls[1]!)).toEqual(['Error: the perplexity search engine answered HTTP 401'])
    expect(body.output[0]).toMatchObject({ type: 'web_search_call', status: 'failed' })
    expect(JSON.stringify(body)).not.toContain(KEY)
    expect(JSON.stringify(model.calls)).not.toContain(KEY)
  })

  it('tells the model when the answer is not in the API shape', async () => {
    const model = await serve([[searchCall('tides')], 'Sorry.'], { perplexity: keyed() })
    engine.setHandler(() => ({ headers: { 'content-type': 'application/json' }, body: '{"answer": "no results list"}' }))
    await whole([{ type: 'service:web_search' }])
    expect(resultsOf(model.calls[1]!)).toEqual(['Error: the perplexity search engine sent a malformed answer'])
  })
})

describe('what an engine cannot honour', () => {
  it('is refused with a 400 naming the field, before any call', async () => {
    const model = await serve([], { firecrawl: keyed(), parallel: keyed(), perplexity: keyed(), default: 'perplexity' })
    const tool = (parameters: Record<string, unknown>) => ({ type: 'service:web_search', parameters })
    await refused(tool({ engine: 'firecrawl', mode: 'deep' }), 'body.tools.0.parameters.mode: not supported by the firecrawl search engine')
    await refused(tool({ engine: 'firecrawl', user_location: { type: 'approximate', city: 'Brest' } }), 'body.tools.0.parameters.user_location.city: firecrawl takes only a country')
    await refused(tool({ engine: 'parallel', mode: 'agentic' }), 'body.tools.0.parameters.mode: must be one of basic, advanced for the parallel search engine')
    await refused(tool({ engine: 'parallel', user_location: { type: 'approximate', country: 'France' } }), 'body.tools.0.parameters.user_location.country: must be a two-letter country code for parallel')
    await refused(tool({ mode: 'pro' }), 'body.tools.0.parameters.mode: not supported by the perplexity search engine')
    await refused(tool({ max_results: 21 }), 'body.tools.0.parameters.max_results: the perplexity search engine gives at most 20 results a search')
    const domains = Array.from({ length: 21 }, (_, index) => `site${index}.example.org`)
    await refused(tool({ allowed_domains: domains }), 'body.tools.0.parameters.allowed_domains: the perplexity search engine takes at most 20 domains')
    await refused(tool({ user_location: { type: 'approximate', timezone: 'Europe/Paris' } }), 'body.tools.0.parameters.user_location.timezone: perplexity takes only a country')
    expect(model.calls).toHaveLength(0)
    expect(engine.requests).toHaveLength(0)
  })

  it('is a configuration error when the default engine is not configured', async () => {
    await expect(createTestGateway({ serverTools: { webSearch: { default: 'parallel', firecrawl: keyed() } } })).rejects.toThrow(/parallel/)
  })
})
