/**
 * The `web` and `web-fetch` plugins against loopback servers: a SearXNG engine answering its JSON API
 * (test/fixtures/search/) and pages reached through the web fetch's guard with an injected resolver. What the
 * engine and the pages are asked, what the model is sent, the citations and usage the client gets (whole and
 * streamed), the pipeline stages, and the refusals.
 */

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { HostResolver } from '../../../src/core/upstream-guard'
import { createTestGateway, readEvents, scriptedProvider, type ScriptedProvider, type TestGateway } from '../../../src/testing'
import { undiciTransport, type UndiciTransport } from '../../../src/transport/undici'
import { assertValidEventSequence } from '../../helpers/stream-events'
import { startUpstream, type Upstream } from '../../helpers/upstream'

const SEARXNG_ANSWER = readFileSync(join(__dirname, '../../fixtures/search/searxng-search.json'), 'utf8')
const ANSWER = 'Brest has two high tides a day (https://tides.example.org/brest).'
const PAGE = '<!doctype html><html><head><title>Tide tables</title></head><body><article><h1>Tides in Brest</h1><p>High tide comes twice a day.</p></article></body></html>'

let engine: Upstream
let pages: Upstream
let transport: UndiciTransport
let testGateway: TestGateway | undefined
beforeAll(async () => {
  engine = await startUpstream(() => ({ headers: { 'content-type': 'application/json' }, body: SEARXNG_ANSWER }))
  pages = await startUpstream((request) =>
    request.url === '/tides' ? { headers: { 'content-type': 'text/html; charset=utf-8' }, body: PAGE } : { status: 404, headers: { 'content-type': 'text/plain' }, body: 'missing' },
  )
  transport = undiciTransport()
})
afterAll(async () => {
  await engine.close()
  await pages.close()
  await transport.close()
})
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
  engine.requests.length = 0
  pages.requests.length = 0
})

const METADATA = { headers: { 'x-service-metadata': 'enabled' } }
const pagePort = () => Number(new URL(pages.url).port)
const page = (path: string) => `http://pages.example.test:${pagePort()}${path}`
/** The test's DNS (as in the web fetch's tests): every name, under the reserved `.test` domain, is this machine. */
const resolve: HostResolver = async () => [{ address: '127.0.0.1', family: 4 }]

const serve = async (reply: string, webSearch: Record<string, unknown> | null = { searxng: { baseURL: `${engine.url}/`, pricePerRequest: 0.004 } }) => {
  const model = scriptedProvider({ reply })
  testGateway = await createTestGateway({
    providers: { scripted: model },
    transport,
    serverTools: { ...(webSearch ? { webSearch } : {}), webFetch: { guard: { allowPrivateNetworks: ['127.0.0.1/32'], allowedPorts: [pagePort()], resolve } } },
  })
  return model
}

const systemMessage = (model: ScriptedProvider) => (model.lastCall!.input as Array<{ role: string; content: string }>).find((item) => item.role === 'system')

