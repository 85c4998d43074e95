import { describe, expect, it } from 'vitest'
import { InvalidRequestError, isGatewayError } from '../../../src/core/errors'
import type { UpstreamCall, UpstreamStreamEvent, UpstreamTarget } from '../../../src/providers/contract'
import { openAIResponsesAdapter as adapter } from '../../../src/providers/openai-responses'
import { readCompletedUsage } from '../../../src/providers/openai-responses/completed-usage'
import { UpstreamFailure } from '../../../src/core/upstream-failure'
import type { ResponsesRequest } from '../../../src/providers/types'
import { assertValidEventSequence, chunked, collect } from '../../helpers/stream-events'
import { fixture } from '../../helpers/upstream'

const PROVIDER = 'openai'
const API_KEY = 'sk-proj-test0123456789abcdefghij'
const target: UpstreamTarget = {
  baseURL: 'https://api.openai.com/v1',
  apiKey: API_KEY,
  headers: { 'OpenAI-Organization': 'org-test', Authorization: 'Bearer not-this-one' },
}

const makeCall = (request: Partial<ResponsesRequest>, overrides: Partial<UpstreamCall> = {}): UpstreamCall => ({
  request: { model: 'openai/gpt-4.1', input: 'Hello', ...request },
  upstreamModel: 'gpt-4.1',
  stream: false,
  ...overrides,
})

const sentBody = (call: UpstreamCall) => JSON.parse(adapter.buildRequest(call, target).body)

const thrown = (run: () => unknown): unknown => {
  try {
    run()
  } catch (error) {
    return error
  }
  throw new Error('expected a throw')
}

const json = (name: string) => JSON.parse(fixture(PROVIDER, name).toString('utf8'))

/** The events of an SSE fixture as OpenAI sent them (payloads only). */
const upstreamEvents = (name: string): Array<Record<string, any>> =>
  fixture(PROVIDER, name)
    .toString('utf8')
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => JSON.parse(block.split('\n').find((line) => line.startsWith('data: '))!.slice(6)))

/** The `data:` lines of a fixture, as sent. */
const dataLines = (name: string): string[] =>
  fixture(PROVIDER, name)
    .toString('utf8')
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice(6))

/** An event's fields, as JSON would carry them (an event relayed as sent reads them from its text). */
const fieldsOf = (event: unknown): unknown => JSON.parse(JSON.stringify(event))

const withoutIds = (value: unknown): unknown => JSON.parse(JSON.stringify(value, (key, inner) => (key === 'id' ? undefined : inner)))

type AnyEvent = { type: string } & Record<string, any>

/** The events as the client will see them: relayed ones unwrapped, the internal usage and finish left out. */
const itemEvents = (events: UpstreamStreamEvent[]) =>
  events.flatMap((event): AnyEvent[] => (event.type === 'relayed' ? [event.event] : event.type.startsWith('upstream.') ? [] : [event]))

const doneItems = (events: UpstreamStreamEvent[]) =>
  itemEvents(events)
    .filter((event) => event.type === 'response.output_item.done')
    .sort((left, right) => left.output_index - right.output_index)
    .map((event) => event.item)

/** Runs a stream to its end or its throw, keeping what was yielded before. */
const drain = async (body: AsyncIterable<Uint8Array>) => {
  const events: UpstreamStreamEvent[] = []
  try {
    for await (const event of adapter.readStream(body, makeCall({}, { stream: true }))) events.push(event)
  } catch (error) {
    return { events, error }
  }
  return { events, error: undefined }
}

const sse = (...events: object[]) =>
  events.map((event) => `event: ${(event as { type: string }).type}\ndata: ${JSON.stringify(event)}\n\n`).join('')

