/**
 * `service:advisor` and `service:subagent`: the caller's model calls another model through the engine, reads
 * its answer as the call's result, and the nested call's usage and cost land in the response's usage, the stop
 * conditions and the ledger.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createTestGateway, readEvents, scriptedProvider, type ScriptedProvider, type ScriptedReply, type TestGateway, type TestGatewayOptions } from '../../../src/testing'
import { startUpstream } from '../../helpers/upstream'
import { assertValidEventSequence } from '../../helpers/stream-events'

let testGateway: TestGateway | undefined
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

const ADVISOR_MODEL = 'test/advisor'
// Ten times the test model's price, so the advisor's share of the cost is told apart.
const advisorEntry = {
  slug: ADVISOR_MODEL,
  name: 'Advisor',
  endpoints: [{ provider: 'advisor', model: 'advisor-model', contextLength: 128_000, pricing: { prompt: 0.00001, completion: 0.00002 } }],
}

const usage = (inputTokens: number, outputTokens: number) => ({ type: 'usage' as const, inputTokens, outputTokens })
const call = (name: string, args: Record<string, unknown>, callId = `call_${name}`) => ({ type: 'function_call' as const, name, arguments: JSON.stringify(args), callId })

let executor: ScriptedProvider
let advisor: ScriptedProvider

const serve = async (executorReplies: ScriptedReply[], advisorReplies: ScriptedReply[] = [], options: Partial<TestGatewayOptions> = {}) => {
  executor = scriptedProvider({ replies: executorReplies })
  advisor = scriptedProvider({ replies: advisorReplies })
  testGateway = await createTestGateway({ providers: { scripted: executor, advisor }, models: [advisorEntry], ...options })
  return testGateway
}

const post = (body: Record<string, unknown>) => testGateway!.responses({ input: 'Plan a worker pool.', ...body })
const whole = async (body: Record<string, unknown>) => {
  const response = await post(body)
  expect(response.status).toBe(200)
  return response.json()
}
const refusal = async (body: Record<string, unknown>) => {
  const response = await post(body)
  expect(response.status).toBe(400)
  return (await response.json()).error.message as string
}

const ADVISE_THEN_ANSWER: ScriptedReply[] = [[call('service_advisor', { prompt: 'Channels or mutexes?' }), usage(100, 10)], [{ type: 'text', text: 'Use channels.' }, usage(200, 5)]]
const ADVICE: ScriptedReply[] = [[{ type: 'text', text: 'Channels, with a WaitGroup.' }, usage(40, 8)]]

describe('service:advisor', () => {
  it('asks the advisor model, hands its advice back to the model, and shows the advisor item', async () => {
    await serve(ADVISE_THEN_ANSWER, ADVICE)
    const body = await whole({ tools: [{ type: 'service:advisor', parameters: { model: ADVISOR_MODEL, instructions: 'Be decisive.', temperature: 0.2, max_completion_tokens: 500 } }] })
    expect(body.status).toBe('completed')
    expect(body.output[0]).toEqual({
      type: 'service:advisor',
      id: expect.stringMatching(/^adv_/),
      status: 'completed',
      model: ADVISOR_MODEL,
      prompt: 'Channels or mutexes?',
      advice: 'Channels, with a WaitGroup.',
    })
    expect(body.output[1]).toMatchObject({ type: 'message', content: [{ text: 'Use channels.' }] })
    // The advisor saw only the prompt, with its own settings.
    expect(advisor.calls).toHaveLength(1)
    const asked = advisor.calls[0]!
    expect(asked.model).toBe('advisor-model')
    expect(asked.input).toEqual([{ type: 'message', role: 'user', content: 'Channels or mutexes?' }])
    expect(asked.request).toMatchObject({ instructions: 'Be decisive.', temperature: 0.2, max_output_tokens: 500 })
    expect(asked.tools).toEqual([])
    // The executor read the advice as the call's result.
    expect((executor.calls[1]!.input as Array<Record<string, unknown>>).at(-1)).toEqual({ type: 'function_call_output', call_id: 'call_service_advisor', output: 'Channels, with a WaitGroup.' })
    // Usage: both executor turns at the test price, plus the advisor's at ten times it.
    expect(body.usage).toMatchObject({ input_tokens: 340, output_tokens: 23, total_tokens: 363 })
    expect(body.usage.cost).toBeCloseTo(300e-6 + 30e-6 + 400e-6 + 160e-6, 12)
    expect(body.usage.server_tool_use_details).toEqual({ tool_calls_requested: 1, tool_calls_executed: 1, web_search_requests: 0 })
  })

  it('forwards the conversation with forward_transcript, tool calls as text, the prompt as the last turn', async () => {
    await serve([[call('service_datetime', {}, 'call_time')], ...ADVISE_THEN_ANSWER], ADVICE)
    await whole({
      instructions: 'You write Go.',
      input: [{ role: 'user', content: 'Plan a worker pool.' }],
      tools: [{ type: 'service:datetime' }, { type: 'service:advisor', parameters: { model: ADVISOR_MODEL, forward_transcript: true } }],
    })
    const input = advisor.calls[0]!.input as Array<Record<string, unknown>>
    expect(input[0]).toEqual({ type: 'message', role: 'system', content: 'You write Go.' })
    expect(input[1]).toMatchObject({ role: 'user', content: 'Plan a worker pool.' })
    expect(input[2]).toEqual({ type: 'message', role: 'assistant', content: '[Called the tool service_datetime with {}]' })
    expect(input[3]).toMatchObject({ role: 'user', content: expect.stringMatching(/^\[Result of the tool service_datetime: \{"datetime"/) })
    // Its own call is not shown; its prompt is the last turn.
    expect(input.at(-1)).toEqual({ type: 'message', role: 'user', content: 'Channels or mutexes?' })
    expect(input).toHaveLength(5)
  })

  it("runs on the request's model unless told otherwise, and lets the model choose one when none is fixed", async () => {
    await serve([[call('service_advisor', { prompt: 'Q1' })], 'advice from test/model', 'A1', [call('service_advisor', { prompt: 'Q2', model: ADVISOR_MODEL })], 'A2'], ['from advisor'])
    const own = await whole({ tools: [{ type: 'service:advisor' }] })
    // The first advisor call ran on test/model, the request's model.
    expect(own.output[0]).toMatchObject({ status: 'completed', model: 'test/model', advice: 'advice from test/model' })
    expect(executor.calls[1]!.input).toEqual([{ type: 'message', role: 'user', content: 'Q1' }])
    expect(executor.calls[0]!.tools[0]).toMatchObject({ name: 'service_advisor', parameters: { properties: { model: expect.any(Object) } } })
    const chosen = await whole({ tools: [{ type: 'service:advisor' }] })
    expect(chosen.output[0]).toMatchObject({ status: 'completed', model: ADVISOR_MODEL, advice: 'from advisor' })
  })

  it("tells the model when the model it chose cannot be used, without calling anything", async () => {
    await serve([[call('service_advisor', { prompt: 'Q', model: 'nobody/none' })], 'Fine.'])
    const body = await whole({ tools: [{ type: 'service:advisor' }] })
    expect(body.output[0]).toMatchObject({ type: 'service:advisor', status: 'failed', error: expect.stringContaining('model "nobody/none" is not in this gateway\'s catalog') })
    expect((executor.calls[1]!.input as Array<Record<string, unknown>>).at(-1)).toMatchObject({ output: expect.stringMatching(/^Not run: model "nobody\/none"/) })
    expect(body.usage.server_tool_use_details.tool_calls_executed).toBe(0)
  })

  it('reports an advisor whose every attempt failed as a failed item, and the loop goes on', async () => {
    await serve(ADVISE_THEN_ANSWER, [[{ type: 'http_error', status: 400, message: 'bad advice request' }]])
    const body = await whole({ tools: [{ type: 'service:advisor', parameters: { model: ADVISOR_MODEL } }] })
    expect(body.status).toBe('completed')
    expect(body.output[0]).toMatchObject({ status: 'failed', error: expect.stringContaining('the model call failed') })
    expect((executor.calls[1]!.input as Array<Record<string, unknown>>).at(-1)).toMatchObject({ output: expect.stringMatching(/^Error: the model call failed/) })
  })

  it('counts the advisor in max_cost: the loop stops once the advice made the cost pass it', async () => {
    await serve([[call('service_advisor', { prompt: 'Q' })], 'Final.'], [[{ type: 'text', text: 'Costly advice.' }, usage(1000, 1000)]])
    const body = await whole({
      tools: [{ type: 'service:advisor', parameters: { model: ADVISOR_MODEL } }],
      stop_server_tools_when: [{ type: 'max_cost', max_cost_in_dollars: 0.01 }],
    })
    expect(body.usage.cost).toBeGreaterThan(0.01)
    // Without the advisor's $0.03 the first check would not fire; it is made after the next turn, which is the last.
    expect(executor.calls.map((turn) => turn.request.tool_choice)).toEqual([undefined, undefined])
  })

  it('streams the advisor item added and done, and prices it as the whole answer does', async () => {
    await serve([...ADVISE_THEN_ANSWER, ...ADVISE_THEN_ANSWER], [...ADVICE, ...ADVICE])
    const tools = [{ type: 'service:advisor', parameters: { model: ADVISOR_MODEL } }]
    const answered = await whole({ tools })
    const events = await readEvents(await post({ tools, stream: true }))
    assertValidEventSequence(events)
    const done = events.find((event) => event.type === 'response.output_item.done')!
    expect(events.find((event) => event.type === 'response.output_item.added')!.item).toMatchObject({ type: 'service:advisor', status: 'in_progress' })
    expect(done.item).toMatchObject({ type: 'service:advisor', status: 'completed', advice: 'Channels, with a WaitGroup.' })
    expect(events.at(-1)!.response.usage).toEqual(answered.usage)
  })

  it('puts the nested cost in the one ledger record and the key usage', async () => {
    const gateway = await serve(ADVISE_THEN_ANSWER, ADVICE)
    const answer = await whole({ tools: [{ type: 'service:advisor', parameters: { model: ADVISOR_MODEL } }] })
    await gateway.gateway.flushSpend()
    const { data } = await (await gateway.call('GET', `/generation?id=${encodeURIComponent(answer.id)}`, { key: gateway.regularKey })).json()
    expect(data).toMatchObject({ tokens_prompt: 340, tokens_completion: 23 })
    expect(data.total_cost).toBeCloseTo(answer.usage.cost, 12)
    const { data: key } = await (await gateway.call('GET', '/key', { key: gateway.regularKey })).json()
    expect(key.usage).toBeCloseTo(answer.usage.cost, 12)
  })

  it('reads an advisor item sent back as the call and the advice it stands for', async () => {
    await serve([...ADVISE_THEN_ANSWER, 'Next.'], ADVICE)
    const tools = [{ type: 'service:advisor', parameters: { model: ADVISOR_MODEL } }]
    const first = await whole({ tools })
    await whole({ tools, input: [{ role: 'user', content: 'Plan a worker pool.' }, ...first.output, { role: 'user', content: 'More?' }] })
    const input = executor.calls[2]!.input as Array<Record<string, unknown>>
    expect(input[1]).toEqual({ type: 'function_call', call_id: `call_${first.output[0].id}`, name: 'service_advisor', arguments: '{"prompt":"Channels or mutexes?"}' })
    expect(input[2]).toEqual({ type: 'function_call_output', call_id: `call_${first.output[0].id}`, output: 'Channels, with a WaitGroup.' })
  })

  it('offers several named advisors, each under its own function, and refuses two of one name', async () => {
    await serve([[call('service_advisor_planner', { prompt: 'Plan?' })], 'Planned.'], ['Step by step.'])
    const tools = [
      { type: 'service:advisor', parameters: { model: ADVISOR_MODEL, name: 'planner' } },
      { type: 'service:advisor', parameters: { name: 'reviewer' } },
      { type: 'service:advisor' },
    ]
    const body = await whole({ tools })
    expect(executor.calls[0]!.tools.map((tool) => (tool as { name: string }).name)).toEqual(['service_advisor_planner', 'service_advisor_reviewer', 'service_advisor'])
    expect(body.output[0]).toMatchObject({ type: 'service:advisor', name: 'planner', model: ADVISOR_MODEL, advice: 'Step by step.' })
    expect(await refusal({ tools: [tools[0], { type: 'service:advisor', parameters: { name: ' planner ' } }] })).toBe(
      'body.tools.1: server tool "service:advisor" is listed more than once with this name',
    )
    expect(await refusal({ tools: [tools[2], tools[2]] })).toBe('body.tools.1: server tool "service:advisor" is listed more than once')
    expect(await refusal({ tools: [{ type: 'service:advisor', parameters: { name: 'a b' } }, { type: 'service:advisor', parameters: { name: 'a_b' } }] })).toBe(
      'body.tools.1: server tool "service:advisor" would be offered under the function name "service_advisor_a_b" of another; name it apart',
    )
  })

  it('refuses, naming the field: an unknown model, stream: true, an unknown parameter', async () => {
    await serve([])
    expect(await refusal({ tools: [{ type: 'service:advisor', parameters: { model: 'nobody/none' } }] })).toBe(
      'body.tools.0.parameters.model: model "nobody/none" is not in this gateway\'s catalog (GET /models lists them)',
    )
    expect(await refusal({ tools: [{ type: 'service:advisor', parameters: { stream: true } }] })).toMatch(/^body\.tools\.0\.parameters\.stream: must be false/)
    expect(await refusal({ tools: [{ type: 'service:advisor', parameters: { tools: [] } }] })).toMatch(/^body\.tools\.0\.parameters/)
    expect(await refusal({ tools: [{ type: 'service:advisor', parameters: { name: '!!' } }] })).toMatch(/^body\.tools\.0\.parameters\.name: must be 1 to 64/)
    expect(executor.calls).toHaveLength(0)
  })
})

const DELEGATE_THEN_ANSWER: ScriptedReply[] = [
  [call('service_subagent', { task_name: 'sum', task_description: 'Add 2 and 2.' }), usage(100, 10)],
  [{ type: 'text', text: 'It is 4.' }, usage(120, 4)],
]

describe('service:subagent', () => {
  it('hands the task to the worker and returns its outcome, with the subagent item', async () => {
    // A named subagent is offered under a function of its name.
    await serve(
      [[call('service_subagent_math', { task_name: 'sum', task_description: 'Add 2 and 2.' }, 'call_service_subagent'), usage(100, 10)], [{ type: 'text', text: 'It is 4.' }, usage(120, 4)]],
      [[{ type: 'text', text: '4' }, usage(20, 1)]],
    )
    const body = await whole({ tools: [{ type: 'service:subagent', parameters: { model: ADVISOR_MODEL, name: 'math' } }] })
    expect(body.output[0]).toEqual({
      type: 'service:subagent',
      id: expect.stringMatching(/^sub_/),
      status: 'completed',
      call_id: 'call_service_subagent',
      model: ADVISOR_MODEL,
      name: 'math',
      task_name: 'sum',
      task_description: 'Add 2 and 2.',
      outcome: '4',
    })
    expect(advisor.calls[0]!.input).toEqual([{ type: 'message', role: 'user', content: 'Task: sum\n\nAdd 2 and 2.' }])
    expect(body.usage).toMatchObject({ input_tokens: 240, output_tokens: 15 })
  })

  it("runs the worker's own server tools in a loop of its own", async () => {
    await serve(DELEGATE_THEN_ANSWER, [[call('service_datetime', { timezone: 'UTC' }, 'call_inner')], [{ type: 'text', text: 'Done at noon.' }, usage(30, 3)]])
    // OpenRouter's name of a tool is taken inside a subagent too.
    const body = await whole({ tools: [{ type: 'service:subagent', parameters: { model: ADVISOR_MODEL, tools: [{ type: 'openrouter:datetime' }], max_tool_calls: 3 } }] })
    expect(body.output[0]).toMatchObject({ status: 'completed', outcome: 'Done at noon.' })
    expect(advisor.calls).toHaveLength(2)
    expect(advisor.calls[0]!.tools).toEqual([expect.objectContaining({ name: 'service_datetime' })])
    expect((advisor.calls[1]!.input as Array<Record<string, unknown>>).at(-1)).toMatchObject({ type: 'function_call_output', call_id: 'call_inner' })
  })

  it('refuses function tools, inherited functions, a nested subagent and max_tool_calls without tools, naming the field', async () => {
    await serve([])
    const subagent = (parameters: Record<string, unknown>) => ({ tools: [{ type: 'service:subagent', parameters }] })
    expect(await refusal(subagent({ inherit_functions: true }))).toMatch(/^body\.tools\.0\.parameters\.inherit_functions: a subagent's function calls would have to be run by the client/)
    expect(await refusal(subagent({ inherited_function_names: ['lookup'] }))).toMatch(/^body\.tools\.0\.parameters\.inherited_function_names: /)
    expect(await refusal(subagent({ tools: [{ type: 'function', name: 'f', parameters: {} }] }))).toMatch(/^body\.tools\.0\.parameters\.tools\.0: /)
    expect(await refusal(subagent({ tools: [{ type: 'web_search' }] }))).toBe('body.tools.0.parameters.tools.0: a subagent runs server tools (service:*) only, not the provider tool "web_search"')
    expect(await refusal(subagent({ tools: [{ type: 'service:subagent' }] }))).toBe(
      'body.tools.0.parameters.tools.0: a subagent cannot call service:subagent; only the caller\'s own model can delegate',
    )
    expect(await refusal(subagent({ tools: [{ type: 'service:datetime', parameters: { timezone: 'Mars/Olympus' } }] }))).toMatch(/^body\.tools\.0\.parameters\.tools\.0\.parameters\.timezone: /)
    expect(await refusal(subagent({ max_tool_calls: 2 }))).toBe('body.tools.0.parameters.max_tool_calls: applies only to a subagent given tools')
    expect(await refusal(subagent({ inherit_functions: false, inherited_function_names: [], model: 'nobody/none' }))).toMatch(/^body\.tools\.0\.parameters\.model: model "nobody\/none"/)
    // The workspace's disabled tools hold inside a subagent too.
    await testGateway!.call('PATCH', `/workspaces/${testGateway!.defaultWorkspaceId}`, { json: { disabled_server_tools: ['datetime'] } })
    expect(await refusal(subagent({ tools: [{ type: 'service:datetime' }] }))).toBe(
      'body.tools.0.parameters.tools.0: server tool "service:datetime" is disabled for this workspace (disabled_server_tools)',
    )
    expect(executor.calls).toHaveLength(0)
  })

  it("counts the worker's own searches and their price in the caller's usage", async () => {
    const body = readFileSync(join(__dirname, '../../fixtures/search/searxng-search.json'), 'utf8')
    const searxng = await startUpstream(() => ({ headers: { 'content-type': 'application/json' }, body }))
    try {
      await serve(
        DELEGATE_THEN_ANSWER,
        [[call('service_web_search', { query: 'tides' }, 'call_search')], [{ type: 'text', text: 'High tide at 6.' }, usage(30, 3)]],
        { serverTools: { webSearch: { searxng: { baseURL: searxng.url, pricePerRequest: 0.002 } } } },
      )
      const answer = await whole({ tools: [{ type: 'service:subagent', parameters: { model: ADVISOR_MODEL, tools: [{ type: 'service:web_search' }] } }] })
      expect(answer.output[0]).toMatchObject({ status: 'completed', outcome: 'High tide at 6.' })
      expect(answer.usage.server_tool_use_details).toEqual({ tool_calls_requested: 1, tool_calls_executed: 1, web_search_requests: 1 })
      // The parent's turns (220 in, 14 out at the test price), the worker's turn (30 in, 3 out at ten times it) and one search.
      expect(answer.usage.cost).toBeCloseTo(220e-6 + 28e-6 + 300e-6 + 60e-6 + 0.002, 12)
    } finally {
      await searxng.close()
    }
  })

  it("lets a subagent consult an advisor (depth 2), whose usage reaches the caller's response", async () => {
    await serve(
      [[call('service_subagent', { task_description: 'Decide.' })], 'Decided.'],
      [[call('service_advisor', { prompt: 'Which?' }, 'call_adv')], 'Channels.', [{ type: 'text', text: 'Chose channels.' }, usage(10, 2)]],
    )
    const body = await whole({
      tools: [{ type: 'service:subagent', parameters: { model: ADVISOR_MODEL, tools: [{ type: 'service:advisor', parameters: { model: ADVISOR_MODEL } }] } }],
    })
    expect(body.output[0]).toMatchObject({ status: 'completed', outcome: 'Chose channels.' })
    expect(advisor.calls).toHaveLength(3)
    expect(advisor.calls[1]!.input).toEqual([{ type: 'message', role: 'user', content: 'Which?' }])
  })
})
