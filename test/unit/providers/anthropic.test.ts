import { describe, expect, it } from 'vitest'
import { InternalError, InvalidRequestError, isGatewayError } from '../../../src/core/errors'
import type { UpstreamCall, UpstreamStreamEvent, UpstreamTarget } from '../../../src/providers/contract'
import { anthropicAdapter } from '../../../src/providers/anthropic'
import { UpstreamFailure } from '../../../src/core/upstream-failure'
import type { OutputItem, ResponsesRequest } from '../../../src/providers/types'
import { assertValidEventSequence, chunked, collect } from '../../helpers/stream-events'
import { fixture } from '../../helpers/upstream'

const API_KEY = 'sk-ant-api03-Zx9yTqW4eRt7uIo0pAs2dFg5hJk8lL1-QwErTyUiOp_AAAA'
const MODEL = 'claude-sonnet-4-5-20250929'
const target: UpstreamTarget = { baseURL: 'https://api.anthropic.com/v1', apiKey: API_KEY }

const makeCall = (request: Partial<ResponsesRequest>, extra: Partial<UpstreamCall> = {}): UpstreamCall => ({
  request: { model: 'anthropic/claude-sonnet-4.5', input: 'Hello', ...request } as ResponsesRequest,
  upstreamModel: MODEL,
  stream: false,
  ...extra,
})

const bodyOf = (request: Partial<ResponsesRequest>, extra: Partial<UpstreamCall> = {}, upstreamTarget: UpstreamTarget = target) =>
  JSON.parse(anthropicAdapter.buildRequest(makeCall(request, extra), upstreamTarget).body)

const buildError = (request: Partial<ResponsesRequest>, upstreamTarget: UpstreamTarget = target): unknown => {
  try {
    anthropicAdapter.buildRequest(makeCall(request), upstreamTarget)
  } catch (error) {
    return error
  }
  throw new Error('buildRequest did not throw')
}

const expectInvalid = (request: Partial<ResponsesRequest>, message: string) => {
  const error = buildError(request)
  expect(error).toBeInstanceOf(InvalidRequestError)
  expect((error as Error).message).toBe(message)
}

const json = (name: string) => JSON.parse(fixture('anthropic', name).toString('utf8'))
const text = (name: string) => fixture('anthropic', name).toString('utf8')

/** Items without the random ids, with arguments parsed (streamed JSON keeps the model's spacing). */
const comparable = (items: OutputItem[]) =>
  items.map((item) => {
    const { id: _id, ...rest } = item as OutputItem & Record<string, unknown>
    return item.type === 'function_call' ? { ...rest, arguments: JSON.parse(String(item.arguments)) } : rest
  })

const streamOf = (name: string, size: number) =>
  anthropicAdapter.readStream(chunked(fixture('anthropic', name), size), makeCall({}, { stream: true }))

const collectUntilThrow = async (iterable: AsyncIterable<UpstreamStreamEvent>) => {
  const events: UpstreamStreamEvent[] = []
  try {
    for await (const event of iterable) events.push(event)
  } catch (error) {
    return { events, error }
  }
  return { events, error: undefined }
}

const itemsOf = (events: UpstreamStreamEvent[]) =>
  events.filter((event) => event.type === 'response.output_item.done').map((event) => (event as Record<string, unknown>).item as OutputItem)

const deltasOf = (events: UpstreamStreamEvent[], type: string) =>
  events.filter((event) => event.type === type).map((event) => (event as Record<string, unknown>).delta)

const usage = (input: number, cached: number, output: number, reasoning = 0) => ({
  input_tokens: input,
  input_tokens_details: { cached_tokens: cached },
  output_tokens: output,
  output_tokens_details: { reasoning_tokens: reasoning },
  total_tokens: input + output,
})

