/**
 * The fusion plugin and `service/fusion`: a panel of analysis models answers in parallel, each an ordinary engine
 * run, then the judge writes the answer from their outputs. The answer carries the `service:fusion` item, usage
 * and spend add up every call, and a stream shows the panel as `response.fusion_call.*` events before the judge.
 *
 * Prices per million tokens: lab/alpha $1 in and $2 out, lab/beta $2 and $4, lab/judge $3 and $6.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, gate, readEvents, scriptedProvider, type ScriptedAnswer, type ScriptedCall, type ScriptedReply, type ScriptedProvider, type TestGateway, type TestGatewayOptions } from '../../../src/testing'
import type { ModelEntry } from '../../../src/engine/models'
import { readJson } from '../../helpers/gateway'
import { assertValidEventSequence } from '../../helpers/stream-events'

let testGateway: TestGateway | undefined
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

const METADATA = { headers: { 'x-service-metadata': 'enabled' } }

const entry = (slug: string, prompt: number, completion: number, provider = 'lab'): ModelEntry => ({
  slug,
  name: slug,
  endpoints: [{ provider, model: slug, contextLength: 128_000, pricing: { prompt: prompt / 1e6, completion: completion / 1e6 }, supportedParameters: ['tools', 'tool_choice'] }],
})

const CATALOG = [entry('lab/alpha', 1, 2), entry('lab/beta', 2, 4), entry('lab/judge', 3, 6)]

const usage = (inputTokens: number, outputTokens: number) => ({ type: 'usage' as const, inputTokens, outputTokens })

/** Each model answers with its own name; the judge reports what it was told. */
const BY_MODEL = (call: ScriptedCall): ScriptedAnswer => {
  if (call.model === 'lab/judge') return [{ type: 'text', text: ['The fused ', 'answer.'] }, usage(100, 20)]
  return [{ type: 'text', text: [`Panel view `, `from ${call.model}.`] }, usage(10, 5)]
}

const serve = async (reply: ScriptedReply = BY_MODEL, options: TestGatewayOptions = {}): Promise<ScriptedProvider> => {
  const lab = scriptedProvider({ reply })
  testGateway = await createTestGateway({ providers: { lab }, models: CATALOG, ...options })
  return lab
}

const FUSION = { id: 'fusion', analysis_models: ['lab/alpha', 'lab/beta'] }

const whole = async (body: Record<string, unknown>) => {
  const response = await testGateway!.responses({ input: 'Is coffee good for you?', ...body }, METADATA)
  const json = await response.json()
  expect(response.status, JSON.stringify(json)).toBe(200)
  return json
}

const refusal = async (body: Record<string, unknown>, status = 400) => {
  const response = await testGateway!.responses({ input: 'Hi', ...body })
  expect(response.status).toBe(status)
  return (await response.json()).error
}

// alpha: 10 × 1 + 5 × 2 = 20 µ$; beta: 10 × 2 + 5 × 4 = 40 µ$; judge: 100 × 3 + 20 × 6 = 420 µ$.
const TOTAL_COST = 0.00048

