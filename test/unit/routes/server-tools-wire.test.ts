/**
 * Server tools on `/chat/completions` and `/messages`: the gateway runs the loop as on `/responses`; the client
 * sees the final assistant message (each turn's text apart), never the server tool's call, and the usage of
 * every turn. Web citations become Chat Completions `annotations`.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, scriptedProvider, type ScriptedProvider, type ScriptedReply, type TestGateway } from '../../../src/testing'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture, sseFixture } from '../../helpers/upstream'

let testGateway: TestGateway | undefined
let harness: ResponsesHarness | undefined
afterEach(async () => {
  await testGateway?.close()
  await harness?.close()
  testGateway = undefined
  harness = undefined
})

const NOW = new Date('2025-03-01T09:04:05.250Z')
const usage = (inputTokens: number, outputTokens: number) => ({ type: 'usage' as const, inputTokens, outputTokens })
const TIME_THEN_ANSWER: ScriptedReply[] = [
  [{ type: 'text', text: 'Let me check.' }, { type: 'function_call', name: 'service_datetime', arguments: '{"timezone":"Europe/Paris"}', callId: 'call_time' }, usage(100, 10)],
  [{ type: 'text', text: ['It is ', '10:04 in Paris.'] }, usage(150, 8)],
]
const DATETIME = [{ type: 'service:datetime', parameters: { timezone: 'UTC' } }]
const HI = [{ role: 'user', content: 'What time is it in Paris?' }]

let model: ScriptedProvider
const serve = async (replies: ScriptedReply[]) => {
  model = scriptedProvider({ replies })
  testGateway = await createTestGateway({ providers: { scripted: model }, now: () => NOW })
}
const post = (path: string, body: Record<string, unknown>) => testGateway!.call('POST', path, { key: testGateway!.regularKey, json: body })
const dataOf = async (response: Response) => {
  expect(response.status).toBe(200)
  return (await readSseEvents(response)).events.map((event) => event.data)
}

describe('server tools on /chat/completions', () => {
  it('runs the loop and answers with the final message, the turns apart, the tool calls unseen, all turns billed', async () => {
    await serve(TIME_THEN_ANSWER)
    const response = await post('/chat/completions', { model: 'test/model', messages: HI, tools: DATETIME })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body.choices).toEqual([{ index: 0, message: { role: 'assistant', content: 'Let me check.\n\nIt is 10:04 in Paris.', refusal: null }, logprobs: null, finish_reason: 'stop' }])
    expect(body.usage).toMatchObject({ prompt_tokens: 250, completion_tokens: 18, total_tokens: 268 })
    expect(model.calls).toHaveLength(2)
    expect(model.calls[0]!.tools).toEqual([expect.objectContaining({ type: 'function', name: 'service_datetime' })])
    expect((model.calls[1]!.input as Array<Record<string, unknown>>).at(-1)).toMatchObject({ type: 'function_call_output', call_id: 'call_time', output: expect.stringContaining('"timezone":"Europe/Paris"') })
  })

  it('streams the same message, the separator before the later turn, and the usage of every turn', async () => {
    await serve(TIME_THEN_ANSWER)
    const chunks = await dataOf(await post('/chat/completions', { model: 'test/model', messages: HI, tools: DATETIME, stream: true }))
    expect(chunks.at(-1)).toBe('[DONE]')
    const deltas = chunks.slice(0, -1).flatMap((chunk) => chunk.choices.map((choice: { delta: Record<string, unknown> }) => choice.delta))
    expect(deltas.map((delta) => delta.content ?? '').join('')).toBe('Let me check.\n\nIt is 10:04 in Paris.')
    expect(deltas.some((delta) => 'tool_calls' in delta)).toBe(false)
    expect(chunks.at(-3).choices[0].finish_reason).toBe('stop')
    expect(chunks.at(-2).usage).toMatchObject({ prompt_tokens: 250, completion_tokens: 18 })
  })

  it("refuses a server tool's bad parameter and an unknown kind in the route's error shape, naming the field", async () => {
    await serve([])
    const bad = await post('/chat/completions', { model: 'test/model', messages: HI, tools: [{ type: 'service:datetime', parameters: { timezone: 'Mars/Olympus' } }] })
    expect(bad.status).toBe(400)
    expect((await bad.json()).error.message).toBe('body.tools.0.parameters.timezone: must be an IANA time zone name such as Europe/Paris')
    const unknown = await post('/chat/completions', { model: 'test/model', messages: HI, tools: [{ type: 'service:nope' }] })
    expect((await unknown.json()).error.message).toMatch(/^body\.tools\.0: server tool "service:nope" is not available on this gateway/)
    const provider = await post('/chat/completions', { model: 'test/model', messages: HI, tools: [{ type: 'web_search' }] })
    expect((await provider.json()).error.message).toBe('body.tools.0.type: must be "function" or a server tool ("service:…")')
    expect(model.calls).toHaveLength(0)
  })
})

describe("OpenRouter's name of a server tool", () => {
  it('takes openrouter:datetime as service:datetime on /responses and /chat/completions, and answers with service: items', async () => {
    await serve([...TIME_THEN_ANSWER, ...TIME_THEN_ANSWER])
    const tools = [{ type: 'openrouter:datetime', parameters: { timezone: 'UTC' } }]
    const responses = await (await post('/responses', { model: 'test/model', input: 'Time?', tools })).json()
    expect(responses.output[1]).toMatchObject({ type: 'service:datetime', status: 'completed' })
    const chat = await (await post('/chat/completions', { model: 'test/model', messages: HI, tools })).json()
    expect(chat.choices[0].message.content).toBe('Let me check.\n\nIt is 10:04 in Paris.')
    const bad = await post('/responses', { model: 'test/model', input: 'x', tools: [{ type: 'openrouter:datetime', parameters: { zone: 'UTC' } }] })
    expect((await bad.json()).error.message).toBe('body.tools.0.parameters.zone: unknown field')
  })
})

describe('server tools on /messages', () => {
  it('answers with a text block per turn, whole and streamed, the tool calls unseen', async () => {
    await serve([...TIME_THEN_ANSWER, ...TIME_THEN_ANSWER])
    const body = await (await post('/messages', { model: 'test/model', max_tokens: 100, messages: HI, tools: DATETIME })).json()
    expect(body.content).toEqual([
      { type: 'text', text: 'Let me check.' },
      { type: 'text', text: 'It is 10:04 in Paris.' },
    ])
    expect(body.stop_reason).toBe('end_turn')
    expect(body.usage).toMatchObject({ input_tokens: 250, output_tokens: 18 })
    const events = await dataOf(await post('/messages', { model: 'test/model', max_tokens: 100, messages: HI, tools: DATETIME, stream: true }))
    expect(events.filter((event) => event.type === 'content_block_start').map((event) => event.content_block.type)).toEqual(['text', 'text'])
    expect(events.filter((event) => event.type === 'content_block_delta').map((event) => event.delta.text).join('')).toBe('Let me check.It is 10:04 in Paris.')
    expect(events.find((event) => event.type === 'message_delta').delta.stop_reason).toBe('end_turn')
  })

  it('still refuses Anthropic server tools, naming the gateway ones that work', async () => {
    await serve([])
    const response = await post('/messages', { model: 'test/model', max_tokens: 100, messages: HI, tools: [{ type: 'web_search_20250305', name: 'web_search' }] })
    expect(response.status).toBe(400)
    expect((await response.json()).error.message).toContain('must be a custom tool (name, input_schema) or one of the gateway\'s server tools ("service:…"): Anthropic\'s server tools are not supported')
  })
})

describe('web citations on /chat/completions', () => {
  const CITATION = {
    type: 'url_citation',
    url_citation: {
      url: 'https://www.nasa.gov/news-release/nasa-artemis-ii-crew-launch-update/?utm_source=openai',
      title: 'NASA Provides Update on Artemis II Crew Launch',
      start_index: 60,
      end_index: 161,
    },
  }

  it('carries the answer’s url_citation annotations in message.annotations, whole and streamed', async () => {
    harness = await createResponsesHarness({ openai: {} })
    const chat = (stream: boolean) =>
      harness!.gateway.fetch(
        new Request('http://gateway.test/api/v1/chat/completions', {
          method: 'POST',
          headers: { authorization: `Bearer ${harness!.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'When is Artemis II?' }], stream }),
        }),
      )
    harness.upstreams.openai!.setHandler(() => jsonFixture('openai', 'web-search.json'))
    const body = await (await chat(false)).json()
    expect(body.choices[0].message.annotations).toEqual([CITATION])
    harness.upstreams.openai!.setHandler(() => sseFixture('openai', 'web-search.sse'))
    const chunks = await dataOf(await chat(true))
    const annotations = chunks.slice(0, -1).flatMap((chunk) => chunk.choices.flatMap((choice: { delta: { annotations?: unknown[] } }) => choice.delta.annotations ?? []))
    expect(annotations).toEqual([CITATION])
  })
})