describe('anthropic buildRequest', () => {
  it('sends a plain string input as one user turn with the required max_tokens', () => {
    const request = anthropicAdapter.buildRequest(makeCall({ input: 'Hello' }), target)
    expect(request.url).toBe('https://api.anthropic.com/v1/messages')
    expect(request.method).toBe('POST')
    expect(request.headers).toEqual({ 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': API_KEY })
    expect(JSON.parse(request.body)).toEqual({
      model: MODEL,
      max_tokens: 8192,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
    })
  })

  it('builds the URL from the configured base URL and adds configured headers without letting them replace the key', () => {
    const request = anthropicAdapter.buildRequest(makeCall({}, { stream: true }), {
      baseURL: 'http://127.0.0.1:4010/v1/',
      apiKey: API_KEY,
      headers: { 'Anthropic-Beta': 'interleaved-thinking-2025-05-14', 'X-Api-Key': 'sk-ant-other-key-0000000000' },
    })
    expect(request.url).toBe('http://127.0.0.1:4010/v1/messages')
    expect(request.headers).toEqual({
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      accept: 'text/event-stream',
      'anthropic-beta': 'interleaved-thinking-2025-05-14',
      'x-api-key': API_KEY,
    })
    expect(JSON.parse(request.body).stream).toBe(true)
  })

  it('translates a multi-turn history: system prompt, images, a file, thinking, tool calls and their results', () => {
    const body = bodyOf({
      instructions: 'You are a concise assistant.',
      input: [
        { type: 'message', role: 'system', content: 'Answer in English.' },
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Prefer metric units.' }] },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is in these pictures and this file?' },
            { type: 'input_image', image_url: 'https://example.com/cat.jpg', detail: 'high' },
            { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
            { type: 'input_file', filename: 'report.pdf', file_data: 'data:application/pdf;base64,JVBERi0xLjQ=' },
          ],
        },
        {
          type: 'reasoning',
          id: 'rs_1',
          format: 'anthropic-claude-v1',
          summary: [],
          content: [{ type: 'reasoning_text', text: 'I should look up the weather.' }],
          signature: 'EqQBCkgIBhAB',
        },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check the weather.', annotations: [] }] },
        { type: 'function_call', call_id: 'toolu_01A', name: 'get_weather', arguments: '{"location":"Paris"}' },
        { type: 'function_call_output', call_id: 'toolu_01A', output: '{"temperature":18}' },
        { type: 'message', role: 'user', content: 'Thanks! And tomorrow?' },
      ],
    })
    expect(body).toEqual({
      model: MODEL,
      max_tokens: 8192,
      system: [
        { type: 'text', text: 'You are a concise assistant.' },
        { type: 'text', text: 'Answer in English.' },
        { type: 'text', text: 'Prefer metric units.' },
      ],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these pictures and this file?' },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQ=' }, title: 'report.pdf' },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'I should look up the weather.', signature: 'EqQBCkgIBhAB' },
            { type: 'text', text: 'Let me check the weather.' },
            { type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: { location: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_01A', content: '{"temperature":18}' },
            { type: 'text', text: 'Thanks! And tomorrow?' },
          ],
        },
      ],
    })
  })

  it('merges same-role items, puts tool results first in their turn and thinking first in its turn', () => {
    const body = bodyOf({
      input: [
        { type: 'message', role: 'user', content: 'First.' },
        { type: 'message', role: 'user', content: 'Second.' },
        { type: 'message', role: 'assistant', content: 'Calling two tools.' },
        { type: 'reasoning', summary: [], signature: 'sig-no-format', content: [{ type: 'reasoning_text', text: 'plan' }] },
        { type: 'function_call', call_id: 'toolu_01A', name: 'a', arguments: '' },
        { type: 'function_call', call_id: 'toolu_01B', name: 'b', arguments: '{}' },
        { type: 'message', role: 'user', content: 'Note between results.' },
        { type: 'function_call_output', call_id: 'toolu_01A', output: 'A done' },
        {
          type: 'function_call_output',
          call_id: 'toolu_01B',
          output: [
            { type: 'input_text', text: 'B done' },
            { type: 'input_image', image_url: 'data:image/jpeg;base64,/9j/4AAQ' },
          ],
        },
      ],
    })
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'First.' }, { type: 'text', text: 'Second.' }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'plan', signature: 'sig-no-format' },
          { type: 'text', text: 'Calling two tools.' },
          { type: 'tool_use', id: 'toolu_01A', name: 'a', input: {} },
          { type: 'tool_use', id: 'toolu_01B', name: 'b', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01A', content: 'A done' },
          {
            type: 'tool_result',
            tool_use_id: 'toolu_01B',
            content: [
              { type: 'text', text: 'B done' },
              { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } },
            ],
          },
          { type: 'text', text: 'Note between results.' },
        ],
      },
    ])
  })

  it("sends Claude's redacted thinking back and drops other providers' reasoning and unsigned thinking", () => {
    const body = bodyOf({
      input: [
        { type: 'message', role: 'user', content: 'Hi' },
        { type: 'reasoning', summary: [{ type: 'summary_text', text: 'OpenAI summary' }], encrypted_content: 'gAAAAB-openai', format: 'openai-responses-v1' },
        { type: 'reasoning', summary: [], encrypted_content: 'gAAAAB-no-format' },
        { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'gemini' }], signature: 'CiQB', format: 'google-gemini-v1' },
        { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'unsigned' }], format: 'anthropic-claude-v1' },
        { type: 'reasoning', summary: [], encrypted_content: 'EmwKAhgB', format: 'anthropic-claude-v1' },
        { type: 'message', role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot help with that.' }] },
      ],
    })
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      {
        role: 'assistant',
        content: [
          { type: 'redacted_thinking', data: 'EmwKAhgB' },
          { type: 'text', text: 'I cannot help with that.' },
        ],
      },
    ])
  })

  it('sends plain-text files as text documents and file URLs as URL documents', () => {
    const body = bodyOf({
      input: [
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_file', filename: 'notes.txt', file_data: `data:text/plain;base64,${Buffer.from('héllo — ✓').toString('base64')}` },
            { type: 'input_file', file_url: 'https://example.com/paper.pdf' },
          ],
        },
      ],
    })
    expect(body.messages[0].content).toEqual([
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'héllo — ✓' }, title: 'notes.txt' },
      { type: 'document', source: { type: 'url', url: 'https://example.com/paper.pdf' } },
    ])
  })

  it('rejects what Anthropic cannot take, naming the item', () => {
    expectInvalid(
      { input: [{ type: 'message', role: 'user', content: 'Hi' }, { type: 'function_call', call_id: 'c', name: 'f', arguments: '{"a":' }] },
      'input[1]: function_call arguments are not valid JSON',
    )
    expectInvalid({ input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '[1,2]' }] }, 'input[0]: function_call arguments must be a JSON object for Anthropic')
    expectInvalid({ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0]: item type "item_reference" is not supported by Anthropic')
    expectInvalid({ modalities: ['image', 'text'] }, 'modalities: image output is not supported by Anthropic')
    expectInvalid(
      { input: [{ type: 'message', role: 'user', content: [{ type: 'input_audio', input_audio: { data: '', format: 'wav' } }] }] },
      'input[0].content[0]: content part type "input_audio" is not supported by Anthropic',
    )
    expectInvalid(
      { input: [{ type: 'message', role: 'user', content: [{ type: 'input_image', file_id: 'file-abc' }] }] },
      'input[0].content[0]: file_id references are not supported by Anthropic; send image_url',
    )
    expectInvalid(
      { input: [{ type: 'message', role: 'user', content: [{ type: 'input_file', file_data: 'data:application/zip;base64,UEsDBA==' }] }] },
      'input[0].content[0]: file type "application/zip" is not supported by Anthropic (PDF and plain text are)',
    )
    expectInvalid(
      { input: [{ type: 'message', role: 'system', content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] }] },
      'input[0].content[0]: content part type "input_image" is not supported in system messages by Anthropic',
    )
  })

  const weatherTool = { type: 'function', name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] }, strict: true }

  it('translates function tools and every tool_choice', () => {
    const body = bodyOf({ tools: [weatherTool, { type: 'function', name: 'noop', description: null, parameters: null }] })
    expect(body.tools).toEqual([
      { name: 'get_weather', description: 'Current weather', input_schema: weatherTool.parameters },
      { name: 'noop', input_schema: { type: 'object', properties: {} } },
    ])
    expect(body).not.toHaveProperty('tool_choice')

    const choice = (tool_choice: ResponsesRequest['tool_choice'], parallel_tool_calls?: boolean) =>
      bodyOf({ tools: [weatherTool], tool_choice, ...(parallel_tool_calls === undefined ? {} : { parallel_tool_calls }) }).tool_choice
    expect(choice('auto')).toBeUndefined()
    expect(choice('none')).toEqual({ type: 'none' })
    expect(choice('required')).toEqual({ type: 'any' })
    expect(choice({ type: 'function', name: 'get_weather' })).toEqual({ type: 'tool', name: 'get_weather' })
    expect(choice('auto', false)).toEqual({ type: 'auto', disable_parallel_tool_use: true })
    expect(choice(undefined, false)).toEqual({ type: 'auto', disable_parallel_tool_use: true })
    expect(choice('required', false)).toEqual({ type: 'any', disable_parallel_tool_use: true })
    expect(choice({ type: 'function', name: 'get_weather' }, false)).toEqual({ type: 'tool', name: 'get_weather', disable_parallel_tool_use: true })
    expect(choice('none', false)).toEqual({ type: 'none' })
    expect(choice('auto', true)).toBeUndefined()
    // Without tools there is nothing to choose from.
    expect(bodyOf({ tool_choice: 'required' })).not.toHaveProperty('tool_choice')
  })

  it('rejects server tools and tool_choice kinds Anthropic cannot run', () => {
    expectInvalid({ tools: [weatherTool, { type: 'web_search_preview' }] }, 'tools[1]: tool type "web_search_preview" is not supported by Anthropic')
    expectInvalid(
      { tools: [weatherTool], tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [] } },
      'tool_choice: "allowed_tools" is not supported by Anthropic',
    )
  })

  it('passes sampling settings, drops what Anthropic lacks, and sends the hashed end user', () => {
    const body = bodyOf(
      { temperature: 0.3, top_p: 0.9, top_k: 40, max_output_tokens: 500, frequency_penalty: 0.5, presence_penalty: 0.1, top_logprobs: 3, user: 'alice@example.com' },
      { endUserId: 'u_5f2c0e' },
    )
    expect(body).toEqual({
      model: MODEL,
      max_tokens: 500,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
      temperature: 0.3,
      top_p: 0.9,
      top_k: 40,
      metadata: { user_id: 'u_5f2c0e' },
    })
    expect(bodyOf({ temperature: null, top_p: null, top_k: 0, max_output_tokens: null })).toEqual({
      model: MODEL,
      max_tokens: 8192,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
    })
    expect(bodyOf({}, {}, { ...target, options: { defaultMaxTokens: '4096' } }).max_tokens).toBe(4096)
    expect(buildError({}, { ...target, options: { defaultMaxTokens: 'lots' } })).toBeInstanceOf(InternalError)
  })

  it('maps reasoning effort to a thinking budget below max_tokens and drops temperature and top_k', () => {
    const plan = (reasoning: ResponsesRequest['reasoning'], max_output_tokens?: number) => {
      const body = bodyOf({ reasoning, temperature: 0.7, top_k: 5, top_p: 0.98, ...(max_output_tokens ? { max_output_tokens } : {}) })
      return { thinking: body.thinking, max_tokens: body.max_tokens, temperature: body.temperature, top_k: body.top_k, top_p: body.top_p }
    }
    const cases: Array<[string, number]> = [
      ['minimal', 1024],
      ['low', 2048],
      ['medium', 8192],
      ['high', 16384],
      ['xhigh', 32000],
      ['max', 32000],
    ]
    for (const [effort, budget] of cases) {
      expect(plan({ effort }), effort).toEqual({ thinking: { type: 'enabled', budget_tokens: budget }, max_tokens: budget + 8192, top_p: 0.98 })
    }
    expect(plan({ enabled: true }).thinking).toEqual({ type: 'enabled', budget_tokens: 8192 })
    expect(plan({ max_tokens: 3000 }).thinking).toEqual({ type: 'enabled', budget_tokens: 3000 })
    expect(plan({ max_tokens: 100 }).thinking).toEqual({ type: 'enabled', budget_tokens: 1024 })
    // An explicit max_output_tokens caps the budget below it.
    expect(plan({ effort: 'high' }, 4000)).toEqual({ thinking: { type: 'enabled', budget_tokens: 3999 }, max_tokens: 4000, top_p: 0.98 })
    expect(plan({ effort: 'low' }, 20000)).toEqual({ thinking: { type: 'enabled', budget_tokens: 2048 }, max_tokens: 20000, top_p: 0.98 })
    // No budget fits in 1,024 tokens: thinking stays off, sampling is kept.
    expect(plan({ effort: 'high' }, 1024)).toEqual({ max_tokens: 1024, temperature: 0.7, top_k: 5, top_p: 0.98 })
    expect(plan({ effort: 'low', max_tokens: null } as unknown as ResponsesRequest['reasoning']).thinking).toEqual({ type: 'enabled', budget_tokens: 2048 })
    for (const reasoning of [{ effort: 'none' }, { enabled: false, effort: 'high' }, { max_tokens: 0 }, { summary: 'auto' }, { effort: null }, null]) {
      expect(plan(reasoning), JSON.stringify(reasoning)).toEqual({ max_tokens: 8192, temperature: 0.7, top_k: 5, top_p: 0.98 })
    }
    expectInvalid({ reasoning: { effort: 'turbo' } }, 'reasoning.effort: "turbo" is not supported by Anthropic')
  })

  it('uses adaptive thinking and output_config.effort when configured', () => {
    const adaptive = { ...target, options: { thinking: 'adaptive' } }
    expect(bodyOf({ reasoning: { effort: 'minimal', summary: 'auto' }, temperature: 1 }, {}, adaptive)).toEqual({
      model: MODEL,
      max_tokens: 1024 + 8192,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
      thinking: { type: 'adaptive', display: 'summarized' },
      output_config: { effort: 'low' },
    })
    expect(bodyOf({ reasoning: { effort: 'xhigh' }, max_output_tokens: 64000 }, {}, adaptive)).toMatchObject({
      max_tokens: 64000,
      thinking: { type: 'adaptive' },
      output_config: { effort: 'xhigh' },
    })
    expect(bodyOf({ reasoning: { effort: 'none' } }, {}, adaptive)).toMatchObject({ thinking: { type: 'disabled' }, max_tokens: 8192 })
    expect(bodyOf({}, {}, adaptive)).not.toHaveProperty('thinking')
  })

  const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }

  it('maps json_schema to output_config.format, or to a system instruction when configured, and json_object to an instruction', () => {
    const native = bodyOf({ text: { format: { type: 'json_schema', name: 'city', schema, strict: true } }, reasoning: { effort: 'low' } }, {}, { ...target, options: { thinking: 'adaptive' } })
    expect(native.output_config).toEqual({ effort: 'low', format: { type: 'json_schema', schema } })
    expect(native).not.toHaveProperty('system')

    const instructed = bodyOf({ instructions: 'Be brief.', text: { format: { type: 'json_schema', name: 'city', schema } } }, {}, { ...target, options: { structuredOutputs: 'instruction' } })
    expect(instructed).not.toHaveProperty('output_config')
    expect(instructed.system).toHaveLength(2)
    expect(instructed.system[0]).toEqual({ type: 'text', text: 'Be brief.' })
    expect(instructed.system[1].text).toContain('conforms to the JSON Schema below')
    expect(instructed.system[1].text.endsWith(JSON.stringify(schema))).toBe(true)

    const object = bodyOf({ text: { format: { type: 'json_object' } } })
    expect(object).not.toHaveProperty('output_config')
    expect(object.system).toEqual([{ type: 'text', text: expect.stringContaining('single valid JSON object') }])
    expect(bodyOf({ text: { format: { type: 'text' } } })).not.toHaveProperty('system')
  })

  describe('prompt caching', () => {
    it('marks the last block of the last message for a top-level cache_control', () => {
      const body = bodyOf({
        instructions: 'System.',
        cache_control: { type: 'ephemeral', ttl: '1h' },
        input: [
          { type: 'message', role: 'user', content: 'Question' },
          { type: 'message', role: 'assistant', content: 'Answer' },
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Follow-up' }, { type: 'input_image', image_url: 'https://example.com/x.png' }] },
        ],
      })
      expect(body.system).toEqual([{ type: 'text', text: 'System.' }])
      expect(body.messages[2].content).toEqual([
        { type: 'text', text: 'Follow-up' },
        { type: 'image', source: { type: 'url', url: 'https://example.com/x.png' }, cache_control: { type: 'ephemeral', ttl: '1h' } },
      ])
      expect(body.messages[0].content[0]).not.toHaveProperty('cache_control')
    })

    it('skips thinking blocks, which cannot be cached, and falls back to the system prompt without messages', () => {
      const prefill = bodyOf({
        cache_control: { type: 'ephemeral' },
        input: [
          { type: 'message', role: 'user', content: 'Q' },
          { type: 'function_call', call_id: 'toolu_01A', name: 'f', arguments: '{}' },
          { type: 'reasoning', summary: [], signature: 'sig', format: 'anthropic-claude-v1' },
        ],
      })
      expect(prefill.messages[1].content).toEqual([
        { type: 'thinking', thinking: '', signature: 'sig' },
        { type: 'tool_use', id: 'toolu_01A', name: 'f', input: {}, cache_control: { type: 'ephemeral' } },
      ])
      const systemOnly = bodyOf({ instructions: 'Cache me.', input: '', cache_control: { type: 'ephemeral' } })
      expect(systemOnly.system).toEqual([{ type: 'text', text: 'Cache me.', cache_control: { type: 'ephemeral' } }])
    })

    it('keeps explicit breakpoints, at most four, and then leaves no slot for the automatic one', () => {
      const part = (text: string) => ({ type: 'input_text', text, cache_control: { type: 'ephemeral' } })
      const body = bodyOf({
        cache_control: { type: 'ephemeral' },
        input: [
          { type: 'message', role: 'system', content: [part('s1')] },
          { type: 'message', role: 'user', content: [part('u1'), part('u2'), part('u3'), part('u4'), { type: 'input_text', text: 'last' }] },
        ],
      })
      expect(body.system).toEqual([{ type: 'text', text: 's1', cache_control: { type: 'ephemeral' } }])
      expect(body.messages[0].content).toEqual([
        { type: 'text', text: 'u1', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'u2', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'u3', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'u4' },
        { type: 'text', text: 'last' },
      ])
      // With a slot left, explicit and automatic breakpoints coexist.
      const both = bodyOf({ cache_control: { type: 'ephemeral' }, input: [{ type: 'message', role: 'user', content: [part('static'), { type: 'input_text', text: 'dynamic' }] }] })
      expect(both.messages[0].content).toEqual([
        { type: 'text', text: 'static', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'dynamic', cache_control: { type: 'ephemeral' } },
      ])
    })
  })
})