describe('the fusion plugin, whole', () => {
  it('runs the panel, has the request’s model judge, and answers with the fusion item and the judge’s message', async () => {
    const lab = await serve()
    const json = await whole({ model: 'lab/judge', plugins: [FUSION], tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' } }] })
    expect(json.model).toBe('lab/judge')
    expect(json.output).toEqual([
      {
        type: 'service:fusion',
        id: expect.stringMatching(/^fu_/),
        status: 'completed',
        responses: [
          { model: 'lab/alpha', content: 'Panel view from lab/alpha.' },
          { model: 'lab/beta', content: 'Panel view from lab/beta.' },
        ],
      },
      expect.objectContaining({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'The fused answer.', annotations: [] }] }),
    ])
    // Each call is its own run; the panel gets the conversation without the caller's function tools.
    const byModel = new Map(lab.calls.map((call) => [call.model, call]))
    expect([...byModel.keys()].sort()).toEqual(['lab/alpha', 'lab/beta', 'lab/judge'])
    expect(byModel.get('lab/alpha')!.tools).toEqual([])
    expect(byModel.get('lab/alpha')!.input).toBe('Is coffee good for you?')
    expect(byModel.get('lab/judge')!.tools).toEqual([expect.objectContaining({ name: 'lookup' })])
    // The judge reads every panel answer in its instructions, and the conversation unchanged.
    const instructions = byModel.get('lab/judge')!.request.instructions as string
    expect(instructions).toContain('<answer model="lab/alpha">\nPanel view from lab/alpha.\n</answer>')
    expect(instructions).toContain('<answer model="lab/beta">\nPanel view from lab/beta.\n</answer>')
    expect(byModel.get('lab/judge')!.input).toBe('Is coffee good for you?')
    // Usage and cost of every call.
    expect(json.usage).toMatchObject({ input_tokens: 120, output_tokens: 30, total_tokens: 150, cost: TOTAL_COST })
    expect(json.usage).not.toHaveProperty('server_tool_use_details')
    expect(json.service_metadata).toMatchObject({
      strategy: 'fusion',
      requested: 'lab/judge',
      pipeline: [
        {
          type: 'plugin',
          name: 'fusion',
          summary: '2 of 2 analysis models answered; lab/judge judged',
          data: { analysis_models: ['lab/alpha', 'lab/beta'], judge_model: 'lab/judge' },
        },
      ],
    })
  })

  it('keeps the caller’s instructions before the panel’s answers', async () => {
    const lab = await serve()
    await whole({ model: 'lab/judge', instructions: 'Answer in French.', plugins: [FUSION] })
    const judge = lab.calls.find((call) => call.model === 'lab/judge')!
    expect((judge.request.instructions as string).startsWith('Answer in French.\n\n')).toBe(true)
    expect(lab.calls.find((call) => call.model === 'lab/alpha')!.request.instructions).toBe('Answer in French.')
  })

  it('reports a member that failed and judges from the others', async () => {
    await serve((call) => (call.model === 'lab/beta' ? [{ type: 'http_error', status: 400, message: 'beta refuses' }] : BY_MODEL(call)))
    const json = await whole({ model: 'lab/judge', plugins: [FUSION] })
    expect(json.output[0]).toMatchObject({
      status: 'completed',
      responses: [{ model: 'lab/alpha', content: 'Panel view from lab/alpha.' }],
      failed_models: [{ model: 'lab/beta', error: expect.stringContaining('beta refuses'), status_code: 400 }],
    })
    expect(json.usage.cost).toBeCloseTo(0.00044, 12)
    expect(json.service_metadata.pipeline[0].data.failed_models).toEqual(['lab/beta'])
  })

  it('fails with the members’ error when none could answer', async () => {
    await serve((call) => (call.model === 'lab/judge' ? BY_MODEL(call) : [{ type: 'http_error', status: 400, message: 'no thanks' }]))
    const error = await refusal({ model: 'lab/judge', plugins: [FUSION] })
    expect(error.code).toBe(400)
    expect(error.message).toContain('no thanks')
  })

  it('settles spend for every call on the key', async () => {
    await serve()
    await whole({ model: 'lab/judge', plugins: [FUSION] })
    await testGateway!.gateway.flushSpend()
    const key = (await readJson(await testGateway!.call('GET', `/keys/${testGateway!.regularKeyHash}`))).data
    expect(key.usage).toBeCloseTo(TOTAL_COST, 12)
  })
})

describe('fusion spend', () => {
  it('reserves every run before any is sent: a limit the sum would pass refuses with 402 and no upstream call', async () => {
    const lab = await serve()
    const created = await readJson(await testGateway!.call('POST', '/keys', { json: { name: 'Limited', limit: 0.0001 } }))
    // Worst cases for 6 prompt tokens and 10 output tokens: alpha $0.000026, beta $0.000052, judge $0.000078.
    const response = await testGateway!.responses({ model: 'lab/judge', input: 'Hi', max_output_tokens: 10, plugins: [FUSION] }, { key: created.key })
    expect(response.status).toBe(402)
    expect((await response.json()).error.message).toMatch(/^API key limit reached/)
    expect(lab.calls).toHaveLength(0)
    await testGateway!.gateway.flushSpend()
    const key = (await readJson(await testGateway!.call('GET', `/keys/${created.data.hash}`))).data
    expect(key.usage).toBe(0)
    // Within the limit alone, the judge runs as usual.
    expect((await testGateway!.responses({ model: 'lab/judge', input: 'Hi', max_output_tokens: 10 }, { key: created.key })).status).toBe(200)
  })

  it('stops the panel when the client leaves, and never calls the judge', async () => {
    const held = gate()
    const lab = await serve((call) => (call.model === 'lab/beta' ? [{ type: 'text', text: 'Beta ' }, { type: 'wait', until: held }, { type: 'text', text: 'late' }, usage(10, 5)] : BY_MODEL(call)))
    const response = await testGateway!.responses({ model: 'lab/judge', input: 'Hi', plugins: [FUSION], stream: true })
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = ''
    while (!text.includes('"delta":"Beta "')) text += decoder.decode((await reader.read()).value, { stream: true })
    await held.reached
    await reader.cancel()
    const beta = lab.calls.find((call) => call.model === 'lab/beta')!
    await new Promise<void>((resolve) => (beta.signal.aborted ? resolve() : beta.signal.addEventListener('abort', () => resolve(), { once: true })))
    expect(lab.calls.map((call) => call.model)).not.toContain('lab/judge')
  })
})

