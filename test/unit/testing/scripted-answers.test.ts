/**
 * Scripted answers reach clients as real upstream answers do: the same items whole and streamed, a valid event
 * sequence, usage billed, and the finish status kept.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, readEvents, scriptedProvider, type ScriptedAnswer, type TestGateway } from '../../../src/testing'
import { assertValidEventSequence } from '../../helpers/stream-events'

let testGateway: TestGateway | undefined
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

const serve = async (reply: ScriptedAnswer) => {
  testGateway = await createTestGateway({ providers: { scripted: scriptedProvider({ reply }) } })
  return testGateway
}

/** The answer whole and streamed: the whole body, and the streamed events (checked for order) with their final response. */
const both = async (reply: ScriptedAnswer, body: Record<string, unknown> = {}) => {
  const gateway = await serve(reply)
  const whole = await gateway.responses({ input: 'hi', ...body })
  expect(whole.status).toBe(200)
  const events = await readEvents(await gateway.responses({ input: 'hi', ...body, stream: true }))
  assertValidEventSequence(events)
  return { whole: await whole.json(), events, streamed: events.at(-1)!.response }
}

const withoutIds = (items: Array<Record<string, unknown>>) => items.map(({ id: _id, call_id: _callId, ...item }) => item)

describe('a scripted answer', () => {
  it('sends text in the chunks given, one message whole or streamed', async () => {
    const { whole, events, streamed } = await both([{ type: 'text', text: ['Hel', 'lo'] }, { type: 'text', text: ', world' }])
    expect(whole.output).toEqual([
      { id: expect.stringMatching(/^msg_/), type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello, world', annotations: [], logprobs: [] }] },
    ])
    expect(events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta)).toEqual(['Hel', 'lo', ', world'])
    expect(withoutIds(streamed.output)).toEqual(withoutIds(whole.output))
    expect(streamed.status).toBe('completed')
  })

  it('takes a string as a whole text answer', async () => {
    const { whole } = await both('Just this')
    expect(whole.output[0].content).toEqual([{ type: 'output_text', text: 'Just this', annotations: [], logprobs: [] }])
  })

  it('calls functions with their arguments chunked, call ids given or made', async () => {
    const { whole, events, streamed } = await both([
      { type: 'function_call', name: 'get_weather', arguments: ['{"city":', '"Paris"}'], callId: 'call_paris' },
      { type: 'function_call', name: 'get_time' },
      { type: 'function_call_arguments', arguments: '{"zone":"CET"}' },
    ])
    expect(whole.output).toEqual([
      { id: expect.stringMatching(/^fc_/), type: 'function_call', status: 'completed', call_id: 'call_paris', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { id: expect.stringMatching(/^fc_/), type: 'function_call', status: 'completed', call_id: expect.stringMatching(/^call_/), name: 'get_time', arguments: '{"zone":"CET"}' },
    ])
    expect(events.filter((event) => event.type === 'response.function_call_arguments.delta').map((event) => event.delta)).toEqual([
      '{"city":',
      '"Paris"}',
      '{"zone":"CET"}',
    ])
    expect(withoutIds(streamed.output)).toEqual(withoutIds(whole.output))
  })

  it('reasons (a summary and a text per item), refuses, and counts every kind of token', async () => {
    const { whole, events, streamed } = await both([
      { type: 'reasoning', summary: ['Think', 'ing'], text: 'Step one' },
      { type: 'reasoning', summary: 'Again' },
      { type: 'refusal', refusal: 'I cannot help with that' },
      { type: 'usage', inputTokens: 100, cachedTokens: 40, outputTokens: 30, reasoningTokens: 20 },
    ])
    expect(whole.output.map((item: { type: string }) => item.type)).toEqual(['reasoning', 'reasoning', 'message'])
    expect(whole.output[0]).toMatchObject({ summary: [{ type: 'summary_text', text: 'Thinking' }], content: [{ type: 'reasoning_text', text: 'Step one' }] })
    expect(whole.output[1]).toMatchObject({ summary: [{ type: 'summary_text', text: 'Again' }] })
    expect(whole.output[2].content).toEqual([{ type: 'refusal', refusal: 'I cannot help with that' }])
    expect(events.filter((event) => event.type === 'response.reasoning_summary_text.delta').map((event) => event.delta)).toEqual(['Think', 'ing', 'Again'])
    const usage = {
      input_tokens: 100,
      input_tokens_details: { cached_tokens: 40 },
      output_tokens: 30,
      output_tokens_details: { reasoning_tokens: 20 },
      total_tokens: 130,
    }
    expect(whole.usage).toMatchObject(usage)
    expect(streamed.usage).toMatchObject(usage)
    expect(whole.usage.cost).toBeGreaterThan(0)
  })

  it('ends incomplete with the reason given, whole (status) and streamed (response.incomplete)', async () => {
    const { whole, events } = await both([
      { type: 'text', text: 'Cut sho' },
      { type: 'finish', status: 'incomplete', reason: 'max_output_tokens' },
      { type: 'usage', outputTokens: 3 },
    ])
    expect(whole).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage: { output_tokens: 3 } })
    expect(whole.output[0].status).toBe('incomplete')
    expect(events.at(-1)).toMatchObject({ type: 'response.incomplete', response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } } })
  })

  it('bills nothing and completes when the script says neither', async () => {
    const { whole } = await both('Hi')
    expect(whole).toMatchObject({ status: 'completed', usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0, cost: 0 } })
  })
})
