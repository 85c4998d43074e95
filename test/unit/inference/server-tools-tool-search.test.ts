/**
 * `service:tool_search` with `defer_loading` function tools: deferred tools are withheld from the model until it
 * searches for them; the tools found are offered from its next turn on; the client sees OpenAI's
 * `tool_search_call` and `tool_search_output` items, whole and streamed; the spec's rules are 400s.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, readEvents, scriptedProvider, type ScriptedCall, type ScriptedReply, type TestGateway } from '../../../src/testing'
import { assertValidEventSequence } from '../../helpers/stream-events'

let testGateway: TestGateway | undefined
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

const fn = (name: string, description: string, extra: Record<string, unknown> = {}) => ({
  type: 'function',
  name,
  description,
  parameters: { type: 'object', properties: { city: { type: 'string' } } },
  ...extra,
})
const TOOLS = [
  fn('lookup_order', 'Finds a customer order by its number'),
  fn('get_weather_forecast', 'Weather forecast for a city, by day', { defer_loading: true }),
  fn('convertCurrency', 'Converts an amount between two currencies', { defer_loading: true }),
  fn('book_table', 'Books a restaurant table', { defer_loading: true }),
  { type: 'service:tool_search', parameters: { max_results: 1 } },
]
const searchCall = (query: string, callId = 'call_search') => ({ type: 'function_call' as const, name: 'service_tool_search', arguments: JSON.stringify({ query }), callId })
const weatherCall = { type: 'function_call' as const, name: 'get_weather_forecast', arguments: '{"city":"Brest"}', callId: 'call_weather' }

const serve = async (replies: ScriptedReply[]) => {
  const model = scriptedProvider({ replies })
  testGateway = await createTestGateway({ providers: { scripted: model } })
  return model
}
const namesOf = (call: ScriptedCall) => (call.tools as Array<{ name?: string; type: string }>).map((tool) => tool.name ?? tool.type)
const resultsOf = (call: ScriptedCall) =>
  (call.input as Array<Record<string, unknown>>).filter((item) => item.type === 'function_call_output').map((item) => String(item.output))

describe('service:tool_search', () => {
  it('withholds deferred tools, offers what the search found from the next turn, and shows both tool search items', async () => {
    const model = await serve([[searchCall('weather forecast')], [weatherCall]])
    const response = await testGateway!.responses({ input: 'Weather in Brest?', tools: TOOLS })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(namesOf(model.calls[0]!)).toEqual(['lookup_order', 'service_tool_search'])
    expect(namesOf(model.calls[1]!)).toEqual(['lookup_order', 'service_tool_search', 'get_weather_forecast'])
    // What the upstream is sent carries no defer_loading: honouring it is the gateway's job.
    expect(JSON.stringify(model.calls.map((call) => call.tools))).not.toContain('defer_loading')
    expect(resultsOf(model.calls[1]!)).toEqual(['Tools found for "weather forecast" (you can call them from your next step):\n- get_weather_forecast: Weather forecast for a city, by day'])
    expect(body.output).toEqual([
      { type: 'tool_search_call', id: expect.stringMatching(/^ts_/), call_id: 'call_search', execution: 'server', status: 'completed', arguments: { query: 'weather forecast' } },
      {
        type: 'tool_search_output',
        id: expect.stringMatching(/^tso_/),
        call_id: 'call_search',
        execution: 'server',
        status: 'completed',
        tools: [fn('get_weather_forecast', 'Weather forecast for a city, by day', { defer_loading: true })],
      },
      expect.objectContaining({ type: 'function_call', name: 'get_weather_forecast', call_id: 'call_weather' }),
    ])
    expect(body.usage.server_tool_use_details).toEqual({ tool_calls_requested: 1, tool_calls_executed: 1, web_search_requests: 0 })
  })

  it('matches names by their words, with prefixes and typos', async () => {
    const model = await serve([[searchCall('currency convertr', 'c1'), searchCall('restaurant', 'c2')], 'ok'])
    await testGateway!.responses({ input: 'hi', tools: TOOLS })
    expect(namesOf(model.calls[1]!)).toEqual(['lookup_order', 'service_tool_search', 'convertCurrency', 'book_table'])
  })

  it('streams the two items in place of the call, the items after them moved along', async () => {
    await serve([[searchCall('weather'), { type: 'text', text: 'Searching.' }], [weatherCall], [searchCall('weather'), { type: 'text', text: 'Searching.' }], [weatherCall]])
    const wholeBody = await (await testGateway!.responses({ input: 'Weather?', tools: TOOLS })).json()
    const events = await readEvents(await testGateway!.responses({ input: 'Weather?', tools: TOOLS, stream: true }))
    assertValidEventSequence(events)
    const added = events.filter((event) => event.type === 'response.output_item.added').map((event) => [event.output_index, event.item.type])
    // Added in output order: the search's second item with its first, before the text after them.
    expect(added).toEqual([
      [0, 'tool_search_call'],
      [1, 'tool_search_output'],
      [2, 'message'],
      [3, 'function_call'],
    ])
    const done = events.filter((event) => event.type === 'response.output_item.done')
    expect(done.find((event) => event.output_index === 1)!.item.id).toBe(events.find((event) => event.type === 'response.output_item.added' && event.output_index === 1)!.item.id)
    const response = events.at(-1)!.response
    const strip = (items: Array<Record<string, unknown>>) => items.map(({ id: _id, ...item }) => item)
    expect(strip(response.output)).toEqual(strip(wholeBody.output))
    expect(response.output.map((item: { type: string }) => item.type)).toEqual(['tool_search_call', 'tool_search_output', 'message', 'function_call'])
  })

  it('keeps the tools found in an earlier response offered when its items come back in the input', async () => {
    const model = await serve([[searchCall('weather')], [weatherCall], 'It will rain.'])
    const first = await (await testGateway!.responses({ input: 'Weather in Brest?', tools: TOOLS })).json()
    const input = [{ type: 'message', role: 'user', content: 'Weather in Brest?' }, ...first.output, { type: 'function_call_output', call_id: 'call_weather', output: 'rain' }]
    const response = await testGateway!.responses({ input, tools: TOOLS })
    expect(response.status).toBe(200)
    const third = model.calls[2]!
    expect(namesOf(third)).toEqual(['lookup_order', 'service_tool_search', 'get_weather_forecast'])
    expect((third.input as Array<Record<string, unknown>>).slice(1, 3)).toEqual([
      { type: 'function_call', call_id: 'call_search', name: 'service_tool_search', arguments: '{"query":"weather"}' },
      { type: 'function_call_output', call_id: 'call_search', output: 'Tools found: get_weather_forecast' },
    ])
  })

  it("leaves defer_loading to a provider's own tool_search, beside other server tools", async () => {
    const model = scriptedProvider({ replies: ['ok'], providerTools: ['tool_search'] })
    testGateway = await createTestGateway({ providers: { scripted: model } })
    const tools = [fn('a', 'A'), fn('b', 'B', { defer_loading: true }), { type: 'tool_search' }, { type: 'service:datetime' }]
    const response = await testGateway!.responses({ input: 'hi', tools })
    expect(response.status).toBe(200)
    expect(model.calls[0]!.tools).toEqual([fn('a', 'A'), fn('b', 'B', { defer_loading: true }), { type: 'tool_search' }, expect.objectContaining({ name: 'service_datetime' })])
  })

  it('refuses what the spec rules out with a 400 naming it', async () => {
    const model = await serve([])
    const refused = async (tools: unknown[], message: string) => {
      const response = await testGateway!.responses({ input: 'hi', tools })
      expect(response.status).toBe(400)
      expect((await response.json()).error.message).toEqual(message)
    }
    await refused([fn('a', 'A'), fn('b', 'B', { defer_loading: true })], 'body.tools.1.defer_loading: a deferred tool needs the service:tool_search tool, which finds it for the model')
    await refused([fn('b', 'B', { defer_loading: true }), { type: 'service:tool_search' }], 'body.tools: at least one tool besides service:tool_search must not be deferred (defer_loading)')
    await refused([fn('a', 'A'), { type: 'service:tool_search' }], 'body.tools.1: service:tool_search has nothing to search: mark the function tools it may find with defer_loading: true')
    await refused([fn('a', 'A'), fn('b', 'B', { defer_loading: true }), { type: 'service:tool_search', parameters: { max_results: 0 } }], expect.stringMatching(/^body\.tools\.2\.parameters\.max_results: /) as unknown as string)
    const response = await testGateway!.responses({ input: 'hi', tools: TOOLS, tool_choice: { type: 'function', name: 'book_table' } })
    expect((await response.json()).error.message).toBe('body.tool_choice: "book_table" is deferred (defer_loading), so the model cannot call it before service:tool_search finds it')
    expect(model.calls).toHaveLength(0)
  })
})