describe('anthropic readResult', () => {
  it('reads a text answer with cached input', () => {
    const result = anthropicAdapter.readResult(json('text.json'), makeCall({}))
    expect(result.status).toBe('completed')
    expect(result.incompleteDetails).toBeNull()
    expect(result.upstreamId).toBe('msg_01XFDUDYJgAACzvnptvVoYEL')
    expect(result.usage).toEqual(usage(2062, 2048, 38))
    expect(result.output).toHaveLength(1)
    expect(result.output[0]!.id).toMatch(/^msg_/)
    expect(comparable(result.output)).toEqual([
      {
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [
          {
            type: 'output_text',
            text: 'The capital of France is **Paris**. It sits on the Seine — home to the Eiffel Tower 🗼, the Louvre and about 2.1 million people.',
            annotations: [], logprobs: [],
          },
        ],
      },
    ])
  })

  it('reads text followed by parallel tool calls', () => {
    const result = anthropicAdapter.readResult(json('tool-call.json'), makeCall({}))
    expect(result.status).toBe('completed')
    expect(result.usage).toEqual(usage(472, 0, 139))
    expect(result.output.map((item) => item.type)).toEqual(['message', 'function_call', 'function_call'])
    expect(result.output[1]).toMatchObject({
      type: 'function_call',
      status: 'completed',
      call_id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6',
      name: 'get_weather',
      arguments: '{"location":"San Francisco, CA","unit":"celsius"}',
    })
    expect(result.output[2]).toMatchObject({ call_id: 'toolu_01HQqzGHfXoTvc6aRkW2dVJn', arguments: '{"location":"Paris, France","unit":"celsius"}' })
  })

  it('reads thinking as reasoning text with its signature', () => {
    const body = json('reasoning.json')
    const result = anthropicAdapter.readResult(body, makeCall({}))
    expect(result.usage).toEqual(usage(46, 0, 212, 118))
    expect(comparable(result.output)).toEqual([
      {
        type: 'reasoning',
        status: 'completed',
        format: 'anthropic-claude-v1',
        summary: [],
        content: [{ type: 'reasoning_text', text: body.content[0].thinking }],
        signature: body.content[0].signature,
      },
      { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: body.content[1].text, annotations: [], logprobs: [] }] },
    ])
  })

  it('reads redacted thinking as encrypted content and a no-argument call as {}', () => {
    const body = json('redacted-thinking.json')
    const result = anthropicAdapter.readResult(body, makeCall({}))
    // 612 plain + 1905 written to the cache: the write is part of the prompt and reported on its own.
    expect(result.usage).toEqual({ ...usage(2517, 0, 88), input_tokens_details: { cached_tokens: 0, cache_write_tokens: 1905 } })
    expect(comparable(result.output)).toEqual([
      { type: 'reasoning', status: 'completed', format: 'anthropic-claude-v1', summary: [], encrypted_content: body.content[0].data },
      { type: 'function_call', status: 'completed', call_id: 'toolu_01VqgPdJzDKdEYfj3TnKZbWs', name: 'lookup_order', arguments: {} },
    ])
  })

  it('round-trips its reasoning and tool calls into the next request', () => {
    const output = anthropicAdapter.readResult(json('redacted-thinking.json'), makeCall({})).output
    const reasoning = anthropicAdapter.readResult(json('reasoning.json'), makeCall({})).output[0]!
    const body = bodyOf({ input: [{ type: 'message', role: 'user', content: 'Q' }, reasoning, ...output, { type: 'function_call_output', call_id: 'toolu_01VqgPdJzDKdEYfj3TnKZbWs', output: 'ok' }] })
    expect(body.messages[1].content.map((block: { type: string }) => block.type)).toEqual(['thinking', 'redacted_thinking', 'tool_use'])
    expect(body.messages[1].content[0].signature).toBe(json('reasoning.json').content[0].signature)
  })

  it('maps stop reasons to finish statuses', () => {
    const finish = (stop_reason: string) => {
      const result = anthropicAdapter.readResult({ ...json('text.json'), stop_reason }, makeCall({}))
      return [result.status, result.incompleteDetails, result.output[0]!.status]
    }
    expect(finish('max_tokens')).toEqual(['incomplete', { reason: 'max_output_tokens' }, 'incomplete'])
    expect(finish('model_context_window_exceeded')).toEqual(['incomplete', { reason: 'max_output_tokens' }, 'incomplete'])
    expect(finish('refusal')).toEqual(['incomplete', { reason: 'content_filter' }, 'incomplete'])
    // The server-tool loop paused mid-answer: not a finished answer.
    expect(finish('pause_turn')).toEqual(['incomplete', { reason: 'pause_turn' }, 'incomplete'])
    for (const reason of ['end_turn', 'tool_use', 'stop_sequence']) expect(finish(reason)).toEqual(['completed', null, 'completed'])
  })

  it('throws an UpstreamFailure for malformed bodies and error bodies', () => {
    expect(() => anthropicAdapter.readResult('oops', makeCall({}))).toThrow(UpstreamFailure)
    expect(() => anthropicAdapter.readResult({ id: 'msg_01' }, makeCall({}))).toThrow('Anthropic returned a malformed message')
    try {
      anthropicAdapter.readResult(json('error-overloaded.json'), makeCall({}))
      expect.unreachable()
    } catch (error) {
      expect((error as UpstreamFailure).errorType).toBe('provider_overloaded')
    }
  })
})