describe('web plugin', () => {
  it('searches the last user message, hands the results to the model before it, cites them and counts the search', async () => {
    const model = await serve(ANSWER)
    const input = [
      { role: 'user', content: 'Hello' },
      { role: 'assistant', content: 'Hi!' },
      { role: 'user', content: 'tides in brest' },
    ]
    const response = await testGateway!.responses({ input, plugins: [{ id: 'web', max_results: 2 }] }, METADATA)
    const body = await response.json()
    expect(response.status, JSON.stringify(body)).toBe(200)
    expect(engine.requests.map((request) => request.url)).toEqual(['/search?q=tides+in+brest&format=json'])
    const sent = model.lastCall!.input as Array<{ role: string; content: string }>
    expect(sent.map((item) => item.role)).toEqual(['user', 'assistant', 'system', 'user'])
    expect(sent[2]!.content).toMatch(/^A web search was conducted on \d{4}-\d{2}-\d{2}\. Incorporate the following web search results into your response\./)
    expect(sent[2]!.content).toContain('Results for "tides in brest":\n\n[1] Brest tide times and tables\nURL: https://tides.example.org/brest')
    expect(sent[2]!.content).not.toContain('[3]')
    const start = ANSWER.indexOf('https://')
    expect(body.output[0].content[0].annotations).toEqual([
      { type: 'url_citation', url: 'https://tides.example.org/brest', title: 'Brest tide times and tables', start_index: start, end_index: start + 'https://tides.example.org/brest'.length },
    ])
    expect(body.usage.server_tool_use_details).toEqual({ tool_calls_requested: 0, tool_calls_executed: 0, web_search_requests: 1 })
    // The search's price (the scripted answer reports no tokens).
    expect(body.usage.cost).toBeCloseTo(0.004, 12)
    expect(body.service_metadata.pipeline).toEqual([
      {
        type: 'plugin',
        name: 'web',
        summary: "searched the web for the user's message: 2 results",
        data: { query: 'tides in brest', results: ['https://tides.example.org/brest', 'https://sailing.example.net/guides/brittany-tides'], web_search_requests: 1, cost: 0.004 },
      },
    ])
  })

  it('introduces the results with search_prompt, and cites them in a stream', async () => {
    const model = await serve(ANSWER)
    const events = await readEvents(
      await testGateway!.responses({ input: 'tides in brest', stream: true, plugins: [{ id: 'web', search_prompt: 'Fresh results ({date}):', exclude_domains: ['forum.example.com'] }] }),
    )
    expect(systemMessage(model)!.content).toMatch(/^Fresh results \(\d{4}-\d{2}-\d{2}\):\n\nResults for "tides in brest"/)
    expect(systemMessage(model)!.content).not.toContain('forum.example.com')
    assertValidEventSequence(events)
    const added = events.filter((event) => event.type === 'response.output_text.annotation.added')
    expect(added.map((event) => [event.output_index, event.content_index, event.annotation_index, event.annotation.url])).toEqual([[0, 0, 0, 'https://tides.example.org/brest']])
    // Announced before the text's end, as OpenAI's own web search does.
    expect(events.indexOf(added[0]!)).toBeLessThan(events.findIndex((event) => event.type === 'response.output_text.done'))
    const done = events.find((event) => event.type === 'response.content_part.done')!
    expect(done.part.annotations.map((annotation: { url: string }) => annotation.url)).toEqual(['https://tides.example.org/brest'])
    const completed = events.at(-1)!.response
    expect(completed.output[0].content[0].annotations).toHaveLength(1)
    expect(completed.usage.server_tool_use_details.web_search_requests).toBe(1)
  })

  it('refuses settings the engine cannot honour, or an engine not configured, naming the plugin field', async () => {
    const model = await serve('never')
    const refused = async (plugin: Record<string, unknown>, message: string) => {
      const response = await testGateway!.responses({ input: 'tides', plugins: [plugin] })
      expect(response.status).toBe(400)
      expect(await response.json()).toEqual({ error: { code: 400, message } })
    }
    await refused({ id: 'web', engine: 'exa' }, 'body.plugins.0.engine: "exa" is not configured on this gateway (configured: searxng)')
    await refused({ id: 'web', mode: 'deep' }, 'body.plugins.0.mode: not supported by the searxng search engine')
    await refused({ id: 'web', user_location: { type: 'approximate', country: 'FR' } }, 'body.plugins.0.user_location: not supported by the searxng search engine')
    // The provider's own search is the server tool's to ask for: the plugin does not quietly use another engine.
    await refused(
      { id: 'web', engine: 'native' },
      'body.plugins.0.engine: "native" (the provider\'s own search) is not run by the web plugin; use the service:web_search tool with engine "native", or name a search engine',
    )
    await testGateway!.close()
    await serve('never', null)
    await refused({ id: 'web' }, 'body.plugins.0: the "web" plugin needs a search engine, and none is configured on this gateway')
    expect(model.calls).toHaveLength(0)
    expect(engine.requests).toHaveLength(0)
  })

  it('fails the request when the search engine fails, rather than answer ungrounded', async () => {
    const model = await serve('never', { searxng: { baseURL: `${pages.url}/nowhere/` } })
    const response = await testGateway!.responses({ input: 'tides', plugins: [{ id: 'web' }] })
    expect(response.status).toBe(502)
    expect(await response.json()).toEqual({ error: { code: 502, message: 'Web search is unavailable: the searxng search engine answered HTTP 404' } })
    expect(model.calls).toHaveLength(0)
  })
})

describe('web-fetch plugin', () => {
  it('fetches the URLs of the user message through the guard, gives the model their text, and reports each', async () => {
    const model = await serve(`High tide twice a day (${page('/tides')}).`)
    const response = await testGateway!.responses({ input: `Read ${page('/tides')} and ${page('/gone')}, please.`, plugins: [{ id: 'web-fetch' }] }, METADATA)
    const body = await response.json()
    expect(response.status, JSON.stringify(body)).toBe(200)
    expect(pages.requests.map((request) => `${request.method} ${request.url}`).sort()).toEqual(['GET /gone', 'GET /tides'])
    const context = systemMessage(model)!.content
    expect(context).toContain(`URL: ${page('/tides')}\nTitle: Tide tables\n\n`)
    expect(context).toContain('High tide comes twice a day.')
    expect(context).toContain(`URL: ${page('/gone')}\nError: the page answered HTTP 404`)
    expect(body.output[0].content[0].annotations.map((annotation: { url: string }) => annotation.url)).toEqual([page('/tides')])
    expect(body.service_metadata.pipeline).toEqual([
      {
        type: 'plugin',
        name: 'web-fetch',
        summary: 'fetched 1 of 2 linked pages',
        data: { fetched: [{ url: page('/tides'), status: 'fetched' }, { url: page('/gone'), status: 'failed', error: 'the page answered HTTP 404' }] },
      },
    ])
  })

  it('honours max_uses and blocked_domains, and says when there is no URL', async () => {
    await serve('ok')
    const response = await testGateway!.responses(
      { input: `See ${page('/tides')} ${page('/a')} https://blocked.example.test/x`, plugins: [{ id: 'web-fetch', max_uses: 1, blocked_domains: ['blocked.example.test'] }] },
      METADATA,
    )
    const stage = (await response.json()).service_metadata.pipeline[0]
    expect(stage.summary).toBe('fetched 1 of 1 linked page (2 more over max_uses)')
    expect(stage.data.not_fetched).toEqual([page('/a'), 'https://blocked.example.test/x'])
    const none = await testGateway!.responses({ input: 'no links here', plugins: [{ id: 'web-fetch' }] }, METADATA)
    expect((await none.json()).service_metadata.pipeline).toEqual([{ type: 'plugin', name: 'web-fetch', summary: 'no URL in the user message', data: { fetched: [] } }])
    const blocked = await testGateway!.responses({ input: 'https://blocked.example.test/x', plugins: [{ id: 'web-fetch', blocked_domains: ['blocked.example.test'] }] }, METADATA)
    expect((await blocked.json()).service_metadata.pipeline[0].data.fetched).toEqual([{ url: 'https://blocked.example.test/x', status: 'failed', error: 'blocked.example.test is blocked for this request' }])
  })
})
