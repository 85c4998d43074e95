/**
 * `service:web_search` against loopback search engines answering in their real wire formats (SearXNG's JSON API,
 * Exa's `/search`), recorded in test/fixtures/search/: what the gateway asks each engine, what the model reads,
 * the `web_search_call` items and citations the client sees, whole and streamed, and what a search costs.
 */

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createTestGateway, readEvents, scriptedProvider, type ScriptedCall, type ScriptedReply, type TestGateway } from '../../../src/testing'
import { assertValidEventSequence } from '../../helpers/stream-events'
import { startUpstream, type Upstream } from '../../helpers/upstream'

const fixture = (name: string) => readFileSync(join(__dirname, '../../fixtures/search', name), 'utf8')
const EXA_KEY = 'exa-key-3f9c1d7e5b2a4c6e8d0f'

let engine: Upstream
let testGateway: TestGateway | undefined
beforeAll(async () => {
  engine = await startUpstream((request) =>
    request.url.startsWith('/search?') ? { headers: { 'content-type': 'application/json' }, body: fixture('searxng-search.json') } : { headers: { 'content-type': 'application/json' }, body: fixture('exa-search.json') },
  )
})
afterAll(() => engine.close())
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
  engine.requests.length = 0
})

const searchCall = (query: string, callId = 'call_search') => ({ type: 'function_call' as const, name: 'service_web_search', arguments: JSON.stringify({ query }), callId })
const ANSWER = 'Brest has two high tides a day (https://tides.example.org/brest), with a range over seven metres (https://sailing.example.net/guides/brittany-tides).'
const SEARXNG = { type: 'service:web_search', parameters: { engine: 'searxng' } }

const serve = async (replies: ScriptedReply[], webSearch: Record<string, unknown>) => {
  const model = scriptedProvider({ replies })
  testGateway = await createTestGateway({ providers: { scripted: model }, serverTools: { webSearch } })
  return model
}
const searxng = (extra: Record<string, unknown> = {}) => ({ searxng: { baseURL: `${engine.url}/`, pricePerRequest: 0.001, ...extra } })

const whole = async (tools: unknown[]) => {
  const response = await testGateway!.responses({ input: 'Tides in Brest?', tools })
  expect(response.status).toBe(200)
  return response.json()
}
const resultsOf = (call: ScriptedCall) =>
  (call.input as Array<Record<string, unknown>>).filter((item) => item.type === 'function_call_output').map((item) => String(item.output))