describe('anthropic readStream', () => {
  const pairs: Array<[string, string]> = [
    ['text.sse', 'text.json'],
    ['tool-call.sse', 'tool-call.json'],
    ['reasoning.sse', 'reasoning.json'],
  ]
  for (const [sse, body] of pairs) {
    for (const size of [1, 7]) {
      it(`${sse} in ${size}-byte chunks yields the same items and usage as ${body}`, async () => {
        const events = await collect(streamOf(sse, size))
        assertValidEventSequence(events.filter((event) => !event.type.startsWith('upstream.')))
        const expected = anthropicAdapter.readResult(json(body), makeCall({}))
        expect(comparable(itemsOf(events))).toEqual(comparable(expected.output))
        // Anthropic's `standard` tier, in the canonical names.
        expect(expected.serviceTier).toBe('default')
        expect(events.slice(-2)).toEqual([
          { type: 'upstream.usage', usage: expected.usage },
          { type: 'upstream.finish', status: 'completed', incompleteDetails: null, serviceTier: 'default' },
        ])
      })
    }
  }

  it('streams deltas as they arrive, in order', async () => {
    const events = await collect(streamOf('tool-call.sse', 7))
    const types = events.map((event) => event.type)
    expect(types.slice(0, 3)).toEqual(['response.output_item.added', 'response.content_part.added', 'response.output_text.delta'])
    const argumentDeltas = deltasOf(events, 'response.function_call_arguments.delta')
    expect(argumentDeltas).toEqual(['{"location":', ' "San', ' Francisc', 'o, CA"', ', "unit": "celsius"}', '{"location": "Par', 'is, France"', ', "unit": "c', 'elsius"}'])
  })

  it('reports max_tokens as incomplete', async () => {
    for (const size of [1, 7]) {
      const events = await collect(streamOf('max-tokens.sse', size))
      assertValidEventSequence(events.filter((event) => !event.type.startsWith('upstream.')))
      expect(itemsOf(events)).toEqual([
        expect.objectContaining({
          type: 'message',
          status: 'incomplete',
          content: [{ type: 'output_text', text: 'Once upon a time, in a village at the edge of a vast forest, there lived a clockmaker named', annotations: [], logprobs: [] }],
        }),
      ])
      expect(events.slice(-2)).toEqual([
        { type: 'upstream.usage', usage: usage(21, 0, 24) },
        { type: 'upstream.finish', status: 'incomplete', incompleteDetails: { reason: 'max_output_tokens' }, serviceTier: 'default' },
      ])
    }
  })

  it('reports the tier that served, from the JSON usage and message_start, in the canonical names', async () => {
    const priority = (name: string) => text(name).replace('"service_tier":"standard"', '"service_tier":"priority"')
    expect(anthropicAdapter.readResult(JSON.parse(priority('text.json')), makeCall({})).serviceTier).toBe('priority')
    const events = await collect(anthropicAdapter.readStream(chunked(priority('text.sse'), 7), makeCall({}, { stream: true })))
    expect(events.at(-1)).toEqual({ type: 'upstream.finish', status: 'completed', incompleteDetails: null, serviceTier: 'priority' })
    // `batch` (never a call of ours) and unknown words have no canonical name: nothing is reported.
    const batch = text('text.sse').replace('"service_tier":"standard"', '"service_tier":"batch"')
    expect((await collect(anthropicAdapter.readStream(chunked(batch, 7), makeCall({}, { stream: true })))).at(-1)).not.toHaveProperty('serviceTier')
  })

  it('reports a refusal as incomplete (content_filter) with no output', async () => {
    const events = await collect(streamOf('refusal.sse', 7))
    expect(events).toEqual([
      { type: 'upstream.usage', usage: usage(18, 0, 5) },
      { type: 'upstream.finish', status: 'incomplete', incompleteDetails: { reason: 'content_filter' }, serviceTier: 'default' },
    ])
  })

  it('throws the in-band error after yielding the earlier events', async () => {
    for (const size of [1, 7]) {
      const { events, error } = await collectUntilThrow(streamOf('error-midstream.sse', size))
      expect(error).toBeInstanceOf(UpstreamFailure)
      expect(error).toMatchObject({ errorType: 'provider_overloaded', status: 529, providerCode: 'overloaded_error', message: 'Overloaded' })
      const deltas = deltasOf(events, 'response.output_text.delta')
      expect(deltas.join('')).toBe('Here is a summary of the three main causes of the')
      expect(events.some((event) => event.type.startsWith('upstream.'))).toBe(false)
    }
  })

  it('maps each in-band error type', async () => {
    const failure = async (type: string, message = 'boom') => {
      const sse = `event: message_start\ndata: {"type":"message_start","message":{"id":"msg_01","usage":{"input_tokens":1}}}\n\nevent: error\ndata: {"type":"error","error":{"type":"${type}","message":"${message}"}}\n\n`
      const { error } = await collectUntilThrow(anthropicAdapter.readStream(chunked(sse, 5), makeCall({})))
      return (error as UpstreamFailure).errorType
    }
    expect(await failure('overloaded_error')).toBe('provider_overloaded')
    expect(await failure('rate_limit_error')).toBe('rate_limit_exceeded')
    expect(await failure('api_error')).toBe('provider_unavailable')
    expect(await failure('invalid_request_error', 'prompt is too long: 201000 tokens > 200000 maximum')).toBe('context_length_exceeded')
    expect(await failure('invalid_request_error', 'messages.1: bad block')).toBe('invalid_request')
    expect(await failure('something_new')).toBe('provider_unavailable')
  })

  it('throws when the stream ends without message_stop', async () => {
    const whole = text('text.sse')
    for (const cut of [whole.indexOf('event: message_stop'), whole.indexOf('event: message_delta'), whole.indexOf('Eiffel')]) {
      const { events, error } = await collectUntilThrow(anthropicAdapter.readStream(chunked(whole.slice(0, cut), 7), makeCall({})))
      expect(error).toBeInstanceOf(UpstreamFailure)
      expect(error).toMatchObject({ errorType: 'provider_unavailable', message: 'Anthropic stream ended before message_stop' })
      expect(events.some((event) => event.type.startsWith('upstream.'))).toBe(false)
    }
  })

  it('reads streams without event: lines (data names the event) and with CRLF line ends', async () => {
    const expected = await collect(streamOf('text.sse', 7))
    const dataOnly = text('text.sse').replace(/^event: .*\n/gm, '')
    expect(comparable(itemsOf(await collect(anthropicAdapter.readStream(chunked(dataOnly, 3), makeCall({})))))).toEqual(comparable(itemsOf(expected)))
    const crlf = text('text.sse').replace(/\n/g, '\r\n')
    const events = await collect(anthropicAdapter.readStream(chunked(crlf, 2), makeCall({})))
    expect(comparable(itemsOf(events))).toEqual(comparable(itemsOf(expected)))
    expect(events.at(-1)).toEqual(expected.at(-1))
  })
})

