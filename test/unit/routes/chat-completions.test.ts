/**
 * `POST /chat/completions` on scripted providers: the translation of a chat body into what the model is
 * asked, the `chat.completion` object, the chunk stream (role, deltas, tool calls by index, finish,
 * usage, `[DONE]`), in-band failures, and every refusal with the route's error body.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, gate, scriptedProvider, type ScriptedAnswer, type ScriptedProviderOptions, type TestGateway } from '../../../src/testing'
import { readSseEvents } from '../../helpers/responses'

let testGateway: TestGateway | undefined
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

const serve = async (reply: ScriptedAnswer, options: Parameters<typeof createTestGateway>[0] = {}) => serveReplies({ reply }, options)

const serveReplies = async (answers: ScriptedProviderOptions, options: Parameters<typeof createTestGateway>[0] = {}) => {
  const model = scriptedProvider(answers)
  testGateway = await createTestGateway({ ...options, providers: { scripted: model } })
  return model
}

const chat = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  testGateway!.call('POST', '/chat/completions', { key: testGateway!.regularKey, json: body, headers })

/** The chunks of a streamed answer, `[DONE]` last, and the raw text. */
const chunksOf = async (response: Response) => {
  const { events, text } = await readSseEvents(response)
  return { chunks: events.map((event) => event.data), text }
}

const HI = [{ role: 'user', content: 'Hi' }]

describe('POST /chat/completions, whole answers', () => {
  it('answers a chat.completion with the message, finish_reason and OpenRouter usage with its cost', async () => {
    await serve([{ type: 'text', text: 'Hello there' }, { type: 'usage', inputTokens: 12, outputTokens: 4, cachedTokens: 2, reasoningTokens: 1 }])
    const response = await chat({ model: 'test/model', messages: HI })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/json')
    const body = await response.json()
    expect(body.id).toMatch(/^gen-[0-9a-f]{48}$/)
    expect(Number.isInteger(body.created)).toBe(true)
    expect(body).toEqual({
      id: body.id,
      object: 'chat.completion',
      created: body.created,
      model: 'test/model',
      // OpenRouter's display name of the provider that served (the scripted provider's id, as it has none).
      provider: 'scripted',
      // The scripted upstream names no tier: the one asked for (none, so auto) is echoed.
      service_tier: 'auto',
      system_fingerprint: null,
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there', refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: {
        prompt_tokens: 12,
        completion_tokens: 4,
        total_tokens: 16,
        prompt_tokens_details: { cached_tokens: 2 },
        completion_tokens_details: { reasoning_tokens: 1 },
        // 10 fresh + 2 cached input tokens at $1/M (no cached price: the prompt price), 4 output tokens at $2/M.
        cost: 0.00002,
        is_byok: false,
        cost_details: { upstream_inference_cost: null, upstream_inference_prompt_cost: 0.000012, upstream_inference_completions_cost: 0.000008 },
      },
    })
  })

  it('returns tool calls with finish_reason tool_calls and a null content', async () => {
    await serve([{ type: 'function_call', name: 'get_weather', arguments: '{"city":"Paris"}', callId: 'call_1' }])
    const body = await (await chat({ messages: HI, tools: [{ type: 'function', function: { name: 'get_weather' } }] })).json()
    expect(body.choices[0]).toEqual({
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        refusal: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    })
  })

  it('shows reasoning as `reasoning` and `reasoning_details`, and leaves it out with reasoning.exclude', async () => {
    await serve([{ type: 'reasoning', text: 'Let me think.' }, { type: 'text', text: 'Four.' }])
    const shown = await (await chat({ messages: HI, reasoning: { effort: 'high' } })).json()
    expect(shown.choices[0].message).toEqual({
      role: 'assistant',
      content: 'Four.',
      refusal: null,
      reasoning: 'Let me think.',
      reasoning_details: [{ type: 'reasoning.text', text: 'Let me think.', format: 'unknown', index: 0 }],
    })
    const hidden = await (await chat({ messages: HI, reasoning: { effort: 'high', exclude: true } })).json()
    expect(hidden.choices[0].message).toEqual({ role: 'assistant', content: 'Four.', refusal: null })
  })

  it('says length when the answer was cut by the token limit, content_filter when filtered', async () => {
    await serveReplies({
      replies: [
        [{ type: 'text', text: 'Once upon' }, { type: 'finish', status: 'incomplete', reason: 'max_output_tokens' }],
        [{ type: 'text', text: 'No' }, { type: 'finish', status: 'incomplete', reason: 'content_filter' }],
      ],
    })
    expect((await (await chat({ messages: HI, max_tokens: 2 })).json()).choices[0].finish_reason).toBe('length')
    expect((await (await chat({ messages: HI })).json()).choices[0].finish_reason).toBe('content_filter')
  })

  it('carries a refusal in message.refusal', async () => {
    await serve([{ type: 'refusal', refusal: 'I cannot help with that.' }])
    const body = await (await chat({ messages: HI })).json()
    expect(body.choices[0].message).toEqual({ role: 'assistant', content: null, refusal: 'I cannot help with that.' })
  })

  it('adds service_metadata when the caller opts in', async () => {
    await serve('Hi')
    const body = await (await chat({ messages: HI }, { 'x-service-metadata': 'enabled' })).json()
    expect(body.service_metadata).toMatchObject({ attempt: 1, requested: 'test/model', strategy: 'direct' })
  })
})

