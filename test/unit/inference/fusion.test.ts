/**
 * The fusion plugin and `service/fusion`: a panel of analysis models answers in parallel, each an ordinary engine
 * run, the analyst compares their answers into a structured analysis, then the judge writes the answer from both.
 * The answer carries the `service:fusion` item, usage and spend add up every call, and a stream shows the panel and
 * the analysis as `response.fusion_call.*` events before the judge.
 *
 * Prices per million tokens: lab/alpha $1 in and $2 out, lab/beta $2 and $4, lab/judge $3 and $6, lab/analyst $4 and
 * $8 (the one endpoint that takes structured output).
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

const entry = (slug: string, prompt: number, completion: number, supportedParameters = ['tools', 'tool_choice']): ModelEntry => ({
  slug,
  name: slug,
  endpoints: [{ provider: 'lab', model: slug, contextLength: 128_000, pricing: { prompt: prompt / 1e6, completion: completion / 1e6 }, supportedParameters }],
})

const CATALOG = [entry('lab/alpha', 1, 2), entry('lab/beta', 2, 4), entry('lab/judge', 3, 6), entry('lab/analyst', 4, 8, ['tools', 'text'])]

const usage = (inputTokens: number, outputTokens: number) => ({ type: 'usage' as const, inputTokens, outputTokens })

const ANALYSIS = {
  consensus: ['Coffee is fine in moderation.'],
  contradictions: [{ topic: 'How much', stances: [{ model: 'lab/alpha', stance: 'Two cups' }, { model: 'lab/beta', stance: 'Four cups' }] }],
  partial_coverage: [],
  unique_insights: [{ model: 'lab/beta', insight: 'Not after noon.' }],
  blind_spots: ['Pregnancy'],
}

/** The analyst's call: its brief opens its instructions. */
const isAnalyst = (call: ScriptedCall) => String(call.request.instructions ?? '').startsWith('Several models answered')
/** The judge's call: it reads the panel's answers, but is no analyst. */
const isJudge = (call: ScriptedCall) => String(call.request.instructions ?? '').includes('<answer model=') && !isAnalyst(call)