describe('anthropic toError', () => {
  const cases: Array<[string, number, number, string, string]> = [
    ['error-400-context.json', 400, 400, 'context_length_exceeded', 'invalid_request_error'],
    ['error-400-credit.json', 400, 402, 'payment_required', 'invalid_request_error'],
    ['error-401.json', 401, 401, 'authentication', 'authentication_error'],
    ['error-413.json', 413, 413, 'payload_too_large', 'request_too_large'],
    ['error-429.json', 429, 429, 'rate_limit_exceeded', 'rate_limit_error'],
    ['error-500.json', 500, 502, 'provider_unavailable', 'api_error'],
    ['error-overloaded.json', 529, 529, 'provider_overloaded', 'overloaded_error'],
  ]
  for (const [file, upstreamStatus, status, errorType, providerCode] of cases) {
    it(`${file} (HTTP ${upstreamStatus}) → ${status} ${errorType}`, () => {
      const bodyText = text(file)
      const error = anthropicAdapter.toError(upstreamStatus, bodyText)
      expect(isGatewayError(error)).toBe(true)
      expect(error).toBeInstanceOf(UpstreamFailure)
      expect(error.status).toBe(status)
      expect(error.metadata).toEqual({ error_type: errorType, provider_code: providerCode })
      expect(error.message).toBe(JSON.parse(bodyText).error.message)
      expect((error as UpstreamFailure).upstreamStatus).toBe(upstreamStatus)
    })
  }

  it('survives empty, HTML and non-JSON bodies', () => {
    const empty = anthropicAdapter.toError(502, '')
    expect(empty).toMatchObject({ status: 502, message: 'Anthropic returned HTTP 502 with an empty body', metadata: { error_type: 'provider_unavailable' } })
    const html = anthropicAdapter.toError(503, '<html><head><title>503 Service Temporarily Unavailable</title></head><body>nginx</body></html>')
    expect(html).toMatchObject({ status: 529, message: 'Anthropic returned HTTP 503', metadata: { error_type: 'provider_overloaded' } })
    const plain = anthropicAdapter.toError(504, 'upstream request timeout')
    expect(plain).toMatchObject({ status: 524, message: 'upstream request timeout', metadata: { error_type: 'timeout' } })
    const broken = anthropicAdapter.toError(400, '{"type":"error","error":{"type":"invalid_req')
    expect(broken).toMatchObject({ status: 400, metadata: { error_type: 'invalid_request' } })
    expect(broken.message).toBe('{"type":"error","error":{"type":"invalid_req')
  })

  it('never repeats a key the body quotes', () => {
    const body = JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key: ${API_KEY}` } })
    const error = anthropicAdapter.toError(401, body)
    expect(error.message).not.toContain(API_KEY)
    expect(error.message).not.toContain('Zx9yTqW4')
    expect(error.message).toContain('[redacted]')
    const plain = anthropicAdapter.toError(400, `bad key sk-ant-api03-abcdefghijklmnopqrstuvwxyz`)
    expect(plain.message).toBe('bad key [redacted]')
  })
})