describe('POST /chat/completions, what the model is asked', () => {
  it('translates messages into input items in order: roles, parts, tool calls and their results', async () => {
    const model = await serve('ok')
    await chat({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: [{ type: 'text', text: 'Use metric units.', cache_control: { type: 'ephemeral' } }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather here?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } },
            { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,BBBB' } },
            { type: 'file', file: { file_data: 'https://example.com/b.pdf' } },
            { type: 'input_audio', input_audio: { data: 'CCCC', format: 'wav' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '22 °C' },
        { role: 'user', content: 'Thanks' },
      ],
    })
    expect(model.lastCall!.input).toEqual([
      { type: 'message', role: 'system', content: 'Be brief.' },
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Use metric units.', cache_control: { type: 'ephemeral' } }] },
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'Weather here?' },
          { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'low' },
          { type: 'input_file', file_data: 'data:application/pdf;base64,BBBB', filename: 'a.pdf' },
          { type: 'input_file', file_url: 'https://example.com/b.pdf' },
          { type: 'input_audio', input_audio: { data: 'CCCC', format: 'wav' } },
        ],
      },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: 'call_1', output: '22 °C' },
      { type: 'message', role: 'user', content: 'Thanks' },
    ])
  })

  it('turns reasoning_details of an assistant turn back into reasoning items, signatures kept', async () => {
    const model = await serve('ok')
    await chat({
      messages: [
        { role: 'user', content: 'Q1' },
        {
          role: 'assistant',
          content: null,
          reasoning_details: [
            { type: 'reasoning.text', text: 'First thought', signature: 'sig-1', format: 'anthropic-claude-v1' },
            { type: 'reasoning.encrypted', data: 'opaque', format: 'anthropic-claude-v1' },
            { type: 'reasoning.summary', summary: 'Summary', format: 'openai-responses-v1' },
            { type: 'reasoning.encrypted', data: 'enc', format: 'openai-responses-v1' },
          ],
          tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: 'found' }] },
      ],
    })
    expect(model.lastCall!.input).toEqual([
      { type: 'message', role: 'user', content: 'Q1' },
      { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'First thought' }], signature: 'sig-1', format: 'anthropic-claude-v1' },
      { type: 'reasoning', summary: [], encrypted_content: 'opaque', format: 'anthropic-claude-v1' },
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Summary' }], encrypted_content: 'enc', format: 'openai-responses-v1' },
      { type: 'function_call', call_id: 'call_2', name: 'lookup', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'found' }] },
    ])
  })

  it('translates tools, tool_choice, response_format, sampling, limits and reasoning', async () => {
    const model = await serve('ok')
    const schema = { type: 'object', properties: { answer: { type: 'string' } } }
    await chat({
      model: 'test/model',
      messages: HI,
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object' }, strict: true } }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } },
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      frequency_penalty: 0.1,
      presence_penalty: -0.1,
      max_completion_tokens: 100,
      reasoning_effort: 'low',
      metadata: { team: 'geo' },
    })
    const { request } = model.lastCall!
    expect(request).toMatchObject({
      tools: [{ type: 'function', name: 'get_weather', description: 'Weather', parameters: { type: 'object' }, strict: true }],
      tool_choice: { type: 'function', name: 'get_weather' },
      parallel_tool_calls: false,
      text: { format: { type: 'json_schema', name: 'answer', schema, strict: true } },
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      frequency_penalty: 0.1,
      presence_penalty: -0.1,
      max_output_tokens: 100,
      reasoning: { effort: 'low', summary: 'auto' },
      metadata: { team: 'geo' },
    })
    await chat({ messages: HI, max_tokens: 7, response_format: { type: 'json_object' }, reasoning: { max_tokens: 2000, exclude: true }, tool_choice: 'required' })
    expect(model.lastCall!.request).toMatchObject({ max_output_tokens: 7, text: { format: { type: 'json_object' } }, reasoning: { max_tokens: 2000 }, tool_choice: 'required' })
    expect(model.lastCall!.request.reasoning).not.toHaveProperty('summary')
    await chat({ messages: HI, reasoning: { enabled: false } })
    expect(model.lastCall!.request.reasoning).toEqual({ enabled: false })
  })

  it('routes with models and provider, and hashes user as /responses does', async () => {
    const model = await serve('ok')
    await chat({ models: ['test/model'], messages: HI, provider: { only: ['scripted'] }, user: 'alice@example.com' })
    expect(model.lastCall!.endUserId).toMatch(/^mg_[0-9a-f]{32}$/)
    expect(JSON.stringify(model.lastCall!.request)).not.toContain('alice@example.com')
    const refused = await chat({ messages: HI, provider: { only: ['elsewhere'] } })
    expect(refused.status).toBe(404)
  })
})

