/**
 * `service:web_fetch` against loopback pages. Names resolve through a resolver the test injects (every name is this
 * machine), and the fetch guard admits 127.0.0.1 and the page server's port for these tests only; the defaults
 * refuse both, as the last cases show. The undici transport checks addresses where it connects.
 */

import type { LookupAddress, LookupOptions, lookup } from 'node:dns'
import { Agent, fetch as undiciFetch } from 'undici'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { fetchTransport } from '../../../src/transport/contract'
import { READABILITY_MAX_ELEMENTS } from '../../../src/features/server-tools/page-text'
import type { HostResolver, UpstreamGuardOptions } from '../../../src/core/upstream-guard'
import { createTestGateway, scriptedProvider, type ScriptedCall, type ScriptedReply, type TestGateway } from '../../../src/testing'
import { undiciTransport, type UndiciTransport } from '../../../src/transport/undici'
import { startUpstream, type RecordedRequest, type Upstream, type UpstreamReply } from '../../helpers/upstream'

const ARTICLE = `<!doctype html><html><head><title>Tide tables</title><script>var tracking = 1</script></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>Tides in Brest</h1>
<p>${'High tide in Brest comes twice a day, about twelve hours and twenty-five minutes apart. '.repeat(4)}</p>
<p>The range between high and low water can exceed seven metres at spring tides, among the largest in Europe.</p>
<ul><li>Spring tides follow the full and new moon.</li><li>Neap tides follow the quarter moons.</li></ul>
</article><footer>Copyright</footer></body></html>`

let pages: Upstream
let transport: UndiciTransport
let testGateway: TestGateway | undefined
const pageRoutes = new Map<string, (request: RecordedRequest) => UpstreamReply>()

beforeAll(async () => {
  pages = await startUpstream((request) => pageRoutes.get(request.url.split('?')[0]!)?.(request) ?? { status: 404, body: 'missing' })
  transport = undiciTransport()
})
afterAll(async () => {
  await pages.close()
  await transport.close()
})
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
  pageRoutes.clear()
  pages.requests.length = 0
})

const port = () => Number(new URL(pages.url).port)
const page = (path: string) => `http://pages.example.test:${port()}${path}`
/** The test's DNS: `internal.example.test` is another loopback address, every other name 127.0.0.1. */
const resolve: HostResolver = async (hostname) => [{ address: hostname === 'internal.example.test' ? '127.0.0.2' : '127.0.0.1', family: 4 }]
const testGuard = (): UpstreamGuardOptions => ({ allowPrivateNetworks: ['127.0.0.1/32'], allowedPorts: [port()], resolve })

const fetchCall = (url: string, callId = 'call_fetch') => ({ type: 'function_call' as const, name: 'service_web_fetch', arguments: JSON.stringify({ url }), callId })

const serve = async (replies: ScriptedReply[], webFetch: Record<string, unknown> = {}) => {
  const model = scriptedProvider({ replies })
  testGateway = await createTestGateway({ providers: { scripted: model }, transport, serverTools: { webFetch: { guard: testGuard(), ...webFetch } } })
  return model
}

const run = async (tool: Record<string, unknown> = { type: 'service:web_fetch' }) => {
  const response = await testGateway!.responses({ input: 'Read it', tools: [tool] })
  expect(response.status).toBe(200)
  return response.json()
}

/** What the model read back for each call of its first turn. */
const resultsOf = (call: ScriptedCall) =>
  (call.input as Array<Record<string, unknown>>).filter((item) => item.type === 'function_call_output').map((item) => String(item.output))

