import { describe, expect, it } from 'vitest'
import { InvalidRequestError } from '../../../src/core/errors'
import type { UpstreamCall, UpstreamTarget } from '../../../src/providers/contract'
import { openAIChatAdapter } from '../../../src/providers/openai-chat'
import { UpstreamFailure } from '../../../src/core/upstream-failure'
import type { OutputItem, ResponsesRequest } from '../../../src/providers/types'
import { assertValidEventSequence, chunked, collect } from '../../helpers/stream-events'
import { fixture } from '../../helpers/upstream'

const PROVIDER = 'openai-chat'
const KEY = 'gsk_live_0123456789abcdefghij'
const target: UpstreamTarget = { baseURL: 'https://api.groq.com/openai/v1', apiKey: KEY }

const callOf = (request: Partial<ResponsesRequest> = {}, extra: Partial<UpstreamCall> = {}): UpstreamCall => ({
  request: { model: 'openai/gpt-4.1-mini', input: 'Hi', ...request },
  upstreamModel: 'gpt-4.1-mini',
  stream: false,
  ...extra,
})

const bodyOf = (call: UpstreamCall, to: UpstreamTarget = target) => JSON.parse(openAIChatAdapter.buildRequest(call, to).body)

const withOptions = (options: Record<string, string>): UpstreamTarget => ({ ...target, options })

const json = (name: string) => JSON.parse(fixture(PROVIDER, name).toString('utf8'))

type Event = { type: string } & Record<string, any>

const withoutIds = (items: OutputItem[]) => items.map(({ id: _id, ...rest }) => rest)

const doneItems = (events: Event[]) =>
  events
    .filter((event) => event.type === 'response.output_item.done')
    .sort((left, right) => (left.output_index as number) - (right.output_index as number))
    .map((event) => event.item as OutputItem)

const streamOf = async (text: string, size = 7): Promise<Event[]> =>
  collect(openAIChatAdapter.readStream(chunked(text, size), callOf({}, { stream: true })))

/** Runs a stream that must fail; returns the events yielded before the failure and the error. */
const failingStream = async (bytes: Uint8Array | string, size = 7) => {
  const events: Event[] = []
  try {
    for await (const event of openAIChatAdapter.readStream(chunked(bytes, size), callOf({}, { stream: true }))) events.push(event)
  } catch (error) {
    return { events, error }
  }
  throw new Error('the stream did not fail')
}

const expectInvalid = (call: UpstreamCall, message: string, to: UpstreamTarget = target) => {
  let thrown: unknown
  try {
    openAIChatAdapter.buildRequest(call, to)
  } catch (error) {
    thrown = error
  }
  expect(thrown).toBeInstanceOf(InvalidRequestError)
  expect((thrown as Error).message).toBe(message)
}