/** Each model answers with its own name; the analyst with the analysis (in a markdown fence, which is healed); the judge with the fused answer. */
const BY_MODEL = (call: ScriptedCall): ScriptedAnswer => {
  if (isAnalyst(call)) return [{ type: 'text', text: ['```json\n', JSON.stringify(ANALYSIS), '\n```'] }, usage(50, 10)]
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

/**
 * Streams a fusion request and leaves once `marker` was sent and the held call waits; resolves when the gateway
 * aborted that call.
 */
const leaveWhileHeld = async (lab: ScriptedProvider, held: ReturnType<typeof gate>, marker: string, isHeld: (call: ScriptedCall) => boolean) => {
  const response = await testGateway!.responses({ model: 'lab/judge', input: 'Hi', plugins: [FUSION], stream: true })
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  while (!text.includes(marker)) text += decoder.decode((await reader.read()).value, { stream: true })
  await held.reached
  await reader.cancel()
  const call = lab.calls.find(isHeld)!
  await new Promise<void>((resolve) => (call.signal.aborted ? resolve() : call.signal.addEventListener('abort', () => resolve(), { once: true })))
}

// alpha: 10 × 1 + 5 × 2 = 20 µ$; beta: 10 × 2 + 5 × 4 = 40 µ$; the judge analysing: 50 × 3 + 10 × 6 = 210 µ$;
// the judge answering: 100 × 3 + 20 × 6 = 420 µ$.
const TOTAL_COST = 0.00069

describe('the fusion plugin, whole', () => {
  it('runs the panel, has the request’s model analyse and judge, and answers with the fusion item and the judge’s message', async () => {
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
        analysis: ANALYSIS,
      },
      expect.objectContaining({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'The fused answer.', annotations: [], logprobs: [] }] }),
    ])
    // Each call is its own run: the panel's, then the analyst's, then the judge's.
    expect(lab.calls.map((call) => call.model).sort()).toEqual(['lab/alpha', 'lab/beta', 'lab/judge', 'lab/judge'])
    const alpha = lab.calls.find((call) => call.model === 'lab/alpha')!
    const analyst = lab.calls.find(isAnalyst)!
    const judge = lab.calls.find(isJudge)!
    expect(lab.calls.indexOf(analyst)).toBeLessThan(lab.calls.indexOf(judge))
    // The panel and the analyst get the conversation without the caller's function tools; the judge keeps them.
    expect(alpha.tools).toEqual([])
    expect(alpha.input).toBe('Is coffee good for you?')
    expect(analyst.tools).toEqual([])
    expect(analyst.input).toBe('Is coffee good for you?')
    expect(judge.tools).toEqual([expect.objectContaining({ name: 'lookup' })])
    // The analyst reads every panel answer; lab/judge takes no structured output, so the schema is in its brief only.
    const analystInstructions = analyst.request.instructions as string
    expect(analystInstructions).toContain('<answer model="lab/alpha">\nPanel view from lab/alpha.\n</answer>')
    expect(analystInstructions).toContain('"blind_spots"')
    expect(analyst.request.text?.format).toBeUndefined()
    // The judge reads every panel answer and the analysis in its instructions, and the conversation unchanged.
    const instructions = judge.request.instructions as string
    expect(instructions).toContain('<answer model="lab/alpha">\nPanel view from lab/alpha.\n</answer>')
    expect(instructions).toContain('<answer model="lab/beta">\nPanel view from lab/beta.\n</answer>')
    expect(instructions).toContain(`<analysis model="lab/judge">\n${JSON.stringify(ANALYSIS)}\n</analysis>`)
    expect(judge.input).toBe('Is coffee good for you?')
    // Usage and cost of every call.
    expect(json.usage).toMatchObject({ input_tokens: 170, output_tokens: 40, total_tokens: 210, cost: TOTAL_COST })
    expect(json.usage).not.toHaveProperty('server_tool_use_details')
    expect(json.service_metadata).toMatchObject({
      strategy: 'fusion',
      requested: 'lab/judge',
      pipeline: [
        {
          type: 'plugin',
          name: 'fusion',
          summary: '2 of 2 analysis models answered; lab/judge analysed; lab/judge judged',
          data: { analysis_models: ['lab/alpha', 'lab/beta'], analyst_model: 'lab/judge', judge_model: 'lab/judge' },
        },
      ],
    })
  })

  it('has the plugin’s model analyse, with structured output where its endpoint takes it', async () => {
    const lab = await serve()
    const json = await whole({ model: 'lab/judge', plugins: [{ ...FUSION, model: 'lab/analyst' }] })
    expect(json.model).toBe('lab/judge')
    expect(json.output[0].analysis).toEqual(ANALYSIS)
    const analyst = lab.calls.find(isAnalyst)!
    expect(analyst.model).toBe('lab/analyst')
    expect(analyst.request.text?.format).toEqual({ type: 'json_schema', name: 'fusion_analysis', schema: expect.objectContaining({ required: ['consensus', 'contradictions', 'partial_coverage', 'unique_insights', 'blind_spots'] }), strict: true })
    expect(lab.calls.find(isJudge)!.request.instructions).toContain('<analysis model="lab/analyst">')
    // The analyst at lab/analyst's prices: 50 × 4 + 10 × 8 = 280 µ$ in place of 210.
    expect(json.usage.cost).toBeCloseTo(TOTAL_COST + 0.00007, 12)
    expect(json.service_metadata.pipeline[0]).toMatchObject({ summary: '2 of 2 analysis models answered; lab/analyst analysed; lab/judge judged', data: { analyst_model: 'lab/analyst', judge_model: 'lab/judge' } })
  })

  it.each([
    ['not JSON', [{ type: 'text', text: 'I would rather not.' }, usage(50, 10)], 'judge_not_valid_json', /^The analysis failed: The analyst's answer is not JSON/, 0.00021],
    ['JSON of another shape', [{ type: 'text', text: '{"consensus": "all of it"}' }, usage(50, 10)], 'judge_schema_mismatch', /^The analysis failed: The analyst's JSON does not match the analysis schema: consensus: /, 0.00021],
    ['empty', [{ type: 'text', text: ' ' }, usage(50, 10)], 'judge_empty_completion', /^The analysis failed: The analyst returned no text$/, 0.00021],
    ['an upstream error', [{ type: 'http_error', status: 400, message: 'analyst refuses' }], 'judge_upstream_error', /^The analysis failed: .*analyst refuses/, 0],
  ] as Array<[string, ScriptedAnswer, string, RegExp, number]>)('judges from the panel alone when the analysis is %s', async (_case, answer, reason, error, analystCost) => {
    const lab = await serve((call) => (isAnalyst(call) ? answer : BY_MODEL(call)))
    const json = await whole({ model: 'lab/judge', plugins: [FUSION] })
    expect(json.output[0]).toMatchObject({ status: 'completed', responses: [{ model: 'lab/alpha' }, { model: 'lab/beta' }], failure_reason: reason, error: expect.stringMatching(error) })
    expect(json.output[0]).not.toHaveProperty('analysis')
    expect(json.output[1].content[0].text).toBe('The fused answer.')
    const instructions = lab.calls.find(isJudge)!.request.instructions as string
    expect(instructions).toContain('<answer model="lab/beta">\nPanel view from lab/beta.\n</answer>')
    expect(instructions).not.toContain('<analysis')
    expect(json.usage.cost).toBeCloseTo(0.00048 + analystCost, 12)
    expect(json.service_metadata.pipeline[0].data).toMatchObject({ analyst_model: 'lab/judge', analysis_failure_reason: reason })
  })

  it('keeps the caller’s instructions before the panel’s answers', async () => {
    const lab = await serve()
    await whole({ model: 'lab/judge', instructions: 'Answer in French.', plugins: [FUSION] })
    const judge = lab.calls.find(isJudge)!
    expect((judge.request.instructions as string).startsWith('Answer in French.\n\n')).toBe(true)
    // The analyst is told what the judge was told, after its own brief.
    expect(lab.calls.find(isAnalyst)!.request.instructions).toContain('<instructions>\nAnswer in French.\n</instructions>')
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
    expect(json.usage.cost).toBeCloseTo(0.00065, 12)
    expect(json.service_metadata.pipeline[0].data.failed_models).toEqual(['lab/beta'])
  })

  it('fails with the members’ error when none could answer, without analysing', async () => {
    const lab = await serve((call) => (call.model === 'lab/judge' ? BY_MODEL(call) : [{ type: 'http_error', status: 400, message: 'no thanks' }]))
    const error = await refusal({ model: 'lab/judge', plugins: [FUSION] })
    expect(error.code).toBe(400)
    expect(error.message).toContain('no thanks')
    expect(lab.calls.map((call) => call.model)).not.toContain('lab/judge')
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

  it('reserves the analyst’s worst case with the others', async () => {
    const lab = await serve()
    // The panel and the judge need $0.000156 (above), $0.000234 with a second judge's worst case; the analyst's
    // request holds its brief, some 450 tokens at $3 per million more.
    const created = await readJson(await testGateway!.call('POST', '/keys', { json: { name: 'Limited', limit: 0.0005 } }))
    const response = await testGateway!.responses({ model: 'lab/judge', input: 'Hi', max_output_tokens: 10, plugins: [FUSION] }, { key: created.key })
    expect(response.status).toBe(402)
    expect(lab.calls).toHaveLength(0)
    await testGateway!.gateway.flushSpend()
    expect((await readJson(await testGateway!.call('GET', `/keys/${created.data.hash}`))).data.usage).toBe(0)
  })

  it('gives the analyst’s and the judge’s reservations back when every member failed', async () => {
    await serve((call) => (call.model === 'lab/judge' ? BY_MODEL(call) : [{ type: 'http_error', status: 400, message: 'no thanks' }]))
    const created = await readJson(await testGateway!.call('POST', '/keys', { json: { name: 'Limited', limit: 1 } }))
    expect((await testGateway!.responses({ model: 'lab/judge', input: 'Hi', plugins: [FUSION] }, { key: created.key })).status).toBe(400)
    await testGateway!.gateway.flushSpend()
    expect((await readJson(await testGateway!.call('GET', `/keys/${created.data.hash}`))).data.usage).toBe(0)
  })

  it('stops the panel when the client leaves, and never calls the judge', async () => {
    const held = gate()
    const lab = await serve((call) => (call.model === 'lab/beta' ? [{ type: 'text', text: 'Beta ' }, { type: 'wait', until: held }, { type: 'text', text: 'late' }, usage(10, 5)] : BY_MODEL(call)))
    await leaveWhileHeld(lab, held, '"delta":"Beta "', (call) => call.model === 'lab/beta')
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
    // The panel ends, then the analysis runs, before the judge starts: the analysis events, completed, the item done,
    // then the judge's message at index 1.
    const analysisAt = types.indexOf('response.fusion_call.analysis.in_progress')
    expect(types.lastIndexOf('response.fusion_call.panel.completed')).toBeLessThan(analysisAt)
    expect(types.slice(analysisAt, analysisAt + 5)).toEqual([
      'response.fusion_call.analysis.in_progress',
      'response.fusion_call.analysis.completed',
      'response.fusion_call.completed',
      'response.output_item.done',
      'response.output_item.added',
    ])
    expect(events[analysisAt]).toEqual({ type: 'response.fusion_call.analysis.in_progress', item_id: events[2]!.item.id, output_index: 0, analyst_model: 'lab/judge', judge_model: 'lab/judge', sequence_number: expect.any(Number) })
    expect(events[analysisAt + 1]).toMatchObject({ analyst_model: 'lab/judge', judge_model: 'lab/judge', analysis: ANALYSIS })
    const completedAt = analysisAt + 2
    expect(events[completedAt + 1]!.item).toMatchObject({ type: 'service:fusion', status: 'completed', analysis: ANALYSIS })
    expect(events[completedAt + 2]).toMatchObject({ output_index: 1, item: { type: 'message' } })
    const text = events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta)
    expect(text).toEqual(['The fused ', 'answer.'])
    const completed = events.at(-1)!.response as Record<string, any>
    expect(completed.status).toBe('completed')
    expect(completed.output.map((item: { type: string }) => item.type)).toEqual(['service:fusion', 'message'])
    expect(completed.usage).toMatchObject({ input_tokens: 170, output_tokens: 40, cost: TOTAL_COST })
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

  it('completes a failed analysis with message and status_code, and streams the judge’s answer from the panel alone', async () => {
    const lab = await serve((call) => (isAnalyst(call) ? [{ type: 'http_error', status: 429, message: 'analyst busy' }] : BY_MODEL(call)))
    const events = await readEvents(await testGateway!.responses({ model: 'lab/judge', input: 'Hi', plugins: [{ ...FUSION, model: 'lab/analyst' }], stream: true }))
    assertValidEventSequence(events)
    const completed = events.find((event) => event.type === 'response.fusion_call.analysis.completed')!
    expect(completed).toMatchObject({ analyst_model: 'lab/analyst', judge_model: 'lab/judge', message: expect.stringContaining('analyst busy'), status_code: 429, failure_reason: 'judge_upstream_error' })
    expect(completed).not.toHaveProperty('analysis')
    expect(events.at(-1)!.response.output[0]).toMatchObject({ status: 'completed', failure_reason: 'judge_upstream_error', error: expect.stringContaining('analyst busy') })
    expect(events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta).join('')).toBe('The fused answer.')
    expect(lab.calls.find(isJudge)!.request.instructions).not.toContain('<analysis')
  })

  it('stops the analyst when the client leaves, and never calls the judge', async () => {
    const held = gate()
    const lab = await serve((call) => (isAnalyst(call) ? [{ type: 'text', text: '{' }, { type: 'wait', until: held }, usage(50, 10)] : BY_MODEL(call)))
    await leaveWhileHeld(lab, held, 'analysis.in_progress', isAnalyst)
    expect(lab.calls.filter(isJudge)).toHaveLength(0)
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
    expect(lab.calls.map((call) => call.model).sort()).toEqual(['lab/alpha', 'lab/beta', 'lab/judge', 'lab/judge'])
    expect(json.service_metadata).toMatchObject({ strategy: 'fusion', requested: 'service/auto', pipeline: [{ type: 'router', name: 'auto-router' }, { type: 'plugin', name: 'fusion', data: { analyst_model: 'lab/judge' } }] })
  })
})

describe('fusion on /chat/completions', () => {
  it('answers service/fusion with the judge’s message, whole and streamed', async () => {
    const reply = (call: ScriptedCall): ScriptedAnswer =>
      isAnalyst(call) ? BY_MODEL(call) : isJudge(call) ? [{ type: 'text', text: 'Judged.' }, usage(5, 2)] : [{ type: 'text', text: `view of ${call.model}` }, usage(1, 1)]
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
    const reply = (call: ScriptedCall): ScriptedAnswer => (isAnalyst(call) ? BY_MODEL(call) : [{ type: 'text' as const, text: `view of ${call.model}` }, usage(1, 1)])
    const providers = { anthropic: scriptedProvider({ reply }), openai: scriptedProvider({ reply }), 'google-ai-studio': scriptedProvider({ reply }) }
    testGateway = await createTestGateway({ providers })
    const json = await whole({ model: 'service/fusion', plugins: [{ id: 'fusion', preset: 'general-budget' }] })
    expect(json.output[0].responses.map((response: { model: string }) => response.model)).toEqual(['anthropic/claude-haiku-4.5', 'openai/gpt-5-mini', 'google/gemini-3-flash-preview'])
    expect(json.output[0].analysis).toEqual(ANALYSIS)
    expect(json.model).toBe('anthropic/claude-haiku-4.5')
    expect(json.service_metadata).toMatchObject({ strategy: 'fusion', requested: 'service/fusion', pipeline: [{ data: { analyst_model: 'anthropic/claude-haiku-4.5', judge_model: 'anthropic/claude-haiku-4.5' } }] })
    // Its panel answer, the analysis and the final answer.
    expect(providers.anthropic.calls).toHaveLength(3)
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
    expect((await refusal({ model: 'lab/judge', plugins: [{ ...FUSION, model: 'lab/nobody' }] }, 404)).message).toBe('Model "lab/nobody" not found')
  })

  it('runs the panel’s server tools, bounded by max_tool_calls', async () => {
    const lab = await serve((call) => {
      if (call.model === 'lab/judge' || isAnalyst(call)) return BY_MODEL(call)
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
  /** The judge consults the panel once, then answers; the panel and the analyst answer as BY_MODEL says. */
  const consulting = (call: ScriptedCall): ScriptedAnswer => {
    if (call.model !== 'lab/judge' || isAnalyst(call)) return BY_MODEL(call)
    if (!hasToolResult(call)) return [{ type: 'function_call', name: 'service_fusion', arguments: '{"question":"Weigh the evidence"}', callId: 'call_panel' }, usage(40, 6)]
    return [{ type: 'text', text: 'Weighed: in moderation.' }, usage(100, 20)]
  }

  it('lets the model consult the panel, reads their answers and the analysis back, and bills every call', async () => {
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
        analysis: ANALYSIS,
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
    // The analyst is the request's own model, without the tool's temperature, reading the question too.
    const analyst = lab.calls.find(isAnalyst)!
    expect(analyst.model).toBe('lab/judge')
    expect(analyst.request.temperature).toBeUndefined()
    expect(analyst.input).toEqual(alpha.input)
    const second = lab.calls.filter((call) => call.model === 'lab/judge' && !isAnalyst(call))[1]!
    const result = (second.input as Array<{ type?: string; output?: string }>).find((item) => item.type === 'function_call_output')!
    expect(result.output).toContain('<answer model="lab/beta">\nPanel view from lab/beta.\n</answer>')
    expect(result.output).toContain(`<analysis model="lab/judge">\n${JSON.stringify(ANALYSIS)}\n</analysis>`)
    // Judge turns: 40 × 3 + 6 × 6 and 100 × 3 + 20 × 6; the panel (20 + 40 µ$) and the analyst (210 µ$) as the tool's cost.
    const cost = (156 + 420 + 60 + 210) / 1e6
    expect(json.usage.cost).toBeCloseTo(cost, 12)
    expect(json.usage.server_tool_use_details).toEqual({ tool_calls_requested: 1, tool_calls_executed: 1, web_search_requests: 0 })
    await testGateway!.gateway.flushSpend()
    const key = (await readJson(await testGateway!.call('GET', `/keys/${testGateway!.regularKeyHash}`))).data
    expect(key.usage).toBeCloseTo(cost, 12)
  })

  it('has the tool’s model analyse, with structured output where its endpoint takes it', async () => {
    const lab = await serve(consulting)
    const json = await whole({ model: 'lab/judge', tools: [{ ...TOOL, parameters: { ...TOOL.parameters, model: 'lab/analyst' } }] })
    expect(json.output[0].analysis).toEqual(ANALYSIS)
    const analyst = lab.calls.find(isAnalyst)!
    expect(analyst.model).toBe('lab/analyst')
    expect(analyst.request.text?.format).toMatchObject({ type: 'json_schema', name: 'fusion_analysis' })
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
    expect((await refusal({ model: 'lab/judge', tools: [{ type: 'service:fusion', parameters: { model: 'lab/nobody' } }] })).message).toBe('body.tools.0.parameters.model: model "lab/nobody" not found')
    expect((await refusal({ model: 'lab/judge', tools: [{ type: 'service:fusion', parameters: { cache_control: { type: 'ephemeral' } } }] })).message).toMatch(/^body\.tools\.0\.parameters/)
    expect((await refusal({ model: 'lab/judge', tools: [{ type: 'service:fusion', parameters: { tools: [{ type: 'service:fusion' }] } }] })).message).toBe(
      'body.tools.0.parameters.tools.0.type: a panel member cannot convene a panel of its own',
    )
    expect((await refusal({ model: 'lab/judge', plugins: [{ ...FUSION, tools: [{ type: 'service:fusion' }] }] })).message).toBe(
      'body.plugins.0.tools.0.type: a panel member cannot convene a panel of its own',
    )
    expect(lab.calls).toHaveLength(0)
  })
})