describe('openAIResponsesAdapter', () => {
  it('declares the contract', () => {
    expect(adapter.contractVersion).toBe(1)
    expect(adapter.api).toBe('openai-responses')
  })

  describe('buildRequest', () => {
    it('posts a plain string input to {baseURL}/responses with bearer auth and store: false', () => {
      const request = adapter.buildRequest(makeCall({ input: 'What is the capital of France?' }), target)
      expect(request.url).toBe('https://api.openai.com/v1/responses')
      expect(request.method).toBe('POST')
      expect(request.headers).toEqual({
        'OpenAI-Organization': 'org-test',
        authorization: `Bearer ${API_KEY}`,
        'content-type': 'application/json',
        accept: 'application/json',
      })
      expect(JSON.parse(request.body)).toEqual({ model: 'gpt-4.1', input: 'What is the capital of France?', store: false, stream: false })
    })

    it('builds the URL from a loopback base URL and asks for an event stream when streaming', () => {
      const request = adapter.buildRequest(makeCall({}, { stream: true }), { baseURL: 'http://127.0.0.1:4010/v1', apiKey: API_KEY })
      expect(request.url).toBe('http://127.0.0.1:4010/v1/responses')
      expect(request.headers).toEqual({ authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', accept: 'text/event-stream' })
      expect(JSON.parse(request.body)).toMatchObject({ stream: true, store: false })
    })

    it('passes a multi-turn history through, cleaning only what OpenAI rejects', () => {
      const request: Partial<ResponsesRequest> = {
        instructions: 'You are a concise travel assistant.',
        input: [
          { type: 'message', role: 'system', content: 'Answer in English.' },
          { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Prefer metric units.' }] },
          {
            type: 'message',
            role: 'user',
            content: [
              { type: 'input_text', text: 'What is in these pictures and this file?', cache_control: { type: 'ephemeral' } },
              { type: 'input_image', image_url: 'https://example.com/eiffel.jpg', detail: 'high' },
              { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
              { type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0xLjQK', filename: 'itinerary.pdf' },
            ],
          },
          { role: 'assistant', content: 'Let me check the weather first.' },
          {
            type: 'reasoning',
            id: 'rs_0d4a6c8e1f3b5d7f',
            summary: [{ type: 'summary_text', text: 'Need the weather.' }],
            content: [{ type: 'reasoning_text', text: 'raw thoughts' }],
            encrypted_content: 'gAAAAABowSR4-opaque',
            format: 'openai-responses-v1',
            signature: 'not-for-openai',
            status: 'completed',
          },
          { type: 'reasoning', id: 'rs_from_claude', summary: [], encrypted_content: 'EqQBCkYIBxgCKkA', signature: 'sig', format: 'anthropic-claude-v1' },
          { type: 'reasoning', id: 'rs_stored_only', summary: [{ type: 'summary_text', text: 'no ciphertext' }] },
          { type: 'function_call', id: 'fc_0e2b7d6a9c1f3e5b', call_id: 'call_Xk3q9', name: 'get_weather', arguments: '{"location":"Paris, France"}', status: 'completed' },
          { type: 'function_call_output', call_id: 'call_Xk3q9', output: '{"temperature":18,"unit":"celsius"}' },
          { type: 'function_call', id: 'call_from_chat_completions', call_id: 'call_Yz1', name: 'get_time', arguments: '{}' },
          { type: 'function_call_output', call_id: 'call_Yz1', output: '14:02' },
          {
            type: 'message',
            id: 'msg_05b8e2d4f6a1c3e5',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: 'It is 18 °C in Paris.', annotations: [] }],
          },
          { type: 'message', id: '773d328c-6ddd-432e-a9d9-15395fbf67b2', role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot help with that.' }] },
          { type: 'message', role: 'user', content: 'Thanks! And tomorrow?' },
        ],
      }
      const call = makeCall(request)
      const before = structuredClone(call.request)
      expect(sentBody(call)).toEqual({
        model: 'gpt-4.1',
        instructions: 'You are a concise travel assistant.',
        input: [
          { type: 'message', role: 'system', content: 'Answer in English.' },
          { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Prefer metric units.' }] },
          {
            type: 'message',
            role: 'user',
            content: [
              { type: 'input_text', text: 'What is in these pictures and this file?' },
              { type: 'input_image', image_url: 'https://example.com/eiffel.jpg', detail: 'high' },
              { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
              { type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0xLjQK', filename: 'itinerary.pdf' },
            ],
          },
          { role: 'assistant', content: 'Let me check the weather first.' },
          {
            type: 'reasoning',
            id: 'rs_0d4a6c8e1f3b5d7f',
            summary: [{ type: 'summary_text', text: 'Need the weather.' }],
            encrypted_content: 'gAAAAABowSR4-opaque',
          },
          { type: 'function_call', id: 'fc_0e2b7d6a9c1f3e5b', call_id: 'call_Xk3q9', name: 'get_weather', arguments: '{"location":"Paris, France"}', status: 'completed' },
          { type: 'function_call_output', call_id: 'call_Xk3q9', output: '{"temperature":18,"unit":"celsius"}' },
          { type: 'function_call', call_id: 'call_Yz1', name: 'get_time', arguments: '{}' },
          { type: 'function_call_output', call_id: 'call_Yz1', output: '14:02' },
          {
            type: 'message',
            id: 'msg_05b8e2d4f6a1c3e5',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: 'It is 18 °C in Paris.', annotations: [] }],
          },
          { type: 'message', role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot help with that.' }] },
          { type: 'message', role: 'user', content: 'Thanks! And tomorrow?' },
        ],
        store: false,
        stream: false,
      })
      expect(call.request).toEqual(before)
    })

    it('forwards function tools and the server tools OpenAI runs itself, with every tool_choice form', () => {
      const tools = [
        {
          type: 'function',
          name: 'get_weather',
          description: 'Get the current weather for a location.',
          parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'], additionalProperties: false },
          strict: true,
          async: true,
        },
        { type: 'web_search', search_context_size: 'low', user_location: { type: 'approximate', country: 'FR' } },
        { type: 'file_search', vector_store_ids: ['vs_123'], max_num_results: 4 },
        { type: 'code_interpreter', container: { type: 'auto' } },
        { type: 'image_generation', quality: 'low' },
        { type: 'mcp', server_label: 'deepwiki', server_url: 'https://mcp.deepwiki.com/mcp', require_approval: 'never' },
      ]
      const expectedTools = [{ ...tools[0], async: undefined }, ...tools.slice(1)]
      for (const toolChoice of ['auto', 'none', 'required', { type: 'function', name: 'get_weather' }, { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'web_search' }] }] as const) {
        const body = sentBody(makeCall({ tools, tool_choice: toolChoice as ResponsesRequest['tool_choice'], parallel_tool_calls: false }))
        expect(body).toEqual(JSON.parse(JSON.stringify({ model: 'gpt-4.1', input: 'Hello', tool_choice: toolChoice, parallel_tool_calls: false, tools: expectedTools, store: false, stream: false })))
      }
    })

    it('rejects tools OpenAI cannot run and input items it does not take', () => {
      const tool = thrown(() => adapter.buildRequest(makeCall({ tools: [{ type: 'function', name: 'f' }, { type: 'service:web_search' }] }), target))
      expect(tool).toBeInstanceOf(InvalidRequestError)
      expect((tool as Error).message).toBe('tools[1]: tool type "service:web_search" is not supported by OpenAI')

      const reference = thrown(() => adapter.buildRequest(makeCall({ input: [{ type: 'message', role: 'user', content: 'Hi' }, { type: 'item_reference', id: 'msg_1' }] }), target))
      expect(reference).toBeInstanceOf(InvalidRequestError)
      expect((reference as Error).message).toBe('input[1]: item type "item_reference" is not supported by OpenAI')

      const untyped = thrown(() => adapter.buildRequest(makeCall({ input: [{ content: 'no role' }] }), target))
      expect((untyped as Error).message).toBe('input[0]: item type "undefined" is not supported by OpenAI')
    })

    it('never forwards background: true (the gateway runs a background request itself, as an ordinary call)', () => {
      expect(sentBody(makeCall({ background: true }))).not.toHaveProperty('background')
    })

    it('asks for images through the image_generation tool, its options from image_config', () => {
      const both = sentBody(makeCall({ modalities: ['text', 'image'], image_config: { size: '1024x1536', quality: 'high', output_format: 'webp' } }))
      expect(both.tools).toEqual([{ type: 'image_generation', size: '1024x1536', quality: 'high', output_format: 'webp' }])
      expect(both).not.toHaveProperty('tool_choice')
      expect(both).not.toHaveProperty('modalities')
      expect(both).not.toHaveProperty('image_config')

      // Images only forces the tool, after the caller's own tools, unless the caller chose.
      const only = sentBody(makeCall({ modalities: ['image'], tools: [{ type: 'function', name: 'f' }] }))
      expect(only.tools).toEqual([{ type: 'function', name: 'f' }, { type: 'image_generation' }])
      expect(only.tool_choice).toEqual({ type: 'image_generation' })
      expect(sentBody(makeCall({ modalities: ['image'], tool_choice: 'auto' })).tool_choice).toBe('auto')

      // The caller's own image_generation tool is kept as it is.
      const own = sentBody(makeCall({ modalities: ['image', 'text'], tools: [{ type: 'image_generation', size: 'auto' }] }))
      expect(own.tools).toEqual([{ type: 'image_generation', size: 'auto' }])

      expect(sentBody(makeCall({ modalities: ['text'] }))).not.toHaveProperty('tools')
    })

    it('refuses image_config keys the image_generation tool does not take, and options given twice', () => {
      const unknown = thrown(() => adapter.buildRequest(makeCall({ modalities: ['image'], image_config: { aspect_ratio: '16:9' } }), target))
      expect(unknown).toBeInstanceOf(InvalidRequestError)
      expect((unknown as Error).message).toBe(
        'image_config.aspect_ratio: not supported by OpenAI (it takes action, background, input_fidelity, moderation, output_compression, output_format, partial_images, quality, size)',
      )
      const twice = thrown(() => adapter.buildRequest(makeCall({ modalities: ['image'], image_config: { size: 'auto' }, tools: [{ type: 'image_generation' }] }), target))
      expect((twice as Error).message).toBe('image_config: set these options on the image_generation tool you sent, not in both places')
    })

    it('forwards OpenAI sampling settings and drops those it does not have', () => {
      expect(
        sentBody(makeCall({ temperature: 0.2, top_p: 0.9, max_output_tokens: 512, top_logprobs: 3, top_k: 40, frequency_penalty: 0.5, presence_penalty: 0.1, truncation: 'auto' })),
      ).toEqual({ model: 'gpt-4.1', input: 'Hello', temperature: 0.2, top_p: 0.9, max_output_tokens: 512, top_logprobs: 3, truncation: 'auto', store: false, stream: false })
      // null means "OpenAI's default": leave it out.
      expect(sentBody(makeCall({ temperature: null, top_p: null, max_output_tokens: null, instructions: null, metadata: null, reasoning: null, text: null, service_tier: null }))).toEqual({
        model: 'gpt-4.1',
        input: 'Hello',
        store: false,
        stream: false,
      })
    })

    it('maps reasoning: effort and summary pass, enabled:false asks for no reasoning, budgets are dropped', () => {
      expect(sentBody(makeCall({ reasoning: { effort: 'high', summary: 'auto', enabled: true, max_tokens: 2000 } })).reasoning).toEqual({ effort: 'high', summary: 'auto' })
      expect(sentBody(makeCall({ reasoning: { effort: 'max' } })).reasoning).toEqual({ effort: 'max' })
      expect(sentBody(makeCall({ reasoning: { enabled: false } })).reasoning).toEqual({ effort: 'none' })
      expect(sentBody(makeCall({ reasoning: { effort: 'minimal', enabled: false } })).reasoning).toEqual({ effort: 'minimal' })
      expect(sentBody(makeCall({ reasoning: { enabled: true, max_tokens: 1024 } }))).not.toHaveProperty('reasoning')
      expect(sentBody(makeCall({ reasoning: { summary: 'detailed', context: 'all_turns', mode: 'pro' } as never })).reasoning).toEqual({
        summary: 'detailed',
        context: 'all_turns',
        mode: 'pro',
      })
    })

    it('passes json_schema structured output through and caps verbosity at high', () => {
      const format = {
        type: 'json_schema' as const,
        name: 'weather',
        description: 'A weather report',
        schema: { type: 'object', properties: { temperature: { type: 'number' } }, required: ['temperature'], additionalProperties: false },
        strict: true,
      }
      expect(sentBody(makeCall({ text: { format, verbosity: 'xhigh' } })).text).toEqual({ format, verbosity: 'high' })
      expect(sentBody(makeCall({ text: { format: { type: 'json_object' }, verbosity: 'low' } })).text).toEqual({ format: { type: 'json_object' }, verbosity: 'low' })
    })

    it('strips gateway-only fields, forwards OpenAI ones, and sends only the end-user hash', () => {
      const body = sentBody(
        makeCall(
          {
            models: ['anthropic/claude-sonnet-4.5'],
            provider: { allow_fallbacks: false },
            plugins: [{ id: 'web' }],
            route: 'fallback',
            session_id: 'session-1',
            debug: { echo_upstream_body: true },
            trace: { trace_id: 't1' },
            transforms: ['middle-out'],
            stop_server_tools_when: [{ type: 'step_count_is', step_count: 3 }],
            max_tool_calls: 5,
            image_config: { size: '1024x1024' },
            modalities: ['text'],
            cache_control: { type: 'ephemeral' },
            usage: { include: true },
            previous_response_id: null,
            user: 'alice@example.com',
            safety_identifier: 'alice',
            metadata: { ticket: 'T-42' },
            include: ['reasoning.encrypted_content'],
            prompt_cache_key: 'tenant-7',
            prompt_cache_options: { mode: 'explicit', ttl: '30m' },
            prompt: { id: 'pmpt_abc', variables: { city: 'Paris' } },
            service_tier: 'fast',
            background: false,
          },
          { endUserId: 'u_5c4e0b6d0f1a4c2f' },
        ),
      )
      expect(body).toEqual({
        model: 'gpt-4.1',
        input: 'Hello',
        metadata: { ticket: 'T-42' },
        include: ['reasoning.encrypted_content'],
        prompt: { id: 'pmpt_abc', variables: { city: 'Paris' } },
        prompt_cache_key: 'tenant-7',
        prompt_cache_options: { mode: 'explicit', ttl: '30m' },
        service_tier: 'priority',
        background: false,
        safety_identifier: 'u_5c4e0b6d0f1a4c2f',
        store: false,
        stream: false,
      })
      expect(sentBody(makeCall({ service_tier: 'flex' })).service_tier).toBe('flex')
    })
  })

  describe('readResult', () => {
    it('reads a text answer', () => {
      const body = json('text.json')
      const result = adapter.readResult(body, makeCall({}))
      expect(result.output).toEqual(body.output)
      expect(result.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'The capital of France is Paris — home to the Eiffel Tower and the Louvre.' }] })
      expect(result.usage).toEqual({ input_tokens: 19, input_tokens_details: { cached_tokens: 0 }, output_tokens: 18, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 37 })
      expect(result.status).toBe('completed')
      expect(result.incompleteDetails).toBeNull()
      expect(result.upstreamId).toBe(body.id)
    })

    it('reads a function call', () => {
      const result = adapter.readResult(json('tool-call.json'), makeCall({}))
      expect(result.output).toEqual([
        { id: expect.stringMatching(/^fc_/), type: 'function_call', status: 'completed', arguments: '{"location":"Paris, France","unit":"celsius"}', call_id: 'call_Xk3q9LmT2vBn7RwZ1pYd4sHe', name: 'get_weather' },
      ])
      expect(result.usage!.total_tokens).toBe(95)
    })

    it('reads reasoning with its summary and encrypted content, tagged with its format', () => {
      const body = json('reasoning.json')
      const result = adapter.readResult(body, makeCall({}))
      expect(result.output).toHaveLength(2)
      expect(result.output[0]).toEqual({ ...body.output[0], format: 'openai-responses-v1' })
      expect(result.output[0]).toMatchObject({ type: 'reasoning', encrypted_content: expect.stringMatching(/^gAAAAAB/) })
      expect((result.output[0] as { summary: unknown[] }).summary).toHaveLength(2)
      expect(result.output[1]).toEqual(body.output[1])
      expect(result.usage).toEqual({ input_tokens: 18, input_tokens_details: { cached_tokens: 0 }, output_tokens: 211, output_tokens_details: { reasoning_tokens: 192 }, total_tokens: 229 })
    })

    it('reads an answer cut by max_output_tokens as incomplete', () => {
      const result = adapter.readResult(json('max-tokens.json'), makeCall({}))
      expect(result.status).toBe('incomplete')
      expect(result.incompleteDetails).toEqual({ reason: 'max_output_tokens' })
      expect(result.output[0]).toMatchObject({ type: 'message', status: 'incomplete' })
      expect(result.usage!.output_tokens).toBe(16)
    })

    it('keeps server-tool items and citations exactly as OpenAI sent them', () => {
      const body = json('web-search.json')
      const result = adapter.readResult(body, makeCall({}))
      expect(result.output).toEqual(body.output)
      expect(result.output[0]).toMatchObject({ type: 'web_search_call', action: { type: 'search', query: 'Artemis II launch date' } })
      expect((result.output[1] as any).content[0].annotations[0]).toMatchObject({ type: 'url_citation' })
    })

    it('throws for a failed or malformed body', () => {
      const failed = thrown(() => adapter.readResult({ ...json('text.json'), status: 'failed', output: [], error: { code: 'rate_limit_exceeded', message: 'Rate limit reached. Please try again in 20ms.' } }, makeCall({})))
      expect(failed).toBeInstanceOf(UpstreamFailure)
      expect(failed).toMatchObject({ errorType: 'rate_limit_exceeded', status: 429, retryAfterSeconds: 1, providerCode: 'rate_limit_exceeded' })
      expect(thrown(() => adapter.readResult('<html>', makeCall({})))).toMatchObject({ errorType: 'provider_unavailable', status: 502 })
      expect(thrown(() => adapter.readResult({ ...json('text.json'), status: 'queued' }, makeCall({})))).toMatchObject({ errorType: 'provider_unavailable' })
    })
  })

  describe('readStream', () => {
    const pairs = [
      { sse: 'text.sse', json: 'text.json', finish: { status: 'completed', incompleteDetails: null } },
      { sse: 'tool-call.sse', json: 'tool-call.json', finish: { status: 'completed', incompleteDetails: null } },
      { sse: 'reasoning.sse', json: 'reasoning.json', finish: { status: 'completed', incompleteDetails: null } },
      { sse: 'max-tokens.sse', json: 'max-tokens.json', finish: { status: 'incomplete', incompleteDetails: { reason: 'max_output_tokens' } } },
      { sse: 'web-search.sse', json: 'web-search.json', finish: { status: 'completed', incompleteDetails: null } },
    ]

    for (const pair of pairs) {
      for (const size of [1, 7]) {
        it(`re-emits ${pair.sse} (chunks of ${size} bytes) with the items and usage of ${pair.json}`, async () => {
          const events = await collect(adapter.readStream(chunked(fixture(PROVIDER, pair.sse), size), makeCall({}, { stream: true })))
          const items = itemEvents(events)
          assertValidEventSequence(items)
          for (const event of items) {
            expect(event).not.toHaveProperty('sequence_number')
            expect(['response.created', 'response.in_progress', 'response.completed', 'response.incomplete', 'keepalive']).not.toContain(event.type)
          }

          const expected = adapter.readResult(json(pair.json), makeCall({}))
          expect(withoutIds(doneItems(events))).toEqual(withoutIds(expected.output))
          expect(events.at(-2)).toEqual({ type: 'upstream.usage', usage: expected.usage })
          expect(expected.serviceTier).toBe('default')
          expect(events.at(-1)).toEqual({ type: 'upstream.finish', ...pair.finish, serviceTier: 'default' })
        })
      }

      it(`passes every item-level event of ${pair.sse} through unchanged but for sequence_number and the call name`, async () => {
        const events = itemEvents(await collect(adapter.readStream(chunked(fixture(PROVIDER, pair.sse), 64), makeCall({}, { stream: true }))))
        const callNames = new Map<string, string>()
        const upstream = upstreamEvents(pair.sse)
          .filter((event) => !['response.created', 'response.in_progress', 'response.completed', 'response.incomplete', 'keepalive'].includes(event.type))
          .map(({ sequence_number: _sequenceNumber, ...event }) => {
            if (event.item?.type === 'function_call') callNames.set(event.item.id, event.item.name)
            if (event.type === 'response.function_call_arguments.done') return { ...event, name: callNames.get(event.item_id) }
            return event.item?.type === 'reasoning' ? { ...event, item: { ...event.item, format: 'openai-responses-v1' } } : event
          })
        expect(events.map(fieldsOf)).toEqual(upstream)
      })
    }

    it('keeps the JSON text OpenAI sent of the events it relays as sent, without the upstream sequence_number', async () => {
      const events = itemEvents(await collect(adapter.readStream(chunked(fixture(PROVIDER, 'text.sse'), 64), makeCall({}, { stream: true }))))
      const sent = dataLines('text.sse')
      const kept = events.filter((event) => event.wireJson !== undefined)
      expect(kept.map((event) => event.type)).toEqual(events.map((event) => event.type).filter((type) => !type.startsWith('response.output_item.')))
      expect(kept.filter((event) => event.type === 'response.output_text.delta').length).toBeGreaterThan(10)
      for (const event of kept) {
        const line = sent.find((data) => data.replace(/,"sequence_number":\d+/, '') === event.wireJson)
        expect(line, event.wireJson).toBeDefined()
        expect(JSON.parse(event.wireJson!)).toEqual(fieldsOf(event))
      }
    })

    it('drops the kept text once a field is changed or an object field is handed out, and reads the fields from it', async () => {
      const events = itemEvents(await collect(adapter.readStream(chunked(fixture(PROVIDER, 'text.sse'), 64), makeCall({}, { stream: true }))))
      const [delta, other] = events.filter((event) => event.type === 'response.output_text.delta')
      expect(delta).toMatchObject({ type: 'response.output_text.delta', item_id: expect.stringMatching(/^msg_/), output_index: 0, content_index: 0 })
      expect(delta!.wireJson).toBeDefined()
      delta!.delta = 'changed'
      expect(delta!.wireJson).toBeUndefined()
      expect(JSON.parse(JSON.stringify(delta))).toMatchObject({ type: 'response.output_text.delta', delta: 'changed', logprobs: [] })
      expect(other!.wireJson).toBeDefined()
      expect(other!.logprobs).toEqual([])
      expect(other!.wireJson).toBeUndefined()
    })

    it('reads a kept delta from its text, escapes included, and keeps the text', async () => {
      const delta = (sequence: number, text: string, extra: Record<string, unknown> = {}) =>
        `event: response.output_text.delta\ndata: ${JSON.stringify({ type: 'response.output_text.delta', sequence_number: sequence, ...extra, item_id: 'msg_1', output_index: 0, content_index: 0, delta: text, logprobs: [] })}\n\n`
      const texts = ['plain', 'quote " and \\ backslash', 'line\nbreak, tab\t, é ☃ 😀 \u0001', '', '"delta":"not this']
      const body =
        texts.map((text, index) => delta(index, text)).join('') +
        // A nested object before the field: the text cannot tell its own `delta` apart cheaply, so the event is parsed.
        delta(texts.length, 'after nested', { annotations: [{ delta: 'inner' }] }) +
        sse({ type: 'response.completed', sequence_number: texts.length + 1, response: { status: 'completed', output: [], usage: null } })
      const events = itemEvents(await collect(adapter.readStream(chunked(body, 9), makeCall({}, { stream: true }))))
      expect(events.map((event) => event.wireJson !== undefined)).toEqual([true, true, true, true, true, true])
      expect(events.map((event) => event.delta)).toEqual([...texts, 'after nested'])
      // Reading the delta leaves the text to relay as it came.
      expect(events.map((event) => event.wireJson !== undefined)).toEqual([true, true, true, true, true, true])
      expect(events.map(fieldsOf).map((event: any) => event.delta)).toEqual([...texts, 'after nested'])
    })

    it('reads the usage of response.completed in OpenAI\'s layout and in any other, whatever else the response holds', async () => {
      const usage = { input_tokens: 12, input_tokens_details: { cached_tokens: 2 }, output_tokens: 7, output_tokens_details: { reasoning_tokens: 3 }, total_tokens: 19 }
      const decoy = { input_tokens: 999, output_tokens: 999, total_tokens: 1998 }
      const head = { id: 'resp_1', object: 'response', created_at: 1, status: 'completed' }
      const responses: Array<[string, Record<string, unknown>]> = [
        ['compact', { ...head, output: [{ type: 'message', content: [{ type: 'output_text', text: ',"usage":{} } }', annotations: [] }] }], tools: [{ type: 'function', parameters: { properties: { usage: decoy } } }], usage, user: null, metadata: { usage: 'x', note: '{"usage":1}' } }],
        ['usage last', { ...head, output: [], usage }],
        ['no usage', { ...head, output: [], usage: null, metadata: {} }],
        // Not the layout the fast read knows: each is parsed whole, with the same result.
        ['nested object after usage', { ...head, output: [], usage, reasoning: { usage: decoy } }],
        ['usage before the items', { ...head, usage, output: [{ type: 'message', usage: decoy }] }],
        ['another status first', { id: 'resp_1', object: 'response', created_at: 1, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [], usage }],
      ]
      for (const [name, response] of responses) {
        const body = sse({ type: 'response.completed', sequence_number: 0, response })
        const isKnownLayout = ['compact', 'usage last', 'no usage'].includes(name)
        expect(readCompletedUsage(body.slice(body.indexOf('data: ') + 6).trimEnd()), name).toEqual(isKnownLayout ? response.usage : undefined)
        const events = await collect(adapter.readStream(chunked(body, 11), makeCall({}, { stream: true })))
        const read = adapter.readResult({ ...response, output: [] }, makeCall({})).usage
        // A response without usage has no usage event: the engine estimates it.
        if (read === undefined) expect(events.some((event) => event.type === 'upstream.usage'), name).toBe(false)
        else expect(events.at(-2), name).toEqual({ type: 'upstream.usage', usage: read })
        expect(events.at(-1), name).toEqual({ type: 'upstream.finish', ...(response.status === 'incomplete' ? { status: 'incomplete', incompleteDetails: { reason: 'max_output_tokens' } } : { status: 'completed', incompleteDetails: null }) })
      }
    })

    it('reports the tier response.completed names, in OpenAI\'s layout and in any other', async () => {
      const priority = (name: string) => fixture(PROVIDER, name).toString('utf8').replace(/"service_tier": ?"default"/, '"service_tier":"priority"')
      expect(adapter.readResult(JSON.parse(priority('text.json')), makeCall({})).serviceTier).toBe('priority')
      const compact = await collect(adapter.readStream(chunked(priority('text.sse'), 7), makeCall({}, { stream: true })))
      expect(compact.at(-1)).toEqual({ type: 'upstream.finish', status: 'completed', incompleteDetails: null, serviceTier: 'priority' })
      // A tool schema holding the same key deeper, after the response's own: the response's tier is read.
      const head = { id: 'resp_1', object: 'response', created_at: 1, status: 'completed' }
      const decoy = { type: 'function', parameters: { properties: { mode: { default: { service_tier: 'scale', flag: true } } } } }
      for (const response of [
        { ...head, output: [], service_tier: 'flex', store: false, tools: [decoy], usage: null },
        { ...head, output: [], usage: null, service_tier: 'flex', reasoning: { effort: null } },
      ]) {
        const events = await collect(adapter.readStream(chunked(sse({ type: 'response.completed', sequence_number: 0, response }), 11), makeCall({}, { stream: true })))
        expect(events.at(-1)).toEqual({ type: 'upstream.finish', status: 'completed', incompleteDetails: null, serviceTier: 'flex' })
      }
    })

    it('parses events in any other layout as before', async () => {
      const pretty = sse({ type: 'response.output_item.added', sequence_number: 0, output_index: 0, item: { id: 'msg_1', type: 'message', status: 'in_progress', content: [], role: 'assistant' } }).replace(
        'data: {',
        'data: { ',
      )
      const reordered = `event: response.output_text.delta\ndata: {"sequence_number":1,"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}\n\n`
      const done = sse({ type: 'response.completed', sequence_number: 2, response: { status: 'completed', output: [], usage: null } })
      const events = itemEvents(await collect(adapter.readStream(chunked(pretty + reordered + done, 5), makeCall({}, { stream: true }))))
      expect(events.map((event) => [event.type, event.wireJson])).toEqual([
        ['response.output_item.added', undefined],
        ['response.output_text.delta', undefined],
      ])
      expect(events[1]).toEqual({ type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hi', logprobs: [] })
    })

    it('reads image_generation_call events as typed item events, partial images included', async () => {
      const item = { id: 'ig_1', type: 'image_generation_call', status: 'in_progress', result: null }
      const body = sse(
        { type: 'response.output_item.added', sequence_number: 0, output_index: 0, item },
        { type: 'response.image_generation_call.in_progress', sequence_number: 1, output_index: 0, item_id: 'ig_1' },
        { type: 'response.image_generation_call.generating', sequence_number: 2, output_index: 0, item_id: 'ig_1' },
        { type: 'response.image_generation_call.partial_image', sequence_number: 3, output_index: 0, item_id: 'ig_1', partial_image_index: 0, partial_image_b64: 'cGFydA==' },
        { type: 'response.image_generation_call.completed', sequence_number: 4, output_index: 0, item_id: 'ig_1' },
        { type: 'response.output_item.done', sequence_number: 5, output_index: 0, item: { ...item, status: 'completed', result: 'ZG9uZQ==', output_format: 'png', size: '1024x1024' } },
        { type: 'response.completed', sequence_number: 6, response: { status: 'completed', output: [], usage: null } },
      )
      const events = await collect(adapter.readStream(chunked(body, 9), makeCall({}, { stream: true })))
      expect(events.some((event) => event.type === 'relayed')).toBe(false)
      const partial = events.find((event) => event.type === 'response.image_generation_call.partial_image') as AnyEvent
      expect(partial.wireJson).toBe('{"type":"response.image_generation_call.partial_image","output_index":0,"item_id":"ig_1","partial_image_index":0,"partial_image_b64":"cGFydA=="}')
      expect([partial.partial_image_b64, partial.partial_image_index, partial.item_id]).toEqual(['cGFydA==', 0, 'ig_1'])
      expect(doneItems(events)).toEqual([{ ...item, status: 'completed', result: 'ZG9uZQ==', output_format: 'png', size: '1024x1024' }])
    })

    it('names the call on function_call_arguments.done, which OpenAI sends without a name', async () => {
      expect(upstreamEvents('tool-call.sse').find((event) => event.type === 'response.function_call_arguments.done')).not.toHaveProperty('name')
      const events = await collect(adapter.readStream(chunked(fixture(PROVIDER, 'tool-call.sse'), 7), makeCall({}, { stream: true })))
      const done = events.filter((event) => event.type === 'response.function_call_arguments.done')
      expect(done).toEqual([expect.objectContaining({ item_id: expect.stringMatching(/^fc_/), name: 'get_weather' })])
    })

    it('drops keepalive events', async () => {
      const raw = fixture(PROVIDER, 'reasoning.sse').toString('utf8')
      expect(raw).toContain('event: keepalive')
      const events = await collect(adapter.readStream(chunked(raw, 7), makeCall({}, { stream: true })))
      expect(itemEvents(events).some((event) => event.type === 'keepalive')).toBe(false)
    })

    it('throws the in-band failure after yielding what came before it (response.failed)', async () => {
      for (const size of [1, 7]) {
        const { events, error } = await drain(chunked(fixture(PROVIDER, 'error-midstream.sse'), size))
        expect(error).toBeInstanceOf(UpstreamFailure)
        expect(error).toMatchObject({ errorType: 'server', status: 502, upstreamStatus: 200, providerCode: 'server_error' })
        expect((error as Error).message).toMatch(/^An error occurred while processing your request/)
        const deltas = itemEvents(events).filter((event) => event.type === 'response.output_text.delta')
        expect(deltas.map((event) => event.delta).join('')).toBe('Here’s a short overview of')
        expect(events.some((event) => event.type.startsWith('upstream.'))).toBe(false)
      }
    })

    it('throws on an `error` event (nested shape) with its canonical type', async () => {
      const { events, error } = await drain(chunked(fixture(PROVIDER, 'error-event.sse'), 7))
      expect(events).toEqual([])
      expect(error).toMatchObject({ errorType: 'context_length_exceeded', status: 400, providerCode: 'context_length_exceeded' })
      expect((error as Error).message).toBe('Your input exceeds the context window of this model. Please adjust your input and try again.')
    })

    it('throws on an `error` event in the documented flat shape', async () => {
      const body = sse({ type: 'error', sequence_number: 4, code: 'rate_limit_exceeded', message: 'Rate limit reached for gpt-4.1. Please try again in 1m30s.', param: null })
      const { error } = await drain(chunked(body, 5))
      expect(error).toMatchObject({ errorType: 'rate_limit_exceeded', status: 429, retryAfterSeconds: 90 })
    })

    it('throws provider_unavailable when the stream ends without response.completed', async () => {
      const raw = fixture(PROVIDER, 'text.sse').toString('utf8')
      const truncated = raw.slice(0, raw.indexOf('event: response.output_text.done'))
      const { events, error } = await drain(chunked(truncated, 7))
      expect(error).toBeInstanceOf(UpstreamFailure)
      expect(error).toMatchObject({ errorType: 'provider_unavailable', status: 502 })
      expect(events.filter((event) => event.type === 'response.output_text.delta').length).toBeGreaterThan(0)
      expect((await drain(chunked('', 1))).error).toMatchObject({ errorType: 'provider_unavailable' })
    })

    it('adds logprobs: [] to text events that lack them', async () => {
      const item = { id: 'msg_1', type: 'message', status: 'in_progress', content: [], role: 'assistant' }
      const part = { type: 'output_text', annotations: [], text: '' }
      const body = sse(
        { type: 'response.output_item.added', sequence_number: 2, output_index: 0, item },
        { type: 'response.content_part.added', sequence_number: 3, item_id: 'msg_1', output_index: 0, content_index: 0, part },
        { type: 'response.output_text.delta', sequence_number: 4, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hi' },
        { type: 'response.output_text.done', sequence_number: 5, item_id: 'msg_1', output_index: 0, content_index: 0, text: 'Hi' },
        { type: 'response.content_part.done', sequence_number: 6, item_id: 'msg_1', output_index: 0, content_index: 0, part: { ...part, text: 'Hi' } },
        { type: 'response.output_item.done', sequence_number: 7, output_index: 0, item: { ...item, status: 'completed', content: [{ ...part, text: 'Hi' }] } },
        { type: 'response.completed', sequence_number: 8, response: { id: 'resp_1', status: 'completed', output: [], usage: null } },
      )
      const events = await collect(adapter.readStream(chunked(body, 3), makeCall({}, { stream: true })))
      assertValidEventSequence(itemEvents(events))
      expect(events.find((event) => event.type === 'response.output_text.delta')).toMatchObject({ delta: 'Hi', logprobs: [] })
      expect(events.find((event) => event.type === 'response.output_text.done')).toMatchObject({ text: 'Hi', logprobs: [] })
      // OpenAI sent no usage: no usage event, so the engine estimates it.
      expect(events.some((event) => event.type === 'upstream.usage')).toBe(false)
      expect(events.at(-1)).toEqual({ type: 'upstream.finish', status: 'completed', incompleteDetails: null })
    })

    it('yields events as they arrive, without waiting for the end of the body', async () => {
      const raw = fixture(PROVIDER, 'text.sse')
      const firstItem = raw.indexOf('event: response.content_part.added')
      let release!: () => void
      const released = new Promise<void>((resolve) => (release = resolve))
      async function* body() {
        yield raw.subarray(0, firstItem)
        await released
        yield raw.subarray(firstItem)
      }
      const iterator = adapter.readStream(body(), makeCall({}, { stream: true }))[Symbol.asyncIterator]()
      const first = await iterator.next()
      expect(first.value).toMatchObject({ type: 'response.output_item.added', output_index: 0 })
      release()
      const rest: UpstreamStreamEvent[] = []
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value)
      expect(rest.at(-1)).toMatchObject({ type: 'upstream.finish', status: 'completed' })
    })
  })

  describe('toError', () => {
    const cases = [
      { file: 'error-400-context.json', status: 400, errorType: 'context_length_exceeded', clientStatus: 400, code: 'context_length_exceeded' },
      { file: 'error-401.json', status: 401, errorType: 'authentication', clientStatus: 401, code: 'invalid_api_key' },
      { file: 'error-429.json', status: 429, errorType: 'rate_limit_exceeded', clientStatus: 429, code: 'rate_limit_exceeded' },
      { file: 'error-429-quota.json', status: 429, errorType: 'payment_required', clientStatus: 402, code: 'insufficient_quota' },
      { file: 'error-overloaded.json', status: 503, errorType: 'provider_overloaded', clientStatus: 529, code: undefined },
      { file: 'error-500.json', status: 500, errorType: 'provider_unavailable', clientStatus: 502, code: undefined },
    ]
    for (const entry of cases) {
      it(`classifies ${entry.file} (${entry.status})`, () => {
        const body = fixture(PROVIDER, entry.file).toString('utf8')
        const error = adapter.toError(entry.status, body)
        expect(isGatewayError(error)).toBe(true)
        expect(error).toBeInstanceOf(UpstreamFailure)
        expect(error.status).toBe(entry.clientStatus)
        expect(error.metadata).toEqual({ error_type: entry.errorType, ...(entry.code ? { provider_code: entry.code } : {}) })
        expect((error as UpstreamFailure).upstreamStatus).toBe(entry.status)
        expect(error.message).not.toMatch(/sk-proj/)
        expect(error.message.length).toBeGreaterThan(10)
      })
    }

    it('keeps the message, redacting the key OpenAI quotes', () => {
      const error = adapter.toError(401, fixture(PROVIDER, 'error-401.json').toString('utf8'))
      expect(error.message).toBe('Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys.')
      const quoted = adapter.toError(401, JSON.stringify({ error: { message: `Incorrect API key provided: ${API_KEY}.`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } }))
      expect(quoted.message).not.toContain(API_KEY)
      expect(quoted.message).toContain('[redacted]')
    })

    it('reads the wait from a rate-limit message', () => {
      const error = adapter.toError(429, fixture(PROVIDER, 'error-429.json').toString('utf8')) as UpstreamFailure
      expect(error.retryAfterSeconds).toBe(3)
    })

    it('survives empty and HTML bodies', () => {
      const empty = adapter.toError(502, '')
      expect(empty).toMatchObject({ status: 502, metadata: { error_type: 'provider_unavailable' } })
      expect(empty.message).toBe('Upstream error')
      const html = adapter.toError(503, '<html><head><title>503 Service Temporarily Unavailable</title></head><body>nginx</body></html>')
      expect(html).toMatchObject({ status: 529, metadata: { error_type: 'provider_overloaded' } })
      expect(adapter.toError(400, '<html>Bad Request</html>')).toMatchObject({ status: 400, metadata: { error_type: 'invalid_request' } })
      expect(adapter.toError(404, '{"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}')).toMatchObject({
        status: 404,
        metadata: { error_type: 'not_found', provider_code: 'model_not_found' },
      })
    })
  })
})

describe('history sent back from the openai SDK', () => {
  it('drops the parsed fields the SDK adds to items', async () => {
    const { openAIResponsesAdapter } = await import('../../../src/providers/openai-responses')
    const request = openAIResponsesAdapter.buildRequest(
      {
        request: {
          model: 'openai/gpt-4.1-mini',
          input: [
            { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hi', annotations: [], parsed: null }] },
            { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'f', arguments: '{}', parsed_arguments: null },
          ],
        } as never,
        upstreamModel: 'gpt-4.1-mini',
        stream: false,
      },
      { baseURL: 'http://upstream.test/v1', apiKey: 'sk-test' },
    )
    const body = JSON.parse(request.body)
    expect(body.input[0].content[0]).not.toHaveProperty('parsed')
    expect(body.input[1]).not.toHaveProperty('parsed_arguments')
    expect(body.input[1].id).toBe('fc_1')
  })
})