describe('openAIChatAdapter.buildRequest', () => {
  it('sends a plain string input as one user message, with bearer auth', () => {
    const request = openAIChatAdapter.buildRequest(callOf(), target)
    expect(request.url).toBe('https://api.groq.com/openai/v1/chat/completions')
    expect(request.method).toBe('POST')
    expect(request.headers).toEqual({
      'content-type': 'application/json',
      accept: 'application/json',
      authorization: `Bearer ${KEY}`,
    })
    expect(JSON.parse(request.body)).toEqual({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'Hi' }] })
  })

  it('asks for a stream with usage, accepts SSE, and adds configured headers', () => {
    const request = openAIChatAdapter.buildRequest(callOf({}, { stream: true }), { ...target, headers: { 'x-team': 'blue' } })
    expect(request.headers).toEqual({
      'content-type': 'application/json',
      accept: 'text/event-stream',
      authorization: `Bearer ${KEY}`,
      'x-team': 'blue',
    })
    expect(JSON.parse(request.body)).toEqual({
      model: 'gpt-4.1-mini',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
      stream_options: { include_usage: true },
    })
  })

  it('sends no Authorization header to a keyless self-hosted server', () => {
    const request = openAIChatAdapter.buildRequest(callOf(), { baseURL: 'http://127.0.0.1:8000/v1', apiKey: '' })
    expect(request.url).toBe('http://127.0.0.1:8000/v1/chat/completions')
    expect(request.headers).not.toHaveProperty('authorization')
  })

  it('translates a multi-turn history: roles, images, a file, merged tool calls and their outputs', () => {
    const body = bodyOf(
      callOf({
        instructions: 'Be brief.',
        input: [
          { type: 'message', role: 'system', content: 'You are a travel agent.' },
          { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Answer in French.' }, { type: 'input_text', text: 'Use metric units.' }] },
          {
            type: 'message',
            role: 'user',
            content: [
              { type: 'input_text', text: 'Where is this, and what does the PDF say?' },
              { type: 'input_image', image_url: 'https://example.com/paris.jpg', detail: 'high' },
              { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
              { type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0xLjQ=', filename: 'trip.pdf' },
            ],
          },
          { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Need the weather.' }] },
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check.', annotations: [] }] },
          { type: 'function_call', call_id: 'call_a', name: 'get_weather', arguments: '{"location":"Paris"}' },
          { type: 'function_call', call_id: 'call_b', name: 'get_weather', arguments: '{"location":"Tokyo"}' },
          { type: 'function_call_output', call_id: 'call_a', output: '{"celsius":18}' },
          { type: 'function_call_output', call_id: 'call_b', output: [{ type: 'input_text', text: '{"celsius":' }, { type: 'input_text', text: '24}' }] },
          { role: 'user', content: 'Thanks!' },
        ],
      }),
    )
    expect(body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'system', content: 'You are a travel agent.' },
      { role: 'system', content: 'Answer in French.\n\nUse metric units.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Where is this, and what does the PDF say?' },
          { type: 'image_url', image_url: { url: 'https://example.com/paris.jpg', detail: 'high' } },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0xLjQ=', filename: 'trip.pdf' } },
        ],
      },
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } },
          { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Tokyo"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"celsius":18}' },
      { role: 'tool', tool_call_id: 'call_b', content: '{"celsius":24}' },
      { role: 'user', content: 'Thanks!' },
    ])
  })

  it('opens an assistant message with empty content for tool calls without text', () => {
    const body = bodyOf(
      callOf({
        input: [
          { type: 'message', role: 'user', content: 'Weather?' },
          { type: 'function_call', call_id: 'call_a', name: 'get_weather', arguments: '{}' },
        ],
      }),
    )
    expect(body.messages[1]).toEqual({
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
    })
  })

  it('keeps developer messages as developer when configured', () => {
    const body = bodyOf(callOf({ input: [{ type: 'message', role: 'developer', content: 'Terse.' }] }), withOptions({ developerRole: 'true' }))
    expect(body.messages).toEqual([{ role: 'developer', content: 'Terse.' }])
  })

  it('sends reasoning back on the next assistant message when reasoningField is set', () => {
    const body = bodyOf(
      callOf({
        input: [
          { type: 'message', role: 'user', content: 'Weather?' },
          { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'Call the tool.' }] },
          { type: 'function_call', call_id: 'call_a', name: 'get_weather', arguments: '{}' },
          { type: 'function_call_output', call_id: 'call_a', output: 'sunny' },
        ],
      }),
      withOptions({ reasoningField: 'reasoning_content' }),
    )
    expect(body.messages[1]).toEqual({
      role: 'assistant',
      content: '',
      reasoning_content: 'Call the tool.',
      tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
    })
  })

  const tools = [
    { type: 'function', name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: {} }, strict: true },
    { type: 'function', name: 'get_time', description: null, parameters: null, strict: null },
  ]

  it('translates function tools and drops null fields', () => {
    const body = bodyOf(callOf({ tools, parallel_tool_calls: false }))
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: { name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: {} }, strict: true },
      },
      { type: 'function', function: { name: 'get_time' } },
    ])
    expect(body.parallel_tool_calls).toBe(false)
    expect(body).not.toHaveProperty('tool_choice')
  })

  it.each([
    ['auto', 'auto'],
    ['none', 'none'],
    ['required', 'required'],
    [{ type: 'function', name: 'get_time' }, { type: 'function', function: { name: 'get_time' } }],
  ])('maps tool_choice %j', (choice, expected) => {
    expect(bodyOf(callOf({ tools, tool_choice: choice as ResponsesRequest['tool_choice'] })).tool_choice).toEqual(expected)
  })

  it('sends only the allowed tools for an allowed_tools choice', () => {
    const body = bodyOf(
      callOf({ tools, tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'get_time' }] } }),
    )
    expect(body.tools).toEqual([{ type: 'function', function: { name: 'get_time' } }])
    expect(body.tool_choice).toBe('required')
  })

  it('omits tool_choice and parallel_tool_calls when there are no tools', () => {
    const body = bodyOf(callOf({ tool_choice: 'required', parallel_tool_calls: true }))
    expect(body).not.toHaveProperty('tool_choice')
    expect(body).not.toHaveProperty('parallel_tool_calls')
    expect(body).not.toHaveProperty('tools')
  })

  it('forwards sampling settings, omits nulls, and uses max_tokens for the compatible family', () => {
    const body = bodyOf(
      callOf({ temperature: 0.2, top_p: 0.9, frequency_penalty: 0.5, presence_penalty: null, top_k: 40, max_output_tokens: 256, top_logprobs: 3 }),
    )
    expect(body).toEqual({
      model: 'gpt-4.1-mini',
      messages: [{ role: 'user', content: 'Hi' }],
      temperature: 0.2,
      top_p: 0.9,
      frequency_penalty: 0.5,
      max_tokens: 256,
    })
  })

  it('forwards top_k only when configured', () => {
    expect(bodyOf(callOf({ top_k: 40 }), withOptions({ topK: 'true' })).top_k).toBe(40)
  })

  it('uses max_completion_tokens for OpenAI itself, or when configured', () => {
    const openAI: UpstreamTarget = { baseURL: 'https://api.openai.com/v1', apiKey: KEY }
    expect(bodyOf(callOf({ max_output_tokens: 64 }), openAI)).toMatchObject({ max_completion_tokens: 64 })
    expect(bodyOf(callOf({ max_output_tokens: 64 }), withOptions({ maxTokensField: 'max_completion_tokens' }))).toMatchObject({
      max_completion_tokens: 64,
    })
    expect(bodyOf(callOf({ max_output_tokens: 64 }), withOptions({ dialect: 'openai' }))).not.toHaveProperty('max_tokens')
  })

  it.each([
    ['none', undefined, 'none'],
    ['minimal', 'low', 'minimal'],
    ['low', 'low', 'low'],
    ['medium', 'medium', 'medium'],
    ['high', 'high', 'high'],
    ['xhigh', 'high', 'xhigh'],
    ['max', 'high', 'xhigh'],
  ])('maps reasoning effort %s (compatible: %s, OpenAI: %s)', (effort, compatible, openAI) => {
    const call = callOf({ reasoning: { effort, summary: 'auto' } })
    expect(bodyOf(call).reasoning_effort).toBe(compatible)
    expect(bodyOf(call, withOptions({ dialect: 'openai' })).reasoning_effort).toBe(openAI)
  })

  it('treats reasoning.enabled false as effort none', () => {
    expect(bodyOf(callOf({ reasoning: { enabled: false } }), withOptions({ dialect: 'openai' })).reasoning_effort).toBe('none')
    expect(bodyOf(callOf({ reasoning: { enabled: true } }))).not.toHaveProperty('reasoning_effort')
  })

  it('maps json_schema and json_object to response_format', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }
    expect(bodyOf(callOf({ text: { format: { type: 'json_schema', name: 'city', schema, strict: true } } })).response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'city', schema, strict: true },
    })
    expect(bodyOf(callOf({ text: { format: { type: 'json_object' } } })).response_format).toEqual({ type: 'json_object' })
    expect(bodyOf(callOf({ text: { format: { type: 'text' } } }))).not.toHaveProperty('response_format')
  })

  it('sends verbosity and prompt_cache_key to OpenAI only', () => {
    const call = callOf({ text: { verbosity: 'xhigh' }, prompt_cache_key: 'conversation-42' })
    expect(bodyOf(call, withOptions({ dialect: 'openai' }))).toMatchObject({ verbosity: 'high', prompt_cache_key: 'conversation-42' })
    const compatible = bodyOf(call)
    expect(compatible).not.toHaveProperty('verbosity')
    expect(compatible).not.toHaveProperty('prompt_cache_key')
  })

  it('sends the hashed end-user id as user, never the raw identifiers', () => {
    const body = bodyOf(callOf({ user: 'alice@example.com', safety_identifier: 'alice' }, { endUserId: 'eu_3f9a1c' }))
    expect(body.user).toBe('eu_3f9a1c')
    expect(JSON.stringify(body)).not.toContain('alice')
  })

  it('never sends fields a strict upstream rejects when configured', () => {
    const body = bodyOf(callOf({}, { stream: true, endUserId: 'eu_1' }), withOptions({ omitFields: 'user, stream_options' }))
    expect(body).toEqual({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'Hi' }], stream: true })
  })

  it('rejects what the chat API cannot carry, naming the place', () => {
    expectInvalid(callOf({ input: [{ type: 'item_reference', id: 'msg_1' }] }), 'input[0]: item type "item_reference" is not supported by Chat Completions')
    expectInvalid(callOf({ modalities: ['text', 'image'] }), 'modalities: image output is not supported by Chat Completions')
    expect(bodyOf(callOf({ modalities: ['text'] }))).not.toHaveProperty('modalities')
    expectInvalid(callOf({ tools: [{ type: 'web_search' }] }), 'tools[0]: tool type "web_search" is not supported by Chat Completions')
    expectInvalid(
      callOf({ tools, tool_choice: { type: 'web_search_preview' } }),
      'tool_choice: type "web_search_preview" is not supported by Chat Completions',
    )
    expectInvalid(
      callOf({ input: [{ type: 'message', role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] }),
      'input[0].content[0]: input_image needs an image_url (a URL or a data: URL); file_id is not supported by Chat Completions',
    )
    expectInvalid(
      callOf({ input: [{ type: 'message', role: 'user', content: [{ type: 'input_file', file_url: 'https://example.com/a.pdf' }] }] }),
      'input[0].content[0]: input_file needs file_data (a data: URL); file_url is not supported by Chat Completions',
    )
    expectInvalid(
      callOf({ input: [{ type: 'message', role: 'system', content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] }] }),
      'input[0].content[0]: content type "input_image" is not supported here by Chat Completions',
    )
    expectInvalid(
      callOf({ input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] }] }),
      'input[0].output[0]: tool results may only hold text for Chat Completions, not "input_image"',
    )
    expectInvalid(
      callOf({ input: [{ type: 'message', role: 'user', content: [{ type: 'input_video', video_url: 'https://example.com/a.mp4' }] }] }),
      'input[0].content[0]: content type "input_video" is not supported by Chat Completions',
    )
  })
})