describe('POST /chat/completions, streamed', () => {
  it('streams a role chunk, content deltas, the finish chunk, a usage chunk without choices, then [DONE]', async () => {
    await serve([{ type: 'text', text: ['Hel', 'lo'] }, { type: 'usage', inputTokens: 3, outputTokens: 2 }])
    const response = await chat({ messages: HI, stream: true, stream_options: { include_usage: true } })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    const { chunks, text } = await chunksOf(response)
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true)
    expect(chunks.at(-1)).toBe('[DONE]')
    const data = chunks.slice(0, -1)
    const [{ id, created }] = data
    for (const chunk of data) expect(chunk).toMatchObject({ id, created, object: 'chat.completion.chunk', model: 'test/model', provider: 'scripted' })
    expect(data.map(({ choices, usage }) => ({ choices, ...(usage ? { usage } : {}) }))).toEqual([
      { choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] },
      { choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }] },
      { choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: null }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
      {
        choices: [],
        usage: {
          prompt_tokens: 3,
          completion_tokens: 2,
          total_tokens: 5,
          prompt_tokens_details: { cached_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: 0 },
          cost: 0.000007,
          is_byok: false,
          cost_details: { upstream_inference_cost: null, upstream_inference_prompt_cost: 0.000003, upstream_inference_completions_cost: 0.000004 },
        },
      },
    ])
  })

  it('streams tool calls by index: id and name first, then argument pieces', async () => {
    await serve([
      { type: 'function_call', name: 'first', arguments: ['{"a"', ':1}'], callId: 'call_a' },
      { type: 'function_call', name: 'second', arguments: '{}', callId: 'call_b' },
    ])
    const { chunks } = await chunksOf(await chat({ messages: HI, stream: true }))
    const deltas = chunks.slice(1, -2).map((chunk) => chunk.choices[0])
    expect(deltas).toEqual([
      { index: 0, delta: { tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'first', arguments: '' } }] }, finish_reason: null },
      { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] }, finish_reason: null },
      { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }, finish_reason: null },
      { index: 0, delta: { tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'second', arguments: '' } }] }, finish_reason: null },
      { index: 0, delta: { tool_calls: [{ index: 1, function: { arguments: '{}' } }] }, finish_reason: null },
      { index: 0, delta: {}, finish_reason: 'tool_calls' },
    ])
  })

  it('streams reasoning as OpenRouter does, and none of it with reasoning.exclude', async () => {
    await serve([{ type: 'reasoning', summary: ['Plan', 'ning'], text: 'Deep' }, { type: 'text', text: 'Done' }])
    const { chunks } = await chunksOf(await chat({ messages: HI, stream: true, reasoning: { enabled: true } }))
    const deltas = chunks.slice(1, -3).map((chunk) => chunk.choices[0].delta)
    expect(deltas).toEqual([
      { reasoning: 'Plan', reasoning_details: [{ type: 'reasoning.summary', summary: 'Plan', format: 'unknown', index: 0 }] },
      { reasoning: 'ning', reasoning_details: [{ type: 'reasoning.summary', summary: 'ning', format: 'unknown', index: 0 }] },
      { reasoning: 'Deep', reasoning_details: [{ type: 'reasoning.text', text: 'Deep', format: 'unknown', index: 1 }] },
      { content: 'Done' },
    ])
    const excluded = await chunksOf(await chat({ messages: HI, stream: true, reasoning: { enabled: true, exclude: true } }))
    expect(excluded.text).not.toMatch(/"reasoning(_details)?":/)
    expect(excluded.chunks.slice(1, -3).map((chunk) => chunk.choices[0].delta)).toEqual([{ content: 'Done' }])
  })

  it('ends a stream that fails after content with an error chunk (finish_reason error), usage, then [DONE]', async () => {
    await serve([{ type: 'text', text: 'Partial' }, { type: 'error', message: 'Upstream broke', errorType: 'server' }])
    const { chunks } = await chunksOf(await chat({ messages: HI, stream: true }))
    expect(chunks.at(-1)).toBe('[DONE]')
    const failed = chunks.at(-3)
    expect(failed.error).toEqual({ code: 502, message: expect.stringContaining('Upstream broke'), metadata: { error_type: 'server' } })
    expect(failed.choices).toEqual([{ index: 0, delta: { content: '' }, finish_reason: 'error' }])
    // The upstream reported no usage before it failed: what was delivered is charged, estimated from the prompt and `Partial`.
    expect(chunks.at(-2)).toMatchObject({ choices: [], usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) } })
    expect(chunks.at(-2).usage.prompt_tokens).toBeGreaterThan(0)
    expect(chunks.at(-2).usage.completion_tokens).toBeGreaterThan(0)
    expect(chunks.slice(1, -3).map((chunk) => chunk.choices[0].delta)).toEqual([{ content: 'Partial' }])
  })

  it('keeps a slow start open with : PROCESSING comments once committed', async () => {
    const held = gate()
    await serve([{ type: 'wait', until: held }, { type: 'text', text: 'Late' }], { streamCommitAfterMs: 0, keepAliveMs: 60_000 })
    const response = await chat({ messages: HI, stream: true })
    expect(response.status).toBe(200)
    const reader = response.body!.getReader()
    const first = new TextDecoder().decode((await reader.read()).value)
    expect(first).toBe(': PROCESSING\n\n')
    held.open()
    let rest = ''
    for (let next = await reader.read(); !next.done; next = await reader.read()) rest += new TextDecoder().decode(next.value)
    expect(rest).toContain('"content":"Late"')
    expect(rest.endsWith('data: [DONE]\n\n')).toBe(true)
  })

  it('answers a failure before content with the standard error body and its status', async () => {
    await serve([{ type: 'http_error', status: 429, message: 'Slow down', retryAfter: 3 }])
    const response = await chat({ messages: HI, stream: true })
    expect(response.status).toBe(429)
    expect(response.headers.get('retry-after')).toBe('3')
    expect(await response.json()).toEqual({
      error: { code: 429, message: 'scripted: Slow down', metadata: { error_type: 'rate_limit_exceeded', provider_name: 'scripted' } },
    })
  })
})