describe('service:web_search with SearXNG', () => {
  it('asks the JSON API, gives the model the results and the client a web_search_call item, and cites the pages used', async () => {
    const model = await serve([[searchCall('tides in brest')], ANSWER], searxng())
    const body = await whole([{ type: 'service:web_search' }])
    expect(engine.requests.map((request) => `${request.method} ${request.url}`)).toEqual(['GET /search?q=tides+in+brest&format=json'])
    const [result] = resultsOf(model.calls[1]!)
    expect(result).toBe(
      'Results for "tides in brest":\n\n' +
        '[1] Brest tide times and tables\nURL: https://tides.example.org/brest\nHigh and low tide times for Brest, Finistère, for the next seven days, with coefficients.\n\n' +
        "[2] A sailor's guide to Brittany tides\nURL: https://sailing.example.net/guides/brittany-tides\nPublished: 2024-05-02T00:00:00\nThe tidal range at Brest can exceed seven metres at spring tides.\n\n" +
        '[3] Brest tides? - Sailing forum\nURL: https://forum.example.com/t/brest-tides\nDoes anyone know a good tide app for Brest?',
    )
    expect(body.output[0]).toEqual({
      type: 'web_search_call',
      id: expect.stringMatching(/^ws_/),
      status: 'completed',
      action: {
        type: 'search',
        query: 'tides in brest',
        sources: [
          { type: 'url', url: 'https://tides.example.org/brest' },
          { type: 'url', url: 'https://sailing.example.net/guides/brittany-tides' },
          { type: 'url', url: 'https://forum.example.com/t/brest-tides' },
        ],
      },
    })
    const first = ANSWER.indexOf('https://tides')
    const second = ANSWER.indexOf('https://sailing')
    expect(body.output[1].content[0].annotations).toEqual([
      { type: 'url_citation', url: 'https://tides.example.org/brest', title: 'Brest tide times and tables', start_index: first, end_index: first + 'https://tides.example.org/brest'.length },
      { type: 'url_citation', url: 'https://sailing.example.net/guides/brittany-tides', title: "A sailor's guide to Brittany tides", start_index: second, end_index: ANSWER.indexOf(').') },
    ])
    // The search's price is part of the response's cost.
    expect(body.usage.server_tool_use_details).toEqual({ tool_calls_requested: 1, tool_calls_executed: 1, web_search_requests: 1 })
    expect(body.usage.cost).toBeCloseTo(0.001, 12)
  })

  it('honours max_results, max_total_results, excluded_domains and max_characters', async () => {
    const model = await serve([[searchCall('tides', 'c1'), searchCall('tides again', 'c2'), searchCall('and again', 'c3')], 'ok'], searxng())
    const body = await whole([{ type: 'service:web_search', parameters: { max_results: 2, max_total_results: 3, excluded_domains: ['tides.example.org'], max_characters: 100 } }])
    const [first, second, third] = resultsOf(model.calls[1]!)
    expect(first).toContain('URL: https://sailing.example.net/guides/brittany-tides')
    expect(first).toContain('URL: https://forum.example.com/t/brest-tides')
    expect(first).not.toContain('tides.example.org')
    // Two given, one left of the three in total.
    expect(second!.match(/^URL: /gm)).toHaveLength(1)
    expect(third).toBe('Not run: this request has had its 3 results (max_total_results)')
    expect(body.output.slice(0, 3).map((item: { status: string }) => item.status)).toEqual(['completed', 'completed', 'failed'])
    expect(body.usage.server_tool_use_details).toEqual({ tool_calls_requested: 3, tool_calls_executed: 2, web_search_requests: 2 })
  })

  it('streams the web_search_call events as the search runs, then the answer with its citations', async () => {
    await serve([[searchCall('tides in brest')], ANSWER, [searchCall('tides in brest')], ANSWER], searxng())
    const wholeBody = await whole([SEARXNG])
    const events = await readEvents(await testGateway!.responses({ input: 'Tides in Brest?', tools: [SEARXNG], stream: true }))
    assertValidEventSequence(events)
    const response = events.at(-1)!.response
    const searchEvents = events.filter((event) => event.output_index === 0).map((event) => event.type)
    expect(searchEvents).toEqual([
      'response.output_item.added',
      'response.web_search_call.in_progress',
      'response.web_search_call.searching',
      'response.web_search_call.completed',
      'response.output_item.done',
    ])
    const itemId = response.output[0].id
    expect(events.filter((event) => event.type.startsWith('response.web_search_call.')).every((event) => event.item_id === itemId)).toBe(true)
    const annotations = events.filter((event) => event.type === 'response.output_text.annotation.added')
    expect(annotations.map((event) => [event.output_index, event.content_index, event.annotation_index, event.annotation.url])).toEqual([
      [1, 0, 0, 'https://tides.example.org/brest'],
      [1, 0, 1, 'https://sailing.example.net/guides/brittany-tides'],
    ])
    expect(events.find((event) => event.type === 'response.content_part.done')!.part.annotations).toHaveLength(2)
    const strip = (items: Array<Record<string, unknown>>) => items.map(({ id: _id, ...item }) => item)
    expect(strip(response.output)).toEqual(strip(wholeBody.output))
    expect(response.usage).toEqual(wholeBody.usage)
  })

  it('tells the model when the engine fails, and counts the call as run', async () => {
    const model = await serve([[searchCall('tides')], 'Sorry.'], searxng({ baseURL: `${engine.url}/broken` }))
    engine.setHandler(() => ({ status: 500, body: 'engine down' }))
    try {
      const body = await whole([{ type: 'service:web_search' }])
      expect(resultsOf(model.calls[1]!)).toEqual(['Error: the searxng search engine answered HTTP 500'])
      expect(body.output[0]).toMatchObject({ type: 'web_search_call', status: 'failed' })
      expect(body.usage.server_tool_use_details).toEqual({ tool_calls_requested: 1, tool_calls_executed: 1, web_search_requests: 0 })
      expect(body.usage.cost).toBe(0)
    } finally {
      engine.setHandler((request) =>
        request.url.startsWith('/search?') ? { headers: { 'content-type': 'application/json' }, body: fixture('searxng-search.json') } : { headers: { 'content-type': 'application/json' }, body: fixture('exa-search.json') },
      )
    }
  })

  it('stops searching at max_uses', async () => {
    const model = await serve([[searchCall('one', 'c1'), searchCall('two', 'c2')], 'ok'], searxng())
    await whole([{ type: 'service:web_search', parameters: { max_uses: 1 } }])
    expect(resultsOf(model.calls[1]!)[1]).toBe('Not run: this request may search at most 1 times (max_uses)')
    expect(engine.requests).toHaveLength(1)
  })
})