describe('openAIChatAdapter.readResult', () => {
  it('reads a text answer', () => {
    const result = openAIChatAdapter.readResult(json('text.json'), callOf())
    expect(withoutIds(result.output)).toEqual([
      {
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Bonjour ! 👋 Hello! How can I help you today?', annotations: [], logprobs: [] }],
      },
    ])
    expect(result.output[0]!.id).toMatch(/^msg_/)
    expect(result.usage).toEqual({
      input_tokens: 14,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 13,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 27,
    })
    expect(result.status).toBe('completed')
    expect(result.incompleteDetails).toBeNull()
    expect(result.upstreamId).toBe('chatcmpl-CJ4rU8bH2kQ6wN1xYz5aLc3dVf9Eg')
  })

  it('reads parallel tool calls', () => {
    const result = openAIChatAdapter.readResult(json('tool-call.json'), callOf())
    expect(withoutIds(result.output)).toEqual([
      { type: 'function_call', status: 'completed', call_id: 'call_Qib2xfCV1qpazcvBOLg3wCNL', name: 'get_weather', arguments: '{"location":"Paris"}' },
      { type: 'function_call', status: 'completed', call_id: 'call_2Uzw0AEZQeOex2CP2TKjcLKc', name: 'get_weather', arguments: '{"location":"Tokyo"}' },
    ])
    expect(result.output[0]!.id).toMatch(/^fc_/)
    expect(result.status).toBe('completed')
    expect(result.usage!.total_tokens).toBe(127)
  })

  it('reads DeepSeek reasoning_content as a reasoning item before the message', () => {
    const result = openAIChatAdapter.readResult(json('reasoning.json'), callOf())
    expect(withoutIds(result.output)).toEqual([
      {
        type: 'reasoning',
        format: 'unknown',
        status: 'completed',
        summary: [],
        content: [{ type: 'reasoning_text', text: 'The user asks for 17 × 23. 17 × 20 = 340, and 17 × 3 = 51. 340 + 51 = 391.' }],
      },
      { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: '17 × 23 = **391**', annotations: [], logprobs: [] }] },
    ])
    expect(result.usage).toEqual({
      input_tokens: 16,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 41,
      output_tokens_details: { reasoning_tokens: 32 },
      total_tokens: 57,
    })
  })

  it('marks a length stop as incomplete', () => {
    const result = openAIChatAdapter.readResult(json('max-tokens.json'), callOf())
    expect(result.status).toBe('incomplete')
    expect(result.incompleteDetails).toEqual({ reason: 'max_output_tokens' })
    expect(result.output).toMatchObject([{ type: 'message', status: 'incomplete' }])
  })

  it('reads a refusal', () => {
    const result = openAIChatAdapter.readResult(json('refusal.json'), callOf())
    expect(withoutIds(result.output)).toEqual([
      { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'refusal', refusal: "I'm sorry, I can't assist with that request." }] },
    ])
  })

  it('reads cached tokens, Groq reasoning, Mistral thinking parts and xAI reasoning usage', () => {
    const result = openAIChatAdapter.readResult(
      {
        id: 'x',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: [{ type: 'thinking', thinking: [{ type: 'text', text: 'Hmm.' }] }, { type: 'text', text: 'Yes.' }] },
            finish_reason: 'stop',
          },
        ],
        // xAI: completion_tokens excludes reasoning, total includes it.
        usage: { prompt_tokens: 100, completion_tokens: 5, total_tokens: 405, prompt_tokens_details: { cached_tokens: 64 }, completion_tokens_details: { reasoning_tokens: 300 } },
      },
      callOf(),
    )
    expect(result.output.map((item) => item.type)).toEqual(['reasoning', 'message'])
    expect(result.usage).toEqual({
      input_tokens: 100,
      input_tokens_details: { cached_tokens: 64 },
      output_tokens: 305,
      output_tokens_details: { reasoning_tokens: 300 },
      total_tokens: 405,
    })
    const groq = openAIChatAdapter.readResult(
      { choices: [{ message: { content: 'Hi', reasoning: 'Greet.' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } },
      callOf(),
    )
    expect(groq.output[0]).toMatchObject({ type: 'reasoning', content: [{ type: 'reasoning_text', text: 'Greet.' }] })
  })

  it('throws for an error delivered in a 200 body', () => {
    expect(() => openAIChatAdapter.readResult({ error: { message: 'Rate limited upstream', code: 429 } }, callOf())).toThrow(UpstreamFailure)
  })
})