describe('the fusion plugin, streamed', () => {
  it('shows the panel as fusion_call events, then streams the judge after the fusion item', async () => {
    await serve()
    const events = await readEvents(await testGateway!.responses({ model: 'lab/judge', input: 'Is coffee good for you?', plugins: [FUSION], stream: true }, METADATA))
    assertValidEventSequence(events)
    const types = events.map((event) => event.type)
    expect(types.slice(0, 6)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.fusion_call.in_progress',
      'response.fusion_call.panel.added',
      'response.fusion_call.panel.added',
    ])
    const fusionEvents = events.filter((event) => event.type.startsWith('response.fusion_call.'))
    expect(fusionEvents.every((event) => event.output_index === 0 && event.item_id === events[2]!.item.id)).toBe(true)
    const deltas = (model: string) => fusionEvents.filter((event) => event.type === 'response.fusion_call.panel.delta' && event.model === model).map((event) => event.delta)
    expect(deltas('lab/alpha')).toEqual(['Panel view ', 'from lab/alpha.'])
    expect(fusionEvents.filter((event) => event.type === 'response.fusion_call.panel.completed').map((event) => [event.model, event.content]).sort()).toEqual([
      ['lab/alpha', 'Panel view from lab/alpha.'],
      ['lab/beta', 'Panel view from lab/beta.'],
    ])
    // The panel ends before the judge starts: completed, the item done, then the judge's message at index 1.
    const completedAt = types.indexOf('response.fusion_call.completed')
    expect(types.slice(completedAt, completedAt + 3)).toEqual(['response.fusion_call.completed', 'response.output_item.done', 'response.output_item.added'])
    expect(events[completedAt + 1]!.item).toMatchObject({ type: 'service:fusion', status: 'completed' })
    expect(events[completedAt + 2]).toMatchObject({ output_index: 1, item: { type: 'message' } })
    const text = events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta)
    expect(text).toEqual(['The fused ', 'answer.'])
    const completed = events.at(-1)!.response as Record<string, any>
    expect(completed.status).toBe('completed')
    expect(completed.output.map((item: { type: string }) => item.type)).toEqual(['service:fusion', 'message'])
    expect(completed.usage).toMatchObject({ input_tokens: 120, output_tokens: 30, cost: TOTAL_COST })
    expect(completed.service_metadata).toMatchObject({ strategy: 'fusion', pipeline: [{ name: 'fusion' }] })
  })

  it('shows a failed member as panel.failed, without an error key the openai SDK would throw on', async () => {
    await serve((call) => (call.model === 'lab/beta' ? [{ type: 'http_error', status: 400, message: 'beta refuses' }] : BY_MODEL(call)))
    const events = await readEvents(await testGateway!.responses({ model: 'lab/judge', input: 'Hi', plugins: [FUSION], stream: true }))
    assertValidEventSequence(events)
    const failed = events.find((event) => event.type === 'response.fusion_call.panel.failed')!
    expect(failed).toMatchObject({ model: 'lab/beta', message: expect.stringContaining('beta refuses'), status_code: 400 })
    expect(events.at(-1)!.response.output[0].failed_models).toEqual([{ model: 'lab/beta', error: expect.stringContaining('beta refuses'), status_code: 400 }])
  })

  it('fails in-band when every member failed mid-answer, with what the panel cost', async () => {
    await serve((call) => (call.model === 'lab/judge' ? BY_MODEL(call) : [{ type: 'text', text: 'Half' }, usage(10, 5), { type: 'error', message: 'lost it' }]))
    const events = await readEvents(await testGateway!.responses({ model: 'lab/judge', input: 'Hi', plugins: [FUSION], stream: true }))
    const last = events.at(-1)!
    expect(last.type).toBe('response.failed')
    expect(last.response.error).toMatchObject({ message: expect.stringContaining('Every analysis model failed') })
    expect(last.response.output).toEqual([expect.objectContaining({ type: 'service:fusion', status: 'failed' })])
  })
})