describe('POST /chat/completions, refusals', () => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['n other than 1', { n: 2 }, 'body.n: must be 1: one choice per request'],
    // The scripted provider's adapter declares no request extensions, so no endpoint of test/model honours them.
    ['stop sequences no endpoint honours', { stop: ['END'] }, 'body.stop: not supported by any endpoint of test/model'],
    ['a seed no endpoint honours', { seed: 7 }, 'body.seed: not supported by any endpoint of test/model'],
    ['logit biases no endpoint honours', { logit_bias: { '50256': -100 } }, 'body.logit_bias: not supported by any endpoint of test/model'],
    ['log probabilities no endpoint honours', { logprobs: true, top_logprobs: 2 }, 'body.logprobs: not supported by any endpoint of test/model'],
    ['two extensions, both named', { stop: 'END', seed: 7 }, 'body.stop or body.seed: not supported by any endpoint of test/model'],
    ['top log probabilities without logprobs', { top_logprobs: 3 }, 'body: top_logprobs needs logprobs: true'],
    ['more than 4 stop sequences', { stop: ['a', 'b', 'c', 'd', 'e'] }, 'body.stop: at most 4 stop sequences'],
    ['an empty stop sequence', { stop: ['a', ''] }, 'body.stop.1: must not be empty'],
    ['a stop that is neither a string nor a list', { stop: 5 }, 'body.stop: must be a string or an array of strings'],
    ['a fractional seed', { seed: 1.5 }, 'body.seed: must be an integer'],
    ['more than 20 top log probabilities', { logprobs: true, top_logprobs: 21 }, 'body.top_logprobs: must be at most 20'],
    ['a logit bias beyond 100', { logit_bias: { '50256': -101 } }, 'body.logit_bias.50256: values must be at least -100'],
    ['a logit bias keyed by a word', { logit_bias: { hello: 5 } }, 'body.logit_bias.hello: keys must be token ids (digits)'],
    ['a plugin field no plugin has', { plugins: [{ id: 'response-healing', strict: true }] }, 'body.plugins.0.strict: unknown field'],
    ['a transform other than middle-out', { transforms: ['summarize'] }, 'body.transforms.0: must be "middle-out", the only transform'],
    ['two token limits that disagree', { max_tokens: 5, max_completion_tokens: 6 }, 'body: max_tokens and max_completion_tokens disagree: send one of them'],
    ['two efforts that disagree', { reasoning: { effort: 'low' }, reasoning_effort: 'high' }, 'body: reasoning.effort and reasoning_effort disagree: send one of them'],
    ['a non-function tool', { tools: [{ type: 'web_search' }] }, 'body.tools.0.type: must be "function" or a server tool ("service:…")'],
    ['a json_schema without a schema', { response_format: { type: 'json_schema', json_schema: { name: 'x' } } }, 'body.response_format.json_schema.schema: is required'],
  ]

  it.each(cases)('refuses %s with a 400 naming the field', async (_, fields, message) => {
    const model = await serve('never')
    const response = await chat({ messages: HI, ...fields })
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual({ error: { code: 400, message } })
    expect(model.calls).toHaveLength(0)
  })

  it('refuses messages it cannot translate, naming the message and part', async () => {
    await serve('never')
    const cases: Array<[unknown, string]> = [
      [[], 'body.messages: must have at least 1 message'],
      [[{ role: 'function', name: 'f', content: 'x' }], 'body.messages.0.role: must have a role among system, developer, user, assistant, tool'],
      [[{ role: 'user', content: [{ type: 'video_url', video_url: { url: 'https://example.com/v.mp4' } }] }], 'body.messages.0.content.0.type: must be a text, image_url, file or input_audio part'],
      [[{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'x' } }] }], 'body.messages.0.content.0.type: must be a text part: system messages hold text only'],
      [[{ role: 'tool', content: 'x' }], 'body.messages.0.tool_call_id: is required'],
      [[{ role: 'user', content: [{ type: 'file', file: { filename: 'a.pdf' } }] }], 'body.messages.0.content.0.file: needs file_data (a data: URL or an https URL) or file_id'],
    ]
    for (const [messages, message] of cases) {
      const response = await chat({ messages })
      expect(response.status, message).toBe(400)
      expect(await response.json()).toEqual({ error: { code: 400, message } })
    }
  })

  it('accepts the switches that ask for what is always done or nothing: usage.include, stream_options.include_usage, logprobs false, n 1, empty stop and bias', async () => {
    await serve('fine')
    const response = await chat({
      messages: HI,
      n: 1,
      logprobs: false,
      top_logprobs: 0,
      stop: null,
      seed: null,
      logit_bias: {},
      usage: { include: true },
      stream_options: { include_usage: false },
      plugins: [],
      transforms: [],
    })
    expect(response.status).toBe(200)
    expect((await response.json()).usage).toMatchObject({ cost: expect.any(Number) })
  })

  it('refuses management keys, as every route that runs a model does', async () => {
    await serve('never')
    const response = await testGateway!.call('POST', '/chat/completions', { json: { messages: HI } })
    expect(response.status).toBe(403)
    expect(await response.json()).toEqual({ error: { code: 403, message: 'Management keys cannot be used for inference; use a regular API key' } })
  })
})
