/**
 * Server tools through the official `openai` SDK against a gateway on a real node:http server: `responses.create`
 * and `responses.stream` with `service:datetime`, and with `service:web_search` over a loopback SearXNG answering
 * in its JSON format, bounded by a stop condition. A scripted model calls the tools turn by turn.
 */

import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { OpenRouter } from '@openrouter/sdk'
import OpenAI from 'openai'
import type { ResponseCreateParamsNonStreaming, ResponseOutputMessage, ResponseStreamEvent } from 'openai/resources/responses/responses'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { toNodeListener } from '../../src/adapters/node'
import { createTestGateway, scriptedProvider, type ScriptedProvider, type ScriptedReply, type TestGateway } from '../../src/testing'
import { startUpstream, type Upstream } from '../helpers/upstream'

const NOW = new Date('2025-03-01T09:04:05Z')
const ANSWER = 'Two high tides a day in Brest (https://tides.example.org/brest).'

let searxng: Upstream
let testGateway: TestGateway | undefined
let server: Server | undefined

beforeAll(async () => {
  const body = readFileSync(join(__dirname, '../fixtures/search/searxng-search.json'), 'utf8')
  searxng = await startUpstream(() => ({ headers: { 'content-type': 'application/json' }, body }))
})
afterAll(() => searxng.close())
afterEach(async () => {
  if (server) await new Promise((resolve) => server!.close(resolve))
  server = undefined
  await testGateway?.close()
  testGateway = undefined
})

/** The gateway on a loopback HTTP server, and an SDK client for it. */
const start = async (reply: ScriptedReply): Promise<{ client: OpenAI; model: ScriptedProvider }> => {
  const model = scriptedProvider({ reply })
  testGateway = await createTestGateway({ providers: { scripted: model }, now: () => NOW, serverTools: { webSearch: { searxng: { baseURL: searxng.url, pricePerRequest: 0.002 } } } })
  server = createServer(toNodeListener(testGateway.gateway))
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { client: new OpenAI({ baseURL: `http://127.0.0.1:${port}/api/v1`, apiKey: testGateway.regularKey, maxRetries: 0 }), model }
}

// The gateway's own tool kinds and fields, which the SDK's types do not know.
const params = (body: Record<string, unknown>) => ({ model: 'test/model', input: 'Tell me', ...body }) as unknown as ResponseCreateParamsNonStreaming

/** Calls the datetime tool first, then answers with the time it was given. */
const datetimeModel: ScriptedReply = (call) => {
  const result = (call.input as Array<{ type?: string; output?: string }>).find((item) => item.type === 'function_call_output')
  if (!result) return [{ type: 'function_call', name: 'service_datetime', arguments: '{"timezone":"Europe/Paris"}' }, { type: 'usage', inputTokens: 40, outputTokens: 5 }]
  return [{ type: 'text', text: ['It is ', JSON.parse(result.output!).datetime.slice(11, 16), ' in Paris.'] }, { type: 'usage', inputTokens: 60, outputTokens: 7 }]
}

/** Searches until tool calls are disabled, then answers citing a page. */
const searchingModel: ScriptedReply = (call) =>
  call.request.tool_choice === 'none'
    ? [{ type: 'text', text: ANSWER }, { type: 'usage', inputTokens: 80, outputTokens: 12 }]
    : [{ type: 'function_call', name: 'service_web_search', arguments: '{"query":"tides in brest"}' }, { type: 'usage', inputTokens: 30, outputTokens: 6 }]