describe('service:web_fetch', () => {
  it('gives the model the readable text of the page and the client the page item, and cites it', async () => {
    pageRoutes.set('/tides', () => ({ headers: { 'content-type': 'text/html; charset=utf-8' }, body: ARTICLE }))
    const model = await serve([[fetchCall(page('/tides'))], [{ type: 'text', text: `Brest has two high tides a day (${page('/tides')}).` }]])
    const body = await run()
    const [result] = resultsOf(model.calls[1]!)
    expect(result).toMatch(new RegExp(`^URL: ${page('/tides').replace(/[.?]/g, '\\$&')}\nTitle: Tide tables\n\n#+ Tides in Brest\nHigh tide in Brest comes twice a day`))
    expect(result).toContain('\n- Spring tides follow the full and new moon.\n- Neap tides follow the quarter moons.')
    expect(result).not.toContain('tracking')
    expect(result).not.toContain('About')
    expect(body.output[0]).toMatchObject({ type: 'service:web_fetch', status: 'completed', url: page('/tides'), title: 'Tide tables', httpStatus: 200 })
    expect(body.output[0].content).toContain('seven metres')
    const text: string = body.output[1].content[0].text
    expect(body.output[1].content[0].annotations).toEqual([
      { type: 'url_citation', url: page('/tides'), title: 'Tide tables', start_index: text.indexOf('http'), end_index: text.indexOf(')') },
    ])
    expect(pages.requests[0]).toMatchObject({ method: 'GET', url: '/tides' })
    expect(pages.requests[0]!.headers['user-agent']).toBe('modelgate-web-fetch/1')
  })

  it('gives the whole body\'s text of a small plain page that Readability finds no article in', async () => {
    for (const [path, html] of <Array<[string, string]>>[
      ['/plain', '<p>Page body text</p>'],
      ['/bare', 'Page body text'],
      ['/short', '<html><head><title>Short</title></head><body><div>Page body text</div></body></html>'],
    ]) {
      pageRoutes.set(path, () => ({ headers: { 'content-type': 'text/html' }, body: html }))
    }
    const model = await serve([[fetchCall(page('/plain'), 'a'), fetchCall(page('/bare'), 'b'), fetchCall(page('/short'), 'c')], [{ type: 'text', text: 'Read.' }]])
    const body = await run()
    expect(resultsOf(model.calls[1]!).map((result) => result.split('\n\n')[1])).toEqual(['Page body text', 'Page body text', 'Page body text'])
    expect(body.output.slice(0, 3).map((item: { content: string }) => item.content)).toEqual(['Page body text', 'Page body text', 'Page body text'])
  })

  it('reads pages on the gateway\'s worker threads, and a page of more elements than Readability reads as plain text', async () => {
    const started: unknown[] = []
    const onWorker = (worker: unknown) => started.push(worker)
    process.on('worker', onWorker)
    try {
      // Readability's work grows faster than the page: past READABILITY_MAX_ELEMENTS the body is read the linear way.
      const many = `<html><body><nav>Menu</nav>${'<div><span>cell</span></div>'.repeat(READABILITY_MAX_ELEMENTS)}</body></html>`
      pageRoutes.set('/many', () => ({ headers: { 'content-type': 'text/html' }, body: many }))
      const model = await serve([[fetchCall(page('/many'))], [{ type: 'text', text: 'Read.' }]])
      await run()
      const [result] = resultsOf(model.calls[1]!)
      expect(result).toContain('Menu\ncell\ncell')
      expect(started).toHaveLength(1)
    } finally {
      process.off('worker', onWorker)
    }
  })

  it('follows redirects by hand, checking every hop', async () => {
    pageRoutes.set('/old', () => ({ status: 301, headers: { location: '/tides' }, body: '' }))
    pageRoutes.set('/tides', () => ({ headers: { 'content-type': 'text/plain' }, body: 'Plain tide notes.' }))
    pageRoutes.set('/to-ip', () => ({ status: 302, headers: { location: `http://127.0.0.1:${port()}/tides` }, body: '' }))
    pageRoutes.set('/to-internal', () => ({ status: 302, headers: { location: `http://internal.example.test:${port()}/tides` }, body: '' }))
    pageRoutes.set('/to-blocked', () => ({ status: 302, headers: { location: `http://blocked.example.test:${port()}/tides` }, body: '' }))
    pageRoutes.set('/loop', () => ({ status: 302, headers: { location: '/loop' }, body: '' }))
    const model = await serve(
      [[fetchCall(page('/old'), 'c1'), fetchCall(page('/to-ip'), 'c2'), fetchCall(page('/to-internal'), 'c3'), fetchCall(page('/to-blocked'), 'c4'), fetchCall(page('/loop'), 'c5')], 'ok'],
      { maxRedirects: 3 },
    )
    const body = await run({ type: 'service:web_fetch', parameters: { blocked_domains: ['blocked.example.test'] } })
    expect(resultsOf(model.calls[1]!)).toEqual([
      `URL: ${page('/tides')}\nTitle: \n\nPlain tide notes.`,
      'Error: the URL is not allowed: the host must be a DNS name, not an IP address',
      'Error: the URL is not allowed: the host must resolve to public addresses only',
      'Error: the page redirected to a URL not allowed: blocked.example.test is blocked for this request',
      'Error: the page redirected more than 3 times',
    ])
    expect(body.output.slice(0, 5).map((item: { status: string }) => item.status)).toEqual(['completed', 'incomplete', 'incomplete', 'incomplete', 'incomplete'])
    expect(body.output[2]).toMatchObject({ error: 'the URL is not allowed: the host must resolve to public addresses only' })
    // Nothing was ever sent to the address the guard refused, nor to the blocked host.
    expect(pages.requests.map((request) => `${request.headers.host}${request.url}`).filter((target) => !target.startsWith('pages.example.test'))).toEqual([])
    expect(body.usage.server_tool_use_details).toMatchObject({ tool_calls_requested: 5, tool_calls_executed: 5 })
  })

  it('honours allowed_domains, blocked_domains and max_uses without fetching', async () => {
    pageRoutes.set('/tides', () => ({ headers: { 'content-type': 'text/plain' }, body: 'Tides.' }))
    const model = await serve([[fetchCall(page('/tides'), 'c1'), fetchCall(page('/tides'), 'c2'), fetchCall(`http://other.example.test:${port()}/tides`, 'c3'), fetchCall(`http://docs.pages.example.test:${port()}/private/x`, 'c4'), fetchCall('ftp://pages.example.test/x', 'c5')], 'ok'])
    const body = await run({ type: 'service:web_fetch', parameters: { max_uses: 1, allowed_domains: ['pages.example.test'], blocked_domains: ['docs.pages.example.test/private'] } })
    expect(resultsOf(model.calls[1]!)).toEqual([
      `URL: ${page('/tides')}\nTitle: \n\nTides.`,
      'Not run: this request may fetch at most 1 pages (max_uses)',
      'Not run: this request may fetch at most 1 pages (max_uses)',
      'Not run: this request may fetch at most 1 pages (max_uses)',
      'Not run: url must be an absolute http or https URL',
    ])
    expect(pages.requests).toHaveLength(1)
    expect(body.usage.server_tool_use_details).toMatchObject({ tool_calls_requested: 5, tool_calls_executed: 1 })
  })

  it('names the domain lists in its refusals', async () => {
    const model = await serve([[fetchCall(`http://other.example.test:${port()}/tides`, 'c1'), fetchCall(`http://docs.pages.example.test:${port()}/private/x`, 'c2')], 'ok'])
    await run({ type: 'service:web_fetch', parameters: { allowed_domains: ['pages.example.test'], blocked_domains: ['docs.pages.example.test/private'] } })
    expect(resultsOf(model.calls[1]!)).toEqual([
      'Not run: other.example.test is not among the allowed domains (pages.example.test)',
      'Not run: docs.pages.example.test is blocked for this request',
    ])
    expect(pages.requests).toHaveLength(0)
  })

  it('cuts a page at maxBytes and its text at max_content_tokens', async () => {
    pageRoutes.set('/long', () => ({ headers: { 'content-type': 'text/plain' }, chunks: ['a'.repeat(3000), 'b'.repeat(3000)] }))
    const model = await serve([[fetchCall(page('/long'), 'c1')], 'ok', [fetchCall(page('/long'), 'c2')], 'ok'], { maxBytes: 4096 })
    await run()
    const [whole] = resultsOf(model.calls[1]!)
    expect(whole!.split('\n\n')[1]).toBe('a'.repeat(3000) + 'b'.repeat(1096))
    await run({ type: 'service:web_fetch', parameters: { max_content_tokens: 100 } })
    const [cut] = resultsOf(model.calls[3]!)
    expect(cut!.split('\n\n')[1]).toBe(`${'a'.repeat(400)}\n[… cut at 100 tokens]`)
  })

  it('reports HTTP errors, content that is not text, and a page that does not answer in time', async () => {
    pageRoutes.set('/image', () => ({ headers: { 'content-type': 'image/png' }, body: 'PNG' }))
    pageRoutes.set('/slow', () => ({ shouldHang: true }))
    const model = await serve([[fetchCall(page('/gone'), 'c1'), fetchCall(page('/image'), 'c2'), fetchCall(page('/slow'), 'c3')], 'ok'], { timeoutMs: 300 })
    const body = await run()
    expect(resultsOf(model.calls[1]!)).toEqual([
      'Error: the page answered HTTP 404',
      'Error: the page is image/png, which is not text',
      'Error: the page did not answer within 300 ms',
    ])
    expect(body.output[0]).toMatchObject({ type: 'service:web_fetch', status: 'incomplete', httpStatus: 404, url: page('/gone') })
  })

  it('refuses loopback addresses and other ports with the default guard', async () => {
    pageRoutes.set('/tides', () => ({ headers: { 'content-type': 'text/plain' }, body: 'Tides.' }))
    const model = scriptedProvider({ replies: [[fetchCall(page('/tides'), 'c1'), fetchCall('http://pages.example.test/tides', 'c2')], 'ok'] })
    testGateway = await createTestGateway({ providers: { scripted: model }, transport, serverTools: { webFetch: { guard: { allowedPorts: [port()], resolve } } } })
    await run()
    expect(resultsOf(model.calls[1]!)).toEqual(['Error: the URL is not allowed: the host must resolve to public addresses only', 'Error: the URL is not allowed: the host must resolve to public addresses only'])
    await testGateway.close()
    testGateway = await createTestGateway({ providers: { scripted: scriptedProvider({ replies: [[fetchCall(page('/tides'))], 'ok'] }) }, transport, serverTools: { webFetch: { guard: { resolve } } } })
    const body = await run()
    expect(body.output[0]).toMatchObject({ status: 'incomplete', error: 'the URL is not allowed: must use the default port' })
    expect(pages.requests).toHaveLength(0)
  })

  it('checks addresses before the call when the transport cannot check them as it connects (fetch)', async () => {
    pageRoutes.set('/tides', () => ({ headers: { 'content-type': 'text/plain' }, body: 'Tides.' }))
    // The runtime's fetch with the test's DNS; the gateway's own check uses the injected resolver.
    const loopback = new Agent({
      connect: {
        lookup: ((_hostname: string, options: LookupOptions, callback: (error: null, address: string | LookupAddress[], family?: number) => void) =>
          options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4)) as unknown as typeof lookup,
      },
    })
    const viaLoopback = ((input: string, init: RequestInit) => undiciFetch(input, { ...(init as object), dispatcher: loopback })) as unknown as typeof fetch
    const model = scriptedProvider({ replies: [[fetchCall(page('/tides'), 'c1'), fetchCall(`http://internal.example.test:${port()}/tides`, 'c2')], 'ok'] })
    testGateway = await createTestGateway({ providers: { scripted: model }, transport: fetchTransport(viaLoopback), serverTools: { webFetch: { guard: testGuard() } } })
    await run()
    expect(resultsOf(model.calls[1]!)).toEqual([`URL: ${page('/tides')}\nTitle: \n\nTides.`, 'Error: the URL is not allowed: the host must resolve to public addresses only'])
    expect(pages.requests).toHaveLength(1)
    await loopback.close()
  })

  it('refuses bad parameters with a 400 naming them', async () => {
    await serve([])
    const refused = async (parameters: Record<string, unknown>, message: string) => {
      const response = await testGateway!.responses({ input: 'hi', tools: [{ type: 'service:web_fetch', parameters }] })
      expect(response.status).toBe(400)
      expect((await response.json()).error.message).toBe(message)
    }
    await refused({ engine: 'exa' }, 'body.tools.0.parameters.engine: must be "auto" or "service": this gateway fetches pages itself')
    await refused({ max_uses: 0 }, 'body.tools.0.parameters.max_uses: must be at least 1')
    await refused({ allowed_domains: ['not a domain'] }, 'body.tools.0.parameters.allowed_domains.0: must be a domain such as example.com, *.example.com or example.com/docs')
    await refused({ blocked_domains: [] }, 'body.tools.0.parameters.blocked_domains: must name at least 1 domain')
  })
})