describe('fusion with a router model', () => {
  it('has the router’s choice judge', async () => {
    const lab = await serve()
    const json = await whole({ model: 'service/auto', plugins: [FUSION, { id: 'auto-router', allowed_models: ['lab/judge'] }] })
    expect(json.model).toBe('lab/judge')
    expect(lab.calls.map((call) => call.model).sort()).toEqual(['lab/alpha', 'lab/beta', 'lab/judge'])
    expect(json.service_metadata).toMatchObject({ strategy: 'fusion', requested: 'service/auto', pipeline: [{ type: 'router', name: 'auto-router' }, { type: 'plugin', name: 'fusion' }] })
  })
})

describe('fusion on /chat/completions', () => {
  it('answers service/fusion with the judge’s message, whole and streamed', async () => {
    const reply = (call: ScriptedCall): ScriptedAnswer =>
      call.request.instructions?.includes('<answer model=') ? [{ type: 'text', text: 'Judged.' }, usage(5, 2)] : [{ type: 'text', text: `view of ${call.model}` }, usage(1, 1)]
    const providers = { anthropic: scriptedProvider({ reply }), openai: scriptedProvider({ reply }), 'google-ai-studio': scriptedProvider({ reply }) }
    testGateway = await createTestGateway({ providers })
    const chat = (stream: boolean) =>
      testGateway!.call('POST', '/chat/completions', { key: testGateway!.regularKey, json: { model: 'service/fusion', messages: [{ role: 'user', content: 'Hi' }], stream } })
    const whole = await chat(false)
    const json = await whole.json()
    expect(whole.status, JSON.stringify(json)).toBe(200)
    expect(json.choices[0].message.content).toBe('Judged.')
    expect(json.model).toBe('anthropic/claude-opus-4.8')
    const streamed = await (await chat(true)).text()
    const chunks = streamed.split('\n').filter((line) => line.startsWith('data: {')).map((line) => JSON.parse(line.slice(6)))
    expect(chunks.map((chunk) => chunk.choices?.[0]?.delta?.content ?? '').join('')).toBe('Judged.')
    expect(streamed.trim().endsWith('data: [DONE]')).toBe(true)
  })
})

describe('service/fusion', () => {
  it('runs a preset panel of reachable catalog models, the first of them judging', async () => {
    // The catalog's own openai, anthropic and google models, served by scripted providers under those ids.
    const reply = (call: ScriptedCall) => [{ type: 'text' as const, text: `view of ${call.model}` }, usage(1, 1)]
    const providers = { anthropic: scriptedProvider({ reply }), openai: scriptedProvider({ reply }), 'google-ai-studio': scriptedProvider({ reply }) }
    testGateway = await createTestGateway({ providers })
    const json = await whole({ model: 'service/fusion', plugins: [{ id: 'fusion', preset: 'general-budget' }] })
    expect(json.output[0].responses.map((response: { model: string }) => response.model)).toEqual(['anthropic/claude-haiku-4.5', 'openai/gpt-5-mini', 'google/gemini-3-flash-preview'])
    expect(json.model).toBe('anthropic/claude-haiku-4.5')
    expect(json.service_metadata).toMatchObject({ strategy: 'fusion', requested: 'service/fusion' })
    expect(providers.anthropic.calls).toHaveLength(2)
  })

  it('names the judge with the plugin’s model, and answers 404 when no preset model is reachable', async () => {
    await serve()
    const json = await whole({ model: 'service/fusion', plugins: [{ ...FUSION, model: 'lab/judge' }] })
    expect(json.model).toBe('lab/judge')
    const error = await refusal({ model: 'service/fusion' }, 404)
    expect(error.message).toBe(
      'body.model: none of the models of fusion preset "general-high" (anthropic/claude-opus-4.8, openai/gpt-5.5, google/gemini-3.1-pro-preview) is reachable on this gateway; name analysis_models instead',
    )
  })
})