describe('service:web_search with Exa', () => {
  it('posts the query with its key and parameters, and bills what Exa reports when no price is set', async () => {
    const model = await serve([[searchCall('tides in brest')], ANSWER], { exa: { apiKey: EXA_KEY, baseURL: engine.url } })
    const body = await whole([
      { type: 'service:web_search', parameters: { engine: 'exa', mode: 'fast', max_results: 4, allowed_domains: ['tides.example.org', 'sailing.example.net'], search_context_size: 'medium', user_location: { type: 'approximate', country: 'fr' } } },
    ])
    const [request] = engine.requests
    expect(request).toMatchObject({ method: 'POST', url: '/search' })
    expect(request!.headers['x-api-key']).toBe(EXA_KEY)
    expect(request!.json).toEqual({
      query: 'tides in brest',
      numResults: 4,
      type: 'fast',
      includeDomains: ['tides.example.org', 'sailing.example.net'],
      userLocation: 'FR',
      contents: { text: { maxCharacters: 15_000 } },
    })
    expect(resultsOf(model.calls[1]!)[0]).toContain('High tide 06:12 (6.9 m)')
    expect(body.output[0].action.sources).toHaveLength(2)
    expect(body.usage.cost).toBeCloseTo(0.005, 12)
    expect(JSON.stringify(body)).not.toContain(EXA_KEY)
  })

  it('asks for highlights when no size is set, and bills the operator price when one is', async () => {
    await serve([[searchCall('tides')], 'ok'], { exa: { apiKey: EXA_KEY, baseURL: engine.url, pricePerRequest: 0.004 }, searxng: { baseURL: engine.url }, default: 'exa' })
    const body = await whole([{ type: 'service:web_search' }])
    expect(engine.requests[0]!.json).toMatchObject({ type: 'auto', numResults: 5, contents: { highlights: true } })
    expect(body.usage.cost).toBeCloseTo(0.004, 12)
  })
})

describe('parameters an engine cannot honour', () => {
  it('are refused with a 400 naming them, before any call', async () => {
    const model = await serve([], { searxng: { baseURL: engine.url }, exa: { apiKey: EXA_KEY, baseURL: engine.url } })
    const refused = async (tool: Record<string, unknown>, message: string) => {
      const response = await testGateway!.responses({ input: 'hi', tools: [tool] })
      expect(response.status).toBe(400)
      expect((await response.json()).error.message).toBe(message)
    }
    await refused({ type: 'service:web_search', parameters: { mode: 'deep' } }, 'body.tools.0.parameters.mode: not supported by the searxng search engine')
    await refused({ type: 'service:web_search', parameters: { search_context_size: 'high' } }, 'body.tools.0.parameters.search_context_size: not supported by the searxng search engine')
    await refused({ type: 'service:web_search', parameters: { engine: 'exa', mode: 'turbo' } }, 'body.tools.0.parameters.mode: must be one of instant, fast, auto, deep-lite, deep, deep-reasoning for the exa search engine')
    await refused({ type: 'service:web_search', parameters: { engine: 'exa', user_location: { type: 'approximate', city: 'Brest' } } }, 'body.tools.0.parameters.user_location.city: exa takes only a country')
    await refused({ type: 'service:web_search', parameters: { engine: 'perplexity' } }, 'body.tools.0.parameters.engine: "perplexity" is not configured on this gateway (configured: searxng, exa)')
    // The scripted provider runs no search of its own (server-tools-native-search.test.ts has those that do).
    await refused({ type: 'service:web_search', parameters: { engine: 'native' } }, 'body.tools.0.parameters.engine: not supported by any endpoint of test/model')
    await refused(
      { type: 'service:web_search', parameters: { allowed_domains: ['a.example.org'], excluded_domains: ['b.example.org'] } },
      'body.tools.0: parameters: allowed_domains and excluded_domains cannot be used together',
    )
    expect(model.calls).toHaveLength(0)
    await testGateway!.close()
    testGateway = await createTestGateway({ providers: { scripted: scriptedProvider({ reply: 'never' }) } })
    await refused({ type: 'service:web_search' }, 'body.tools.0: service:web_search needs a search engine, and none is configured on this gateway')
  })
})