describe('openAIChatAdapter.readStream', () => {
  const pairs = [
    ['text.sse', 'text.json'],
    ['tool-call.sse', 'tool-call.json'],
    ['reasoning.sse', 'reasoning.json'],
    ['max-tokens.sse', 'max-tokens.json'],
  ] as const

  for (const [sse, body] of pairs) {
    for (const size of [1, 7]) {
      it(`streams ${sse} in ${size}-byte chunks into the same items and usage as ${body}`, async () => {
        const events: Event[] = await collect(openAIChatAdapter.readStream(chunked(fixture(PROVIDER, sse), size), callOf({}, { stream: true })))
        assertValidEventSequence(events)
        const result = openAIChatAdapter.readResult(json(body), callOf())
        expect(withoutIds(doneItems(events))).toEqual(withoutIds(result.output))
        const [usage, finish] = events.slice(-2)
        expect(usage).toEqual({ type: 'upstream.usage', usage: result.usage })
        // The tier the fixture's chunks name (OpenAI's `default`; the reasoning one, from another host, names none).
        expect(result.serviceTier).toBe(sse === 'reasoning.sse' ? undefined : 'default')
        expect(finish).toEqual({ type: 'upstream.finish', status: result.status, incompleteDetails: result.incompleteDetails, ...(result.serviceTier ? { serviceTier: result.serviceTier } : {}) })
        expect(events.filter((event) => event.type.startsWith('upstream.'))).toHaveLength(2)
      })
    }
  }

  it('streams argument deltas as they arrive', async () => {
    const events = await streamOf(fixture(PROVIDER, 'tool-call.sse').toString('utf8'))
    const deltas = events.filter((event) => event.type === 'response.function_call_arguments.delta').map((event) => event.delta)
    expect(deltas).toEqual(['{"', 'location', '":"', 'Paris', '"}', '{"', 'location', '":"', 'Tokyo', '"}'])
  })

  it('throws the in-band error after yielding what came before it', async () => {
    for (const size of [1, 7]) {
      const { events, error } = await failingStream(fixture(PROVIDER, 'error-midstream.sse'), size)
      expect(error).toBeInstanceOf(UpstreamFailure)
      expect((error as UpstreamFailure).errorType).toBe('provider_unavailable')
      expect((error as UpstreamFailure).message).toBe('The server had an error while processing your request. Sorry about that!')
      const text = events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta).join('')
      expect(text).toBe('The capital of France is')
      expect(events.some((event) => event.type.startsWith('upstream.'))).toBe(false)
    }
  })

  it('classifies an in-band error by its code', async () => {
    const { error } = await failingStream(
      'data: {"error":{"message":"This model\'s maximum context length is 8192 tokens.","type":"BadRequestError","param":null,"code":400}}\n\n',
    )
    expect((error as UpstreamFailure).errorType).toBe('context_length_exceeded')
    const named = await failingStream('event: error\ndata: {"message":"Too many requests","type":"rate_limit_error"}\n\n')
    expect((named.error as UpstreamFailure).errorType).toBe('rate_limit_exceeded')
  })

  it('throws when the connection drops before the finish', async () => {
    const text = fixture(PROVIDER, 'text.sse').toString('utf8')
    const { events, error } = await failingStream(text.slice(0, text.indexOf('"finish_reason":"stop"') - 300))
    expect(error).toBeInstanceOf(UpstreamFailure)
    expect((error as UpstreamFailure).errorType).toBe('provider_unavailable')
    expect(events.some((event) => event.type === 'response.output_text.delta')).toBe(true)
  })

  it('reports the tier the chunks and the body name, and drops a host\'s own tier names', async () => {
    const withTier = (name: string, tier: string) => fixture(PROVIDER, name).toString('utf8').replace(/"service_tier": ?"default"/g, `"service_tier":"${tier}"`)
    expect(openAIChatAdapter.readResult(JSON.parse(withTier('text.json', 'flex')), callOf()).serviceTier).toBe('flex')
    expect((await streamOf(withTier('text.sse', 'priority'))).at(-1)).toEqual({ type: 'upstream.finish', status: 'completed', incompleteDetails: null, serviceTier: 'priority' })
    // Groq's `on_demand` is no tier an OpenAI client knows.
    expect(openAIChatAdapter.readResult(JSON.parse(withTier('text.json', 'on_demand')), callOf())).not.toHaveProperty('serviceTier')
    expect((await streamOf(withTier('text.sse', 'on_demand'))).at(-1)).not.toHaveProperty('serviceTier')
  })

  it('finishes without [DONE] once a finish reason arrived', async () => {
    const text = fixture(PROVIDER, 'text.sse').toString('utf8')
    const events = await streamOf(text.slice(0, text.indexOf('data: [DONE]')))
    assertValidEventSequence(events)
    expect(events.at(-1)).toEqual({ type: 'upstream.finish', status: 'completed', incompleteDetails: null, serviceTier: 'default' })
  })

  it('finishes at [DONE], then reads the body to its end without letting the rest change the answer', async () => {
    // Leaving the body unread would abort the exchange and lose its keep-alive connection.
    let isBodyReadToEnd = false
    async function* body() {
      yield new TextEncoder().encode('data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
      yield new TextEncoder().encode('data: {"choices":[{"index":0,"delta":{"content":"late"}}]}\n\n')
      isBodyReadToEnd = true
      throw new Error('connection reset after [DONE]')
    }
    const events = await collect(openAIChatAdapter.readStream(body(), callOf({}, { stream: true })))
    expect(events.at(-1)).toMatchObject({ type: 'upstream.finish', status: 'completed' })
    expect(events.filter((event) => event.type === 'response.output_text.delta').map((event) => ('delta' in event ? event.delta : null))).toEqual(['ok'])
    expect(isBodyReadToEnd).toBe(true)
  })

  it('handles whole tool calls in one chunk, calls without index, Groq usage and content filters', async () => {
    const events = await streamOf(
      [
        'data: {"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"a","arguments":"{\\"x\\":1}"}}]}}]}',
        'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_2","type":"function","function":{"name":"b","arguments":{"y":2}}}]}}]}',
        'data: {"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}],"x_groq":{"id":"req_1","usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}}',
        'data: [DONE]',
        '',
      ].join('\n\n'),
    )
    assertValidEventSequence(events)
    expect(withoutIds(doneItems(events))).toEqual([
      { type: 'function_call', status: 'completed', call_id: 'call_1', name: 'a', arguments: '{"x":1}' },
      { type: 'function_call', status: 'completed', call_id: 'call_2', name: 'b', arguments: '{"y":2}' },
    ])
    expect(events.at(-2)).toMatchObject({ type: 'upstream.usage', usage: { input_tokens: 9, output_tokens: 4, total_tokens: 13 } })
    expect(events.at(-1)).toEqual({ type: 'upstream.finish', status: 'incomplete', incompleteDetails: { reason: 'content_filter' } })
  })

  it('reports no usage when the upstream sent none, so the engine estimates it', async () => {
    const events = await streamOf('data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    expect(events.at(-1)).toMatchObject({ type: 'upstream.finish', status: 'completed' })
    expect(events.some((event) => event.type === 'upstream.usage')).toBe(false)
  })
})

describe('openAIChatAdapter.toError', () => {
  const errorOf = (status: number, name: string) => openAIChatAdapter.toError(status, fixture(PROVIDER, name).toString('utf8')) as UpstreamFailure

  it.each([
    [400, 'error-400-context.json', 400, 'context_length_exceeded'],
    [401, 'error-401.json', 401, 'authentication'],
    [429, 'error-429.json', 429, 'rate_limit_exceeded'],
    [503, 'error-overloaded.json', 529, 'provider_overloaded'],
    [413, 'error-groq-413-tpm.json', 429, 'rate_limit_exceeded'],
    [422, 'error-mistral-422.json', 422, 'unprocessable'],
    [400, 'error-vllm-400-context.json', 400, 'context_length_exceeded'],
  ])('maps HTTP %i %s to %i %s', (status, name, clientStatus, errorType) => {
    const error = errorOf(status, name)
    expect(error).toBeInstanceOf(UpstreamFailure)
    expect(error.status).toBe(clientStatus)
    expect(error.metadata).toMatchObject({ error_type: errorType })
    expect(error.upstreamStatus).toBe(status)
  })

  it('keeps the message, the provider code and the retry delay', () => {
    const error = errorOf(429, 'error-429.json')
    expect(error.message).toContain('Rate limit reached for gpt-4.1-mini')
    expect(error.providerCode).toBe('rate_limit_exceeded')
    expect(error.retryAfterSeconds).toBe(1)
    expect(errorOf(400, 'error-400-context.json').message).toBe(
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
    )
  })

  it('never repeats a key the upstream quoted', () => {
    const masked = errorOf(401, 'error-401.json')
    expect(masked.message).not.toContain('sk-proj')
    expect(masked.message).toContain('Incorrect API key provided: [redacted]')
    const quoted = openAIChatAdapter.toError(401, JSON.stringify({ error: { message: `Invalid API Key ${KEY}`, code: 'invalid_api_key' } }))
    expect(quoted.message).not.toContain(KEY)
  })

  it('reads Mistral validation details without echoing the input', () => {
    const error = errorOf(422, 'error-mistral-422.json')
    expect(error.message).toBe('body.stream_options: Extra inputs are not permitted')
  })

  it('survives empty, HTML and plain-text bodies', () => {
    const empty = openAIChatAdapter.toError(500, '') as UpstreamFailure
    expect(empty.message).toBe('Upstream error (HTTP 500)')
    expect(empty.metadata).toMatchObject({ error_type: 'provider_unavailable' })
    const html = openAIChatAdapter.toError(502, '<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>')
    expect(html.message).toBe('Upstream error (HTTP 502)')
    expect(html.status).toBe(502)
    const ollama = openAIChatAdapter.toError(404, '{"error":"model \\"llama9\\" not found, try pulling it first"}')
    expect(ollama.message).toBe('model "llama9" not found, try pulling it first')
    expect(ollama.metadata).toMatchObject({ error_type: 'not_found' })
    expect(openAIChatAdapter.toError(504, 'upstream request timeout').metadata).toMatchObject({ error_type: 'timeout' })
  })
})