describe('fusion fields that could have no effect', () => {
  it.each([
    [{ ...FUSION, preset: 'general-fast' }, 'body.plugins.0.preset: a preset names the analysis models; give analysis_models or preset, not both'],
    [{ ...FUSION, model: 'lab/beta' }, 'body.plugins.0.model: the request\'s model (lab/judge) judges here; set model to "service/fusion" to name another judge, or leave this out'],
    [{ ...FUSION, tools: [{ type: 'function' }] }, 'body.plugins.0.tools.0.type: the panel runs server tools only; "function" is not one this gateway runs (available: service:datetime, service:web_fetch, service:web_search, service:tool_search, service:experimental__search_models, service:advisor, service:subagent, service:image_generation, service:bash, service:shell, service:apply_patch, service:files)'],
    [{ ...FUSION, max_tool_calls: 2 }, "body.plugins.0.max_tool_calls: bounds the panel's tool calls, so it needs tools"],
    [{ ...FUSION, max_tool_calls: 17, tools: [{ type: 'service:datetime' }] }, 'body.plugins.0.max_tool_calls: must be at most 16'],
    [{ ...FUSION, analysis_models: Array.from({ length: 9 }, (_, index) => `lab/m${index}`) }, 'body.plugins.0.analysis_models: at most 8 models'],
    [{ ...FUSION, analysis_models: ['lab/alpha', 'lab/alpha'] }, 'body.plugins.0.analysis_models: must not name a model twice'],
    [{ ...FUSION, temperature: 1 }, expect.stringMatching(/^body\.plugins\.0/)],
    [{ ...FUSION, tools: [{ type: 'service:datetime', parameters: { timezone: 'Mars/Olympus' } }] }, expect.stringMatching(/^body\.plugins\.0\.tools\.0\.parameters\.timezone/)],
  ])('refuses %j', async (plugin, message) => {
    await serve()
    expect((await refusal({ model: 'lab/judge', plugins: [plugin] })).message).toEqual(message)
  })

  it('refuses debug.echo_upstream_body, which has no single upstream body to echo', async () => {
    await serve()
    expect((await refusal({ model: 'lab/judge', plugins: [FUSION], stream: true, debug: { echo_upstream_body: true } })).message).toBe(
      'body.debug.echo_upstream_body: is not supported with fusion, whose panel and judge make several upstream calls',
    )
  })

  it('refuses service/fusion among the fallbacks and an unknown analysis model', async () => {
    await serve()
    expect((await refusal({ model: 'lab/judge', models: ['service/fusion'] })).message).toBe('body.models.0: "service/fusion" runs a panel of models; name it in model, not among the fallbacks')
    expect((await refusal({ model: 'lab/judge', plugins: [{ ...FUSION, analysis_models: ['lab/nobody'] }] }, 404)).message).toBe('Model "lab/nobody" not found')
  })

  it('runs the panel’s server tools, bounded by max_tool_calls', async () => {
    const lab = await serve((call) => {
      if (call.model === 'lab/judge') return BY_MODEL(call)
      const isFirstTurn = !(call.input as Array<{ type?: string }>).some?.((item) => item.type === 'function_call_output')
      return isFirstTurn ? [{ type: 'function_call', name: 'service_datetime', arguments: '{}' }, usage(10, 5)] : BY_MODEL(call)
    })
    const json = await whole({ model: 'lab/judge', plugins: [{ ...FUSION, tools: [{ type: 'service:datetime' }], max_tool_calls: 1 }] })
    expect(json.output[0].status).toBe('completed')
    expect(lab.calls.filter((call) => call.model === 'lab/alpha')).toHaveLength(2)
    expect(lab.calls.find((call) => call.model === 'lab/alpha')!.tools).toEqual([expect.objectContaining({ name: 'service_datetime' })])
    expect(json.usage.server_tool_use_details).toEqual({ tool_calls_requested: 2, tool_calls_executed: 2, web_search_requests: 0 })
  })
})

