/**
 * The server-tool loop: a scripted upstream calls `service:datetime` turn by turn, and the gateway runs the calls,
 * feeds the results back and answers with every turn's items and usage, whole and streamed alike.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, gate, readEvents, scriptedProvider, type ScriptedCall, type ScriptedReply, type TestGateway, type TestGatewayOptions } from '../../../src/testing'
import { assertValidEventSequence } from '../../helpers/stream-events'

let testGateway: TestGateway | undefined
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

// 09:04:05 UTC is 10:04:05 in Paris (UTC+1 in March).
const NOW = new Date('2025-03-01T09:04:05.250Z')
const DATETIME = { type: 'service:datetime' }

const callDatetime = (timezone?: string, callId?: string) => ({
  type: 'function_call' as const,
  name: 'service_datetime',
  arguments: timezone === undefined ? '{}' : JSON.stringify({ timezone }),
  ...(callId ? { callId } : {}),
})
const usage = (inputTokens: number, outputTokens: number) => ({ type: 'usage' as const, inputTokens, outputTokens })

const serve = async (replies: ScriptedReply[], options: TestGatewayOptions = {}) => {
  const model = scriptedProvider({ replies })
  testGateway = await createTestGateway({ providers: { scripted: model }, now: () => NOW, ...options })
  return { model, gateway: testGateway }
}

const whole = async (body: Record<string, unknown>) => {
  const response = await testGateway!.responses({ input: 'What time is it?', ...body })
  expect(response.status).toBe(200)
  return response.json()
}

const streamed = async (body: Record<string, unknown>) => {
  const events = await readEvents(await testGateway!.responses({ input: 'What time is it?', ...body, stream: true }))
  assertValidEventSequence(events)
  return { events, response: events.at(-1)!.response }
}

const withoutIds = (items: Array<Record<string, unknown>>) => items.map(({ id: _id, call_id: _callId, ...item }) => item)
const toolInput = (call: ScriptedCall) => (call.input as Array<Record<string, unknown>>).slice(1)

const TIME_THEN_ANSWER: ScriptedReply[] = [
  [callDatetime('Europe/Paris', 'call_time'), usage(100, 10)],
  [{ type: 'text', text: ['It is ', '10:04 in Paris.'] }, usage(150, 8)],
]

describe('service:datetime through the loop', () => {
  it('runs the call, feeds the result back and answers with the tool item before the text', async () => {
    const { model } = await serve(TIME_THEN_ANSWER)
    const body = await whole({ tools: [DATETIME] })
    expect(body.status).toBe('completed')
    expect(body.output).toEqual([
      { type: 'service:datetime', id: expect.stringMatching(/^dt_/), status: 'completed', datetime: '2025-03-01T10:04:05+01:00', timezone: 'Europe/Paris' },
      { type: 'message', id: expect.any(String), role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'It is 10:04 in Paris.', annotations: [], logprobs: [] }] },
    ])
    expect(model.calls).toHaveLength(2)
    // The model sees the server tool as a function tool, every turn.
    for (const call of model.calls) {
      expect(call.tools).toEqual([
        expect.objectContaining({ type: 'function', name: 'service_datetime', parameters: expect.objectContaining({ type: 'object' }) }),
      ])
    }
    expect(toolInput(model.calls[1]!)).toEqual([
      expect.objectContaining({ type: 'function_call', call_id: 'call_time', name: 'service_datetime', arguments: '{"timezone":"Europe/Paris"}' }),
      { type: 'function_call_output', call_id: 'call_time', output: JSON.stringify({ datetime: '2025-03-01T10:04:05+01:00', timezone: 'Europe/Paris', weekday: 'Saturday' }) },
    ])
    // Both turns' tokens, each at the test price (1e-6 per input token, 2e-6 per output token).
    expect(body.usage).toMatchObject({
      input_tokens: 250,
      output_tokens: 18,
      total_tokens: 268,
      cost: 250e-6 + 36e-6,
      server_tool_use_details: { tool_calls_requested: 1, tool_calls_executed: 1, web_search_requests: 0 },
    })
    expect(body.max_tool_calls).toBe(30)
  })

  it('uses the tool parameters timezone by default, and UTC without one', async () => {
    const { model } = await serve([[callDatetime(undefined, 'call_a')], 'ok', [callDatetime(undefined, 'call_b')], 'ok'])
    const tokyo = await whole({ tools: [{ type: 'service:datetime', parameters: { timezone: 'Asia/Tokyo' } }] })
    expect(tokyo.output[0]).toMatchObject({ datetime: '2025-03-01T18:04:05+09:00', timezone: 'Asia/Tokyo' })
    const utc = await whole({ tools: [DATETIME] })
    expect(utc.output[0]).toMatchObject({ datetime: '2025-03-01T09:04:05Z', timezone: 'UTC' })
    expect(model.calls[0]!.tools[0]).toMatchObject({ description: expect.stringContaining('Asia/Tokyo') })
  })

  it('streams each turn as it happens: the tool item added when called and done when run, then the answer text', async () => {
    await serve([...TIME_THEN_ANSWER, ...TIME_THEN_ANSWER])
    const wholeBody = await whole({ tools: [DATETIME] })
    const { events, response } = await streamed({ tools: [DATETIME] })
    expect(events.map((event) => `${event.type}${event.output_index === undefined ? '' : `@${event.output_index}`}`)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added@0',
      'response.output_item.done@0',
      'response.output_item.added@1',
      'response.content_part.added@1',
      'response.output_text.delta@1',
      'response.output_text.delta@1',
      'response.output_text.done@1',
      'response.content_part.done@1',
      'response.output_item.done@1',
      'response.completed',
    ])
    expect(events[2]!.item).toMatchObject({ type: 'service:datetime', status: 'in_progress' })
    expect(events[3]!.item).toEqual(response.output[0])
    expect(events[2]!.item.id).toBe(response.output[0].id)
    expect(withoutIds(response.output)).toEqual(withoutIds(wholeBody.output))
    // Priced the same streamed and not.
    expect(response.usage).toEqual(wholeBody.usage)
    expect(response.id).toBe(events[0]!.response.id)
  })

  it('sends the first byte when the first turn starts, before the next turn answers', async () => {
    const secondTurn = gate()
    await serve([[callDatetime('UTC')], [{ type: 'wait', until: secondTurn }, { type: 'text', text: 'Done' }]])
    const response = await testGateway!.responses({ input: 'hi', tools: [DATETIME], stream: true })
    expect(response.status).toBe(200)
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    let text = ''
    while (!text.includes('"response.output_item.done"')) text += (await reader.read()).value ?? ''
    await secondTurn.reached
    expect(text).toContain('"service:datetime"')
    expect(text).not.toContain('Done')
    secondTurn.open()
    for (let next = await reader.read(); !next.done; next = await reader.read()) text += next.value
    expect(text).toContain('"response.completed"')
  })
})

describe('a conversation that goes on', () => {
  it('sends the tool items of an earlier answer back to the model as the calls and results they stand for', async () => {
    const { model } = await serve([...TIME_THEN_ANSWER, 'An hour later than before.'])
    const first = await whole({ tools: [DATETIME] })
    await whole({ tools: [DATETIME], input: [{ role: 'user', content: 'What time is it?' }, ...first.output, { role: 'user', content: 'And in London?' }] })
    const [, , call, result, answer, question] = [undefined, ...(model.calls[2]!.input as Array<Record<string, unknown>>)]
    expect(call).toEqual({ type: 'function_call', call_id: `call_${first.output[0].id}`, name: 'service_datetime', arguments: '{"timezone":"Europe/Paris"}' })
    expect(result).toEqual({ type: 'function_call_output', call_id: `call_${first.output[0].id}`, output: '{"datetime":"2025-03-01T10:04:05+01:00","timezone":"Europe/Paris"}' })
    expect(answer).toMatchObject({ type: 'message', role: 'assistant' })
    expect(question).toMatchObject({ role: 'user', content: 'And in London?' })
  })
})

describe('ending the loop', () => {
  it('returns a client function call with the server-tool items before it, running only the server call', async () => {
    const { model } = await serve([[callDatetime('UTC'), { type: 'function_call', name: 'book_meeting', arguments: '{"at":"10:00"}', callId: 'call_book' }]])
    const body = await whole({ tools: [DATETIME, { type: 'function', name: 'book_meeting', parameters: { type: 'object' } }] })
    expect(model.calls).toHaveLength(1)
    expect(body.output.map((item: { type: string }) => item.type)).toEqual(['service:datetime', 'function_call'])
    expect(body.output[0]).toMatchObject({ status: 'completed', timezone: 'UTC' })
    expect(body.output[1]).toMatchObject({ name: 'book_meeting', call_id: 'call_book' })
    expect(model.calls[0]!.tools.map((tool) => (tool as { name: string }).name)).toEqual(['service_datetime', 'book_meeting'])
  })

  it('stops at max_tool_calls: one last turn with tool calls disabled, and echoes the value', async () => {
    const { model } = await serve([[callDatetime('UTC')], [callDatetime('UTC')], 'Enough.'])
    const body = await whole({ tools: [DATETIME], max_tool_calls: 2 })
    expect(model.calls).toHaveLength(3)
    expect(model.calls.map((call) => call.request.tool_choice)).toEqual([undefined, undefined, 'none'])
    expect(body.output.map((item: { type: string }) => item.type)).toEqual(['service:datetime', 'service:datetime', 'message'])
    expect(body.usage.server_tool_use_details).toEqual({ tool_calls_requested: 2, tool_calls_executed: 2, web_search_requests: 0 })
    expect(body.max_tool_calls).toBe(2)
  })

  it('does not run a call the last turn makes although tool calls were disabled', async () => {
    const { model } = await serve([[callDatetime('UTC')], [callDatetime('UTC'), { type: 'text', text: 'Anyway.' }]])
    const body = await whole({ tools: [DATETIME], max_tool_calls: 1 })
    expect(model.calls).toHaveLength(2)
    expect(body.output.map((item: { type: string; status: string }) => `${item.type}:${item.status}`)).toEqual([
      'service:datetime:completed',
      'service:datetime:incomplete',
      'message:completed',
    ])
    expect(body.usage.server_tool_use_details).toEqual({ tool_calls_requested: 2, tool_calls_executed: 1, web_search_requests: 0 })
  })

  it('runs parallel calls in one turn, up to the limit; the rest are answered as not run', async () => {
    const { model } = await serve([[callDatetime('UTC', 'call_1'), callDatetime('Asia/Tokyo', 'call_2'), callDatetime('Europe/Paris', 'call_3')], 'Three zones.'])
    const body = await whole({ tools: [DATETIME], max_tool_calls: 2 })
    expect(body.output.slice(0, 3)).toEqual([
      expect.objectContaining({ status: 'completed', timezone: 'UTC' }),
      expect.objectContaining({ status: 'completed', timezone: 'Asia/Tokyo' }),
      expect.objectContaining({ status: 'incomplete' }),
    ])
    const results = toolInput(model.calls[1]!).filter((item) => item.type === 'function_call_output')
    expect(results.map((item) => item.call_id)).toEqual(['call_1', 'call_2', 'call_3'])
    expect(results[2]!.output).toMatch(/^Not run: this response reached its limit of 2 server-tool calls/)
    expect(model.calls[1]!.request.tool_choice).toBe('none')
    expect(body.usage.server_tool_use_details).toEqual({ tool_calls_requested: 3, tool_calls_executed: 2, web_search_requests: 0 })
  })

  it('runs the calls one after another when parallel_tool_calls is false', async () => {
    const { model } = await serve([[callDatetime('UTC', 'call_1'), callDatetime('Asia/Tokyo', 'call_2')], 'ok'])
    const body = await whole({ tools: [DATETIME], parallel_tool_calls: false })
    expect(body.output.slice(0, 2).map((item: { status: string }) => item.status)).toEqual(['completed', 'completed'])
    expect(model.calls[0]!.request.parallel_tool_calls).toBe(false)
  })

  it('gives a call it cannot run its reason as the result, and the model goes on', async () => {
    const { model } = await serve([[callDatetime('Mars/Olympus', 'call_bad'), { type: 'function_call', name: 'service_datetime', arguments: '{"timezone":', callId: 'call_cut' }], 'Sorry.'])
    const body = await whole({ tools: [DATETIME] })
    expect(body.output.slice(0, 2).map((item: { status: string }) => item.status)).toEqual(['incomplete', 'incomplete'])
    const results = toolInput(model.calls[1]!).filter((item) => item.type === 'function_call_output')
    expect(results).toEqual([
      { type: 'function_call_output', call_id: 'call_bad', output: expect.stringMatching(/^Not run: "Mars\/Olympus" is not an IANA time zone name/) },
      { type: 'function_call_output', call_id: 'call_cut', output: 'Not run: the arguments are not valid JSON.' },
    ])
    expect(body.usage.server_tool_use_details).toEqual({ tool_calls_requested: 2, tool_calls_executed: 0, web_search_requests: 0 })
  })
})

describe('stop_server_tools_when', () => {
  // Each turn calls the tool again unless it is the last (tool calls disabled): then it answers.
  const keepCalling = (turnUsage = usage(100, 10), finish?: { type: 'finish'; status: 'incomplete'; reason: string }): ScriptedReply => (call) =>
    call.request.tool_choice === 'none' ? [{ type: 'text', text: 'Final.' }, usage(10, 2)] : [callDatetime('UTC'), turnUsage, ...(finish ? [finish] : [])]

  const stopsAfter = async (conditions: unknown[], expectedTurns: number, extra: Record<string, unknown> = {}, reply = keepCalling()) => {
    const model = scriptedProvider({ reply })
    testGateway = await createTestGateway({ providers: { scripted: model }, now: () => NOW })
    const body = await whole({ tools: [DATETIME], stop_server_tools_when: conditions, ...extra })
    expect(model.calls).toHaveLength(expectedTurns)
    expect(model.calls.at(-1)!.request.tool_choice).toBe('none')
    expect(model.calls.slice(0, -1).every((call) => call.request.tool_choice === undefined)).toBe(true)
    expect(body.output.at(-1).content[0].text).toBe('Final.')
    expect(body.usage.server_tool_use_details.tool_calls_executed).toBe(expectedTurns - 1)
    return body
  }

  it('step_count_is: stops after that many turns, runs the pending call, then one last turn', async () => {
    await stopsAfter([{ type: 'step_count_is', step_count: 1 }], 2)
    await testGateway!.close()
    await stopsAfter([{ type: 'step_count_is', step_count: 3 }], 4)
  })

  it('has_tool_call: by the tool type or by the function name the model used', async () => {
    await stopsAfter([{ type: 'has_tool_call', tool_name: 'service:datetime' }], 2)
    await testGateway!.close()
    await stopsAfter([{ type: 'has_tool_call', tool_name: 'service_datetime' }], 2)
  })

  it('max_tokens_used: once the tokens of every turn so far exceed it', async () => {
    // 110 tokens a turn: 110, then 220 > 200.
    await stopsAfter([{ type: 'max_tokens_used', max_tokens: 200 }], 3)
    await testGateway!.close()
    await stopsAfter([{ type: 'max_tokens_used', max_tokens: 220 }], 4)
  })

  it('max_cost: once the cost so far exceeds it, the figure usage.cost reports', async () => {
    // 120e-6 dollars a turn (100 × 1e-6 + 10 × 2e-6).
    const body = await stopsAfter([{ type: 'max_cost', max_cost_in_dollars: 0.0003 }], 4)
    expect(body.usage.cost).toBeCloseTo(3 * 120e-6 + 14e-6, 12)
  })

  it('finish_reason_is: by the Chat Completions name or the Responses incomplete reason', async () => {
    const cut = keepCalling(usage(100, 10), { type: 'finish', status: 'incomplete', reason: 'max_output_tokens' })
    await stopsAfter([{ type: 'finish_reason_is', reason: 'length' }], 2, {}, cut)
    await testGateway!.close()
    await stopsAfter([{ type: 'finish_reason_is', reason: 'tool_calls' }], 2)
  })

  it('combined: any condition that fires stops the loop, and they override max_tool_calls', async () => {
    await stopsAfter([{ type: 'step_count_is', step_count: 5 }, { type: 'max_tokens_used', max_tokens: 150 }], 3, { max_tool_calls: 1 })
    await testGateway!.close()
    const body = await stopsAfter([{ type: 'step_count_is', step_count: 2 }, { type: 'has_tool_call', tool_name: 'book_meeting' }], 3)
    expect(body.max_tool_calls).toBe(30)
  })

  it('streamed, stops the same way and ends with the final text', async () => {
    const model = scriptedProvider({ reply: keepCalling() })
    testGateway = await createTestGateway({ providers: { scripted: model }, now: () => NOW })
    const { events, response } = await streamed({ tools: [DATETIME], stop_server_tools_when: [{ type: 'step_count_is', step_count: 2 }] })
    expect(model.calls.map((call) => call.request.tool_choice)).toEqual([undefined, undefined, 'none'])
    expect(response.output.map((item: { type: string }) => item.type)).toEqual(['service:datetime', 'service:datetime', 'message'])
    expect(events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta)).toEqual(['Final.'])
    expect(response.usage).toMatchObject({ input_tokens: 210, output_tokens: 22, server_tool_use_details: { tool_calls_executed: 2 } })
  })
})

describe('the loop in the accounts', () => {
  it('leaves one usage record and one charge for the whole loop, equal to the cost the caller was told, whole and streamed', async () => {
    const { gateway } = await serve([...TIME_THEN_ANSWER, ...TIME_THEN_ANSWER])
    const answered = await whole({ tools: [DATETIME] })
    const { response: streamedAnswer } = await streamed({ tools: [DATETIME] })
    expect(streamedAnswer.usage.cost).toBe(answered.usage.cost)
    await gateway.gateway.flushSpend()
    for (const answer of [answered, streamedAnswer]) {
      const record = await gateway.call('GET', `/generation?id=${encodeURIComponent(answer.id)}`, { key: gateway.regularKey })
      expect(record.status).toBe(200)
      const { data } = await record.json()
      // Both turns' tokens in one record, priced as the answer was.
      expect(data).toMatchObject({ tokens_prompt: 250, tokens_completion: 18 })
      expect(data.total_cost).toBeCloseTo(answer.usage.cost, 12)
    }
    const { data: key } = await (await gateway.call('GET', '/key', { key: gateway.regularKey })).json()
    expect(key.usage).toBeCloseTo(answered.usage.cost + streamedAnswer.usage.cost, 12)
  })
})