describe('service:datetime through the openai SDK', () => {
  it('responses.create: the tool item, then the answer, with both turns in the usage', async () => {
    const { client, model } = await start(datetimeModel)
    const response = await client.responses.create(params({ tools: [{ type: 'service:datetime' }] }))
    expect(response.output_text).toBe('It is 10:04 in Paris.')
    expect(response.output[0]).toMatchObject({ type: 'service:datetime', status: 'completed', datetime: '2025-03-01T10:04:05+01:00', timezone: 'Europe/Paris' })
    expect(response.usage).toMatchObject({ input_tokens: 100, output_tokens: 12, server_tool_use_details: { tool_calls_requested: 1, tool_calls_executed: 1 } })
    expect((response as unknown as { max_tool_calls: number }).max_tool_calls).toBe(30)
    expect(model.calls).toHaveLength(2)
  })

  it('responses.stream: the SDK assembles the tool item and the streamed answer', async () => {
    const { client } = await start(datetimeModel)
    const stream = client.responses.stream(params({ tools: [{ type: 'service:datetime' }] }) as never)
    const types: Array<ResponseStreamEvent['type']> = []
    let text = ''
    for await (const event of stream) {
      types.push(event.type)
      if (event.type === 'response.output_text.delta') text += event.delta
    }
    const final = await stream.finalResponse()
    expect(text).toBe('It is 10:04 in Paris.')
    expect((final.output[1] as ResponseOutputMessage).content[0]).toMatchObject({ type: 'output_text', text: 'It is 10:04 in Paris.' })
    expect(final.output.map((item) => item.type)).toEqual(['service:datetime', 'message'])
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.output_item.done'])
    expect(types.at(-1)).toBe('response.completed')
  })
})

describe('service:web_search through the openai SDK, stopped by a condition', () => {
  const body = params({ tools: [{ type: 'service:web_search' }], stop_server_tools_when: [{ type: 'step_count_is', step_count: 1 }] })

  it('responses.create: one search, one last turn without tools, and the page cited', async () => {
    const { client, model } = await start(searchingModel)
    const response = await client.responses.create(body)
    expect(model.calls.map((call) => call.request.tool_choice)).toEqual([undefined, 'none'])
    expect(response.output[0]).toMatchObject({ type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'tides in brest' } })
    const message = response.output[1] as ResponseOutputMessage
    expect(response.output_text).toBe(ANSWER)
    expect(message.content[0]).toMatchObject({ annotations: [{ type: 'url_citation', url: 'https://tides.example.org/brest', title: 'Brest tide times and tables' }] })
    expect(response.usage).toMatchObject({ input_tokens: 110, server_tool_use_details: { web_search_requests: 1 } })
    expect((response.usage as unknown as { cost: number }).cost).toBeCloseTo(110e-6 + 36e-6 + 0.002, 12)
    expect(searxng.requests.at(-1)!.url).toBe('/search?q=tides+in+brest&format=json')
  })

  it('responses.stream: the web_search_call events in order, and the cited answer', async () => {
    const { client } = await start(searchingModel)
    const stream = client.responses.stream(body as never)
    const types: string[] = []
    for await (const event of stream) types.push(event.type)
    const final = await stream.finalResponse()
    expect(types.filter((type) => type.startsWith('response.web_search_call.'))).toEqual([
      'response.web_search_call.in_progress',
      'response.web_search_call.searching',
      'response.web_search_call.completed',
    ])
    expect(types).toContain('response.output_text.annotation.added')
    expect((final.output[1] as ResponseOutputMessage).content[0]).toMatchObject({ text: ANSWER, annotations: [{ type: 'url_citation', url: 'https://tides.example.org/brest' }] })
    expect(final.usage).toMatchObject({ server_tool_use_details: { tool_calls_executed: 1, web_search_requests: 1 } })
  })
})

/** Searches the deferred tools first, with some text, then calls the one it found. */
const toolSearchingModel: ScriptedReply = (call) => {
  const found = (call.tools as Array<{ name?: string }>).some((tool) => tool.name === 'get_weather_forecast')
  return found
    ? [{ type: 'function_call', name: 'get_weather_forecast', arguments: '{"city":"Brest"}' }]
    : [{ type: 'text', text: 'Let me find a tool.' }, { type: 'function_call', name: 'service_tool_search', arguments: '{"query":"weather"}' }]
}