describe('service:fusion as a server tool', () => {
  const TOOL = { type: 'service:fusion', parameters: { analysis_models: ['lab/alpha', 'lab/beta'], temperature: 0.2 } }
  const hasToolResult = (call: ScriptedCall) => Array.isArray(call.input) && (call.input as Array<{ type?: string }>).some((item) => item.type === 'function_call_output')
  /** The judge consults the panel once, then answers; the panel answers as BY_MODEL says. */
  const consulting = (call: ScriptedCall): ScriptedAnswer => {
    if (call.model !== 'lab/judge') return BY_MODEL(call)
    if (!hasToolResult(call)) return [{ type: 'function_call', name: 'service_fusion', arguments: '{"question":"Weigh the evidence"}', callId: 'call_panel' }, usage(40, 6)]
    return [{ type: 'text', text: 'Weighed: in moderation.' }, usage(100, 20)]
  }

  it('lets the model consult the panel, reads their answers back, and bills every call', async () => {
    const lab = await serve(consulting)
    const json = await whole({ model: 'lab/judge', tools: [TOOL] })
    expect(json.output).toEqual([
      {
        type: 'service:fusion',
        id: expect.stringMatching(/^fu_/),
        status: 'completed',
        responses: [
          { model: 'lab/alpha', content: 'Panel view from lab/alpha.' },
          { model: 'lab/beta', content: 'Panel view from lab/beta.' },
        ],
      },
      expect.objectContaining({ type: 'message', content: [expect.objectContaining({ text: 'Weighed: in moderation.' })] }),
    ])
    const alpha = lab.calls.find((call) => call.model === 'lab/alpha')!
    expect(alpha.input).toEqual([
      { type: 'message', role: 'user', content: 'Is coffee good for you?' },
      { type: 'message', role: 'user', content: 'Weigh the evidence' },
    ])
    expect(alpha.request.temperature).toBe(0.2)
    expect(alpha.tools).toEqual([])
    const second = lab.calls.filter((call) => call.model === 'lab/judge')[1]!
    const result = (second.input as Array<{ type?: string; output?: string }>).find((item) => item.type === 'function_call_output')!
    expect(result.output).toContain('<answer model="lab/beta">\nPanel view from lab/beta.\n</answer>')
    // Judge turns: 40 × 3 + 6 × 6 and 100 × 3 + 20 × 6; the panel (20 + 40 µ$) as the tool's cost.
    expect(json.usage.cost).toBeCloseTo((156 + 420 + 60) / 1e6, 12)
    expect(json.usage.server_tool_use_details).toEqual({ tool_calls_requested: 1, tool_calls_executed: 1, web_search_requests: 0 })
    await testGateway!.gateway.flushSpend()
    const key = (await readJson(await testGateway!.call('GET', `/keys/${testGateway!.regularKeyHash}`))).data
    expect(key.usage).toBeCloseTo((156 + 420 + 60) / 1e6, 12)
  })

  it('streams the tool item with its fusion_call events', async () => {
    await serve(consulting)
    const events = await readEvents(await testGateway!.responses({ model: 'lab/judge', input: 'Hi', tools: [TOOL], stream: true }))
    assertValidEventSequence(events)
    const types = events.map((event) => event.type)
    expect(types).toContain('response.fusion_call.in_progress')
    expect(types.indexOf('response.fusion_call.completed')).toBeLessThan(types.lastIndexOf('response.output_item.done'))
    expect(events.at(-1)!.response.output.map((item: { type: string }) => item.type)).toEqual(['service:fusion', 'message'])
  })

  it('validates its parameters before anything is sent', async () => {
    const lab = await serve(consulting)
    expect((await refusal({ model: 'lab/judge', tools: [{ type: 'service:fusion', parameters: { analysis_models: ['lab/nobody'] } }] })).message).toBe(
      'body.tools.0.parameters.analysis_models.0: model "lab/nobody" not found',
    )
    expect((await refusal({ model: 'lab/judge', tools: [{ type: 'service:fusion', parameters: { model: 'lab/beta' } }] })).message).toMatch(/^body\.tools\.0\.parameters/)
    expect((await refusal({ model: 'lab/judge', tools: [{ type: 'service:fusion', parameters: { tools: [{ type: 'service:fusion' }] } }] })).message).toBe(
      'body.tools.0.parameters.tools.0.type: a panel member cannot convene a panel of its own',
    )
    expect((await refusal({ model: 'lab/judge', plugins: [{ ...FUSION, tools: [{ type: 'service:fusion' }] }] })).message).toBe(
      'body.plugins.0.tools.0.type: a panel member cannot convene a panel of its own',
    )
    expect(lab.calls).toHaveLength(0)
  })
})
