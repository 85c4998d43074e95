/**
 * `service:web_search` with `engine: "native"`: the upstream provider searches with its own tool. OpenAI's
 * Responses API gets `web_search`, Anthropic `web_search_20250305`, Gemini `google_search`; what they answer (recorded fixtures in
 * test/fixtures/providers/) reaches the client as `web_search_call` items and `url_citation` annotations, whole
 * and streamed, with the searches counted in `usage.server_tool_use_details.web_search_requests`. An endpoint
 * whose provider has no search of its own is never chosen, and when none can run it the request is a 400.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { assertValidEventSequence } from '../../helpers/stream-events'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { fixture, jsonFixture, sseFixture } from '../../helpers/upstream'

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const native = (parameters: Record<string, unknown> = {}) => ({ type: 'service:web_search', parameters: { engine: 'native', ...parameters } })

const serveAnthropic = async () => {
  harness = await createResponsesHarness({ anthropic: {} })
  harness.upstreams.anthropic!.setHandler((request) => (request.json?.stream ? sseFixture('anthropic', 'web-search.sse') : jsonFixture('anthropic', 'web-search.json')))
  return harness
}

const serveOpenAI = async () => {
  harness = await createResponsesHarness({ openai: {} })
  harness.upstreams.openai!.setHandler((request) => (request.json?.stream ? sseFixture('openai', 'web-search.sse') : jsonFixture('openai', 'web-search.json')))
  return harness
}

const streamedEvents = async (body: Record<string, unknown>) => {
  const response = await harness!.post({ ...body, stream: true })
  expect(response.status).toBe(200)
  const events = (await readSseEvents(response)).events.map((event) => event.data).filter((data) => data !== '[DONE]')
  assertValidEventSequence(events)
  return events
}

const ANTHROPIC_TEXT = 'Brest has two high tides a day, with a range over seven metres.'
const CITED_END = 'Brest has two high tides a day, with a range over seven metres'.length

describe('native web search on Anthropic', () => {
  it('sends Claude its web_search tool with every parameter, and shows the search and its citations', async () => {
    await serveAnthropic()
    const response = await harness!.post({
      model: 'anthropic/claude-sonnet-4.5',
      input: 'Tides in Brest?',
      tools: [native({ max_uses: 3, excluded_domains: ['*.spam.example', 'forum.example.com/t'], user_location: { type: 'approximate', city: 'Brest', country: 'FR', timezone: 'Europe/Paris' } })],
    })
    expect(response.status).toBe(200)
    const body = await response.json()
    const [sent] = harness!.upstreams.anthropic!.requests
    expect(sent!.json.tools).toEqual([
      {
        type: 'web_search_20250305',
        name: 'web_search',
        max_uses: 3,
        blocked_domains: ['spam.example', 'forum.example.com/t'],
        user_location: { type: 'approximate', city: 'Brest', country: 'FR', timezone: 'Europe/Paris' },
      },
    ])
    expect(body.output).toEqual([
      { id: expect.stringMatching(/^msg_/), type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: "I'll look that up.", annotations: [], logprobs: [] }] },
      {
        id: expect.stringMatching(/^ws_/),
        type: 'web_search_call',
        status: 'completed',
        action: {
          type: 'search',
          query: 'brest tide times',
          sources: [
            { type: 'url', url: 'https://tides.example.org/brest' },
            { type: 'url', url: 'https://sailing.example.net/guides/brittany-tides' },
          ],
        },
      },
      {
        id: expect.stringMatching(/^msg_/),
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [
          {
            type: 'output_text',
            text: ANTHROPIC_TEXT,
            annotations: [
              { type: 'url_citation', url: 'https://tides.example.org/brest', title: 'Brest tide times and tables', start_index: 10, end_index: CITED_END },
              { type: 'url_citation', url: 'https://sailing.example.net/guides/brittany-tides', title: "A sailor's guide to Brittany tides", start_index: 10, end_index: CITED_END },
            ],
            logprobs: [],
          },
        ],
      },
    ])
    expect(body.usage.server_tool_use_details).toEqual({ tool_calls_requested: 0, tool_calls_executed: 0, web_search_requests: 1 })
  })

  it('streams the search with its events and the citations as annotation events, as the whole answer has them', async () => {
    await serveAnthropic()
    const request = { model: 'anthropic/claude-sonnet-4.5', input: 'Tides in Brest?', tools: [native({ allowed_domains: ['tides.example.org', 'sailing.example.net/guides'] })] }
    const wholeBody = await (await harness!.post(request)).json()
    const events = await streamedEvents(request)
    expect(harness!.upstreams.anthropic!.requests[1]!.json.tools).toEqual([
      { type: 'web_search_20250305', name: 'web_search', allowed_domains: ['tides.example.org', 'sailing.example.net/guides'] },
    ])
    expect(events.filter((event) => event.output_index === 1).map((event) => event.type)).toEqual([
      'response.output_item.added',
      'response.web_search_call.in_progress',
      'response.web_search_call.searching',
      'response.web_search_call.completed',
      'response.output_item.done',
    ])
    const annotations = events.filter((event) => event.type === 'response.output_text.annotation.added')
    expect(annotations.map((event) => [event.output_index, event.content_index, event.annotation_index, event.annotation.url, event.annotation.start_index, event.annotation.end_index])).toEqual([
      [2, 0, 0, 'https://tides.example.org/brest', 10, CITED_END],
      [2, 0, 1, 'https://sailing.example.net/guides/brittany-tides', 10, CITED_END],
    ])
    const completed = events.at(-1)!.response
    const strip = (items: Array<Record<string, unknown>>) => items.map(({ id: _id, ...item }) => item)
    expect(strip(completed.output)).toEqual(strip(wholeBody.output))
    expect(completed.usage.server_tool_use_details.web_search_requests).toBe(1)
  })

  it('shows a search Anthropic could not run as failed, and bills it not', async () => {
    harness = await createResponsesHarness({ anthropic: {} }, { prices: [{ model: 'anthropic/claude-sonnet-4.5', pricing: { prompt: 0, completion: 0, webSearch: 0.01 } }] })
    const answer = JSON.parse(fixture('anthropic', 'web-search.json').toString('utf8'))
    answer.content = [
      answer.content[1],
      { type: 'web_search_tool_result', tool_use_id: answer.content[1].id, content: { type: 'web_search_tool_result_error', error_code: 'max_uses_exceeded' } },
      { type: 'text', text: 'I could not search.' },
    ]
    harness.upstreams.anthropic!.setHandler(() => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify(answer) }))
    const body = await (await harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'Tides?', tools: [native()] })).json()
    expect(body.output[0]).toEqual({ id: expect.stringMatching(/^ws_/), type: 'web_search_call', status: 'failed', action: { type: 'search', query: 'brest tide times' } })
    expect(body.usage.cost).toBe(0)
    expect(body.usage.server_tool_use_details.web_search_requests).toBe(0)
  })

  it('leaves a web_search_call of an earlier answer out of what Claude is sent', async () => {
    await serveAnthropic()
    const first = await (await harness!.post({ model: 'anthropic/claude-sonnet-4.5', input: 'Tides in Brest?', tools: [native()] })).json()
    const response = await harness!.post({
      model: 'anthropic/claude-sonnet-4.5',
      input: [{ type: 'message', role: 'user', content: 'Tides in Brest?' }, ...first.output, { type: 'message', role: 'user', content: 'And tomorrow?' }],
      tools: [native()],
    })
    expect(response.status).toBe(200)
    const sent = harness!.upstreams.anthropic!.requests[1]!.json
    expect(JSON.stringify(sent.messages)).not.toContain('web_search_call')
    expect(sent.messages.map((message: { role: string }) => message.role)).toEqual(['user', 'assistant', 'user'])
  })
})

describe('billing a native web search', () => {
  it("charges each search the provider ran at the endpoint's webSearch price, and GET /models lists that price", async () => {
    harness = await createResponsesHarness({ anthropic: {} }, { prices: [{ model: 'anthropic/claude-sonnet-4.5', pricing: { prompt: 0, completion: 0, webSearch: 0.01 } }] })
    harness.upstreams.anthropic!.setHandler((request) => (request.json?.stream ? sseFixture('anthropic', 'web-search.sse') : jsonFixture('anthropic', 'web-search.json')))
    const request = { model: 'anthropic/claude-sonnet-4.5', input: 'Tides in Brest?', tools: [native()] }
    const body = await (await harness.post(request)).json()
    expect(body.usage.cost).toBeCloseTo(0.01, 12)
    const events = await streamedEvents(request)
    expect(events.at(-1)!.response.usage.cost).toBeCloseTo(0.01, 12)
    const models = await harness.gateway.fetch(new Request('http://gateway.test/api/v1/models', { headers: { authorization: `Bearer ${harness.key}` } }))
    const claude = (await models.json()).data.find((model: { id: string }) => model.id === 'anthropic/claude-sonnet-4.5')
    expect(claude.pricing.web_search).toBe('0.01')
  })
})

describe('billing a native web search by default', () => {
  // Token prices zeroed so the cost is the searches alone; the catalog's per-search price is left as built.
  const FREE_TOKENS = { prompt: 0, completion: 0, cachedPrompt: 0, cacheWritePrompt: 0, cacheWrite1hPrompt: 0 }

  it("charges Claude's search at the built-in catalog's $10 per 1,000, whole and streamed", async () => {
    harness = await createResponsesHarness({ anthropic: {} }, { prices: [{ model: 'anthropic/claude-sonnet-4.5', pricing: FREE_TOKENS }] })
    harness.upstreams.anthropic!.setHandler((request) => (request.json?.stream ? sseFixture('anthropic', 'web-search.sse') : jsonFixture('anthropic', 'web-search.json')))
    const request = { model: 'anthropic/claude-sonnet-4.5', input: 'Tides in Brest?', tools: [native()] }
    const body = await (await harness.post(request)).json()
    expect(body.usage.server_tool_use_details.web_search_requests).toBe(1)
    expect(body.usage.cost).toBeCloseTo(0.01, 12)
    const events = await streamedEvents(request)
    expect(events.at(-1)!.response.usage.cost).toBeCloseTo(0.01, 12)
  })

  it("charges each of a Gemini 3 answer's search queries at $14 per 1,000", async () => {
    harness = await createResponsesHarness({ 'google-ai-studio': {} }, { prices: [{ model: 'google/gemini-3-flash-preview', pricing: FREE_TOKENS }] })
    harness.upstreams['google-ai-studio']!.setHandler(() => jsonFixture('gemini', 'web-search.json'))
    const body = await (await harness.post({ model: 'google/gemini-3-flash-preview', input: 'Tides in Brest?', tools: [native()] })).json()
    expect(body.usage.server_tool_use_details.web_search_requests).toBe(2)
    expect(body.usage.cost).toBeCloseTo(0.028, 12)
  })
})

describe("Claude's paused search turn (stop_reason: pause_turn)", () => {
  const servePaused = async () => {
    harness = await createResponsesHarness({ anthropic: {} }, { prices: [{ model: 'anthropic/claude-sonnet-4.5', pricing: { prompt: 0, completion: 0, webSearch: 0.01 } }] })
    harness.upstreams.anthropic!.setHandler((request) =>
      request.json?.stream ? sseFixture('anthropic', 'web-search-pause-turn.sse') : jsonFixture('anthropic', 'web-search-pause-turn.json'),
    )
  }
  const request = { model: 'anthropic/claude-sonnet-4.5', input: 'Tides in Brest?', tools: [native()] }
  const SEARCHES = [
    { type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'brest tide times', sources: [{ type: 'url', url: 'https://tides.example.org/brest' }, { type: 'url', url: 'https://sailing.example.net/guides/brittany-tides' }] } },
    { type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'brest tidal coefficients', sources: [{ type: 'url', url: 'https://coefficients.example.org/brest' }] } },
  ]
  const strip = (items: Array<Record<string, unknown>>) => items.map(({ id: _id, ...item }) => item)

  it('ends the response as incomplete with reason pause_turn, its searches shown and billed', async () => {
    await servePaused()
    const body = await (await harness!.post(request)).json()
    expect(body.status).toBe('incomplete')
    expect(body.incomplete_details).toEqual({ reason: 'pause_turn' })
    expect(strip(body.output)).toEqual([{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: "I'll look that up.", annotations: [], logprobs: [] }] }, ...SEARCHES])
    expect(body.usage.server_tool_use_details.web_search_requests).toBe(2)
    expect(body.usage.cost).toBeCloseTo(0.02, 12)
    // One upstream call: the gateway does not continue the paused turn.
    expect(harness!.upstreams.anthropic!.requests).toHaveLength(1)
  })

  it('streams the same answer, ending with response.incomplete', async () => {
    await servePaused()
    const events = await streamedEvents(request)
    const last = events.at(-1)!
    expect(last.type).toBe('response.incomplete')
    expect(last.response.incomplete_details).toEqual({ reason: 'pause_turn' })
    expect(strip(last.response.output).slice(1)).toEqual(SEARCHES)
    expect(last.response.usage.cost).toBeCloseTo(0.02, 12)
  })
})

describe('native web search beside a gateway-run tool', () => {
  it('renumbers the provider’s search events and citations after the earlier turns in a stream', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    const datetimeTurn = [
      'event: message_start',
      'data: {"type":"message_start","message":{"id":"msg_01Turn1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"usage":{"input_tokens":50,"output_tokens":1}}}',
      '',
      'event: content_block_start',
      'data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01Clock","name":"service_datetime","input":{}}}',
      '',
      'event: content_block_stop',
      'data: {"type":"content_block_stop","index":0}',
      '',
      'event: message_delta',
      'data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":12}}',
      '',
      'event: message_stop',
      'data: {"type":"message_stop"}',
      '',
      '',
    ].join('\n')
    harness.upstreams.anthropic!.setHandler((request) =>
      JSON.stringify(request.json.messages).includes('toolu_01Clock')
        ? sseFixture('anthropic', 'web-search.sse')
        : { headers: { 'content-type': 'text/event-stream' }, body: datetimeTurn },
    )
    const events = await streamedEvents({ model: 'anthropic/claude-sonnet-4.5', input: 'Tides in Brest today?', tools: [native(), { type: 'service:datetime' }] })
    const [, second] = harness.upstreams.anthropic!.requests
    expect(second!.json.tools.map((tool: { name: string }) => tool.name)).toEqual(['service_datetime', 'web_search'])
    const response = events.at(-1)!.response
    expect(response.output.map((item: { type: string }) => item.type)).toEqual(['service:datetime', 'message', 'web_search_call', 'message'])
    expect(events.filter((event) => event.type.startsWith('response.web_search_call.')).map((event) => event.output_index)).toEqual([2, 2, 2])
    expect(events.filter((event) => event.type === 'response.output_text.annotation.added').map((event) => event.output_index)).toEqual([3, 3])
    expect(response.output[3].content[0].annotations).toHaveLength(2)
    expect(response.usage.server_tool_use_details).toEqual({ tool_calls_requested: 1, tool_calls_executed: 1, web_search_requests: 1 })
  })
})

describe('native web search on OpenAI', () => {
  it("sends OpenAI's web_search tool with the domain filter, context size and location, and asks for the sources", async () => {
    await serveOpenAI()
    const response = await harness!.post({
      model: 'openai/gpt-4.1-mini',
      input: 'When does Artemis II launch?',
      tools: [native({ allowed_domains: ['*.nasa.gov'], search_context_size: 'high', user_location: { type: 'approximate', country: 'US' } })],
    })
    expect(response.status).toBe(200)
    const body = await response.json()
    const sent = harness!.upstreams.openai!.requests[0]!.json
    expect(sent.tools).toEqual([
      { type: 'web_search', filters: { allowed_domains: ['nasa.gov'] }, search_context_size: 'high', user_location: { type: 'approximate', country: 'US' } },
    ])
    expect(sent.include).toEqual(['web_search_call.action.sources'])
    expect(body.output[0]).toMatchObject({ type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'Artemis II launch date' } })
    expect(body.output[1].content[0].annotations).toEqual([expect.objectContaining({ type: 'url_citation', start_index: 60, end_index: 161 })])
    expect(body.usage.server_tool_use_details).toEqual({ tool_calls_requested: 0, tool_calls_executed: 0, web_search_requests: 1 })
  })

  it('streams the provider’s search events through', async () => {
    await serveOpenAI()
    const events = await streamedEvents({ model: 'openai/gpt-4.1-mini', input: 'When does Artemis II launch?', tools: [native()] })
    expect(events.filter((event) => event.type.startsWith('response.web_search_call.')).map((event) => event.type)).toEqual([
      'response.web_search_call.in_progress',
      'response.web_search_call.searching',
      'response.web_search_call.completed',
    ])
    expect(events.filter((event) => event.type === 'response.output_text.annotation.added')).toHaveLength(1)
    expect(events.at(-1)!.response.usage.server_tool_use_details.web_search_requests).toBe(1)
  })
})

describe('native web search on Gemini', () => {
  const serveGemini = async () => {
    harness = await createResponsesHarness({ 'google-ai-studio': {} })
    harness.upstreams['google-ai-studio']!.setHandler((request) =>
      request.url.includes(':streamGenerateContent') ? sseFixture('gemini', 'web-search.sse') : jsonFixture('gemini', 'web-search.json'),
    )
  }
  const TEXT = 'Brest has two high tides a day. The range can exceed seven metres at spring tides.'
  const TIDES = 'https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbF9wXE1brestTides0'
  const SAILING = 'https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbF9wXG7brittanySail1'
  const SOURCES = [
    { type: 'url', url: TIDES },
    { type: 'url', url: SAILING },
  ]

  it('grounds with Google Search and shows each query as a web_search_call, each supported sentence cited', async () => {
    await serveGemini()
    const response = await harness!.post({ model: 'google/gemini-2.5-flash', input: 'Tides in Brest?', tools: [native()] })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(harness!.upstreams['google-ai-studio']!.requests[0]!.json.tools).toEqual([{ google_search: {} }])
    const second = TEXT.indexOf('The range')
    expect(body.output).toEqual([
      {
        id: expect.stringMatching(/^msg_/),
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [
          {
            type: 'output_text',
            text: TEXT,
            annotations: [
              { type: 'url_citation', url: TIDES, title: 'tides.example.org', start_index: 0, end_index: 31 },
              { type: 'url_citation', url: SAILING, title: 'sailing.example.net', start_index: second, end_index: TEXT.length },
              { type: 'url_citation', url: TIDES, title: 'tides.example.org', start_index: second, end_index: TEXT.length },
            ],
            logprobs: [],
          },
        ],
      },
      { id: expect.stringMatching(/^ws_/), type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'brest tide times', sources: SOURCES } },
      { id: expect.stringMatching(/^ws_/), type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'brest tidal range spring tides', sources: SOURCES } },
    ])
    expect(body.usage.server_tool_use_details.web_search_requests).toBe(2)
  })

  it('streams the same items, the citations before the text part ends', async () => {
    await serveGemini()
    const request = { model: 'google/gemini-2.5-flash', input: 'Tides in Brest?', tools: [native()] }
    const wholeBody = await (await harness!.post(request)).json()
    const events = await streamedEvents(request)
    const types = events.map((event) => event.type)
    expect(types.indexOf('response.output_text.annotation.added')).toBeLessThan(types.indexOf('response.content_part.done'))
    expect(events.filter((event) => event.type === 'response.web_search_call.completed').map((event) => event.output_index)).toEqual([1, 2])
    const strip = (items: Array<Record<string, unknown>>) => items.map(({ id: _id, ...item }) => item)
    expect(strip(events.at(-1)!.response.output)).toEqual(strip(wholeBody.output))
  })

  it('refuses every setting, since Google Search grounding takes none', async () => {
    await serveGemini()
    const response = await harness!.post({ model: 'google/gemini-2.5-flash', input: 'hi', tools: [native({ allowed_domains: ['example.org'] })] })
    expect(response.status).toBe(400)
    expect((await response.json()).error.message).toBe('body.tools.0.parameters.allowed_domains: not supported by any endpoint of google/gemini-2.5-flash')
  })
})

describe('routing a native web search', () => {
  it('never chooses an endpoint that cannot run it, and is a 400 naming the field when none can', async () => {
    harness = await createResponsesHarness({ openai: {}, anthropic: {}, perplexity: {} })
    const refused = async (body: Record<string, unknown>, message: string) => {
      const response = await harness!.post({ input: 'hi', ...body })
      expect(response.status).toBe(400)
      expect((await response.json()).error.message).toBe(message)
    }
    // Chat Completions upstreams have no search tool of their own.
    await refused({ model: 'perplexity/sonar', tools: [native()] }, 'body.tools.0.parameters.engine: not supported by any endpoint of perplexity/sonar')
    // OpenAI's search has no blocked domains, Anthropic's no context size.
    await refused({ model: 'openai/gpt-4.1-mini', tools: [native({ excluded_domains: ['spam.example'] })] }, 'body.tools.0.parameters.excluded_domains: not supported by any endpoint of openai/gpt-4.1-mini')
    await refused({ model: 'openai/gpt-4.1-mini', tools: [native({ allowed_domains: ['nasa.gov/news'] })] }, 'body.tools.0.parameters.allowed_domains: not supported by any endpoint of openai/gpt-4.1-mini')
    await refused({ model: 'anthropic/claude-sonnet-4.5', tools: [native({ search_context_size: 'low' })] }, 'body.tools.0.parameters.search_context_size: not supported by any endpoint of anthropic/claude-sonnet-4.5')
    await refused({ model: 'anthropic/claude-sonnet-4.5', tools: [native({ max_results: 3 })] }, 'body.tools.0.parameters.max_results: not supported by the native search engine (a provider\'s own web search has no such setting)')
    for (const upstream of Object.values(harness.upstreams)) expect(upstream.requests).toHaveLength(0)

    // A fallback model whose provider can search is chosen over the first one, which cannot.
    harness.upstreams.anthropic!.setHandler(() => jsonFixture('anthropic', 'web-search.json'))
    const response = await harness.post({ model: 'perplexity/sonar', models: ['anthropic/claude-sonnet-4.5'], input: 'Tides in Brest?', tools: [native()] })
    expect(response.status).toBe(200)
    expect((await response.json()).model).toBe('anthropic/claude-sonnet-4.5')
    expect(harness.upstreams.perplexity!.requests).toHaveLength(0)
  })
})