describe('service:tool_search through the openai SDK', () => {
  const body = params({
    tools: [
      { type: 'function', name: 'lookup_order', description: 'Finds an order', parameters: { type: 'object', properties: {} } },
      { type: 'function', name: 'get_weather_forecast', description: 'Weather forecast for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } }, defer_loading: true },
      { type: 'service:tool_search' },
    ],
  })

  it('responses.stream: the SDK assembles the tool search items in place, then the call of the tool found', async () => {
    const { client } = await start(toolSearchingModel)
    const stream = client.responses.stream(body as never)
    const added: Array<[number, string]> = []
    for await (const event of stream) if (event.type === 'response.output_item.added') added.push([event.output_index, event.item.type])
    const final = await stream.finalResponse()
    expect(added).toEqual([
      [0, 'message'],
      [1, 'tool_search_call'],
      [2, 'tool_search_output'],
      [3, 'function_call'],
    ])
    expect(final.output.map((item) => item.type)).toEqual(['message', 'tool_search_call', 'tool_search_output', 'function_call'])
    expect(final.output[2]).toMatchObject({ type: 'tool_search_output', execution: 'server', status: 'completed', tools: [{ name: 'get_weather_forecast' }] })
    expect(final.output[3]).toMatchObject({ type: 'function_call', name: 'get_weather_forecast', arguments: '{"city":"Brest"}' })
  })
})

describe('service:datetime through @openrouter/sdk', () => {
  /** An OpenRouter client for the gateway `start` put up (its zod schemas judge every object and event). */
  const openRouterFor = (client: OpenAI) => new OpenRouter({ serverURL: client.baseURL, apiKey: testGateway!.regularKey, retryConfig: { strategy: 'none' }, timeoutMs: 30_000 })
  // The SDK sends only OpenRouter's name of a server tool (its tools union is closed), which the gateway takes as `service:datetime`.
  const request = { model: 'test/model', input: 'Tell me', tools: [{ type: 'openrouter:datetime' as const, parameters: { timezone: 'Europe/Paris' } }] }

  it('responses.send: the answer and usage pass its schemas; the service:datetime item reads as an unknown item, whole', async () => {
    const { client, model } = await start(datetimeModel)
    const result = await openRouterFor(client).responses.send({ responsesRequest: request })
    if (Symbol.asyncIterator in result) throw new Error('expected a Response object, got a stream')
    expect(model.calls[0]!.tools).toEqual([expect.objectContaining({ type: 'function', name: 'service_datetime' })])
    expect(result.output[0]).toMatchObject({ isUnknown: true, raw: { type: 'service:datetime', status: 'completed', timezone: 'Europe/Paris' } })
    expect(result.output[1]).toMatchObject({ type: 'message', content: [{ type: 'output_text', text: 'It is 10:04 in Paris.' }] })
    expect(result.usage).toMatchObject({ inputTokens: 100, outputTokens: 12 })
    // Every server-tool run reports its tool calls in usage (docs/decisions.md, Server tools).
    expect(result.usage?.serverToolUseDetails).toEqual({ toolCallsRequested: 1, toolCallsExecuted: 1, webSearchRequests: 0 })
  })

  it('responses.send with stream: true: every event passes its schema, the answer streams after the tool item', async () => {
    const { client } = await start(datetimeModel)
    const result = await openRouterFor(client).responses.send({ responsesRequest: { ...request, stream: true } })
    if (!(Symbol.asyncIterator in result)) throw new Error('expected a stream, got a Response object')
    const events: Array<{ type: string; delta?: string; isUnknown?: boolean }> = []
    for await (const event of result) events.push(event as { type: string; delta?: string })
    expect(events.filter((event) => event.isUnknown)).toEqual([])
    expect(events.map((event) => event.type).slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.output_item.done'])
    expect(events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta).join('')).toBe('It is 10:04 in Paris.')
    expect(events.at(-1)!.type).toBe('response.completed')
  })
})
