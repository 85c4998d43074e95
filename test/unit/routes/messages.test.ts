/**
 * `POST /messages` on scripted providers: the translation of an Anthropic body into what the model is
 * asked, the `message` object, Anthropic's event stream (blocks, deltas, ping, error), the key as
 * `x-api-key`, and every refusal in Anthropic's error shape.
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

const HI = [{ role: 'user', content: 'Hi' }]

const create = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  testGateway!.call('POST', '/messages', { key: testGateway!.regularKey, json: { max_tokens: 1024, ...body }, headers })

/** The events of a stream as `[event name, data]` pairs. */
const eventsOf = async (response: Response) => {
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe('text/event-stream')
  const { events, text } = await readSseEvents(response)
  for (const event of events) expect(event.data.type).toBe(event.event)
  return { events: events.map((event) => [event.event, event.data] as const), text }
}

const anthropicError = (type: string, message: string) => ({ type: 'error', error: { type, message } })

describe('POST /messages, whole answers', () => {
  it('answers a message with its text, end_turn and Anthropic usage (cache reads apart) with the cost', async () => {
    await serve([{ type: 'text', text: 'Hello there' }, { type: 'usage', inputTokens: 12, outputTokens: 4, cachedTokens: 2 }])
    const response = await create({ model: 'test/model', messages: HI })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/json')
    const body = await response.json()
    expect(body.id).toMatch(/^msg_[0-9a-f]{48}$/)
    expect(body).toEqual({
      id: body.id,
      type: 'message',
      role: 'assistant',
      model: 'test/model',
      content: [{ type: 'text', text: 'Hello there' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      // 10 fresh + 2 cached input tokens at $1/M (no cached price: the prompt price), 4 output tokens at $2/M.
      // No tier named by the upstream nor asked for: null, as Anthropic's type allows.
      usage: { input_tokens: 10, output_tokens: 4, cache_read_input_tokens: 2, cache_creation_input_tokens: 0, cost: 0.00002, service_tier: null },
    })
  })

  it('returns tool calls as tool_use blocks with their input parsed, and stop_reason tool_use', async () => {
    await serve([{ type: 'text', text: 'Checking.' }, { type: 'function_call', name: 'get_weather', arguments: '{"city":"Paris"}', callId: 'toolu_1' }])
    const body = await (await create({ messages: HI, tools: [{ name: 'get_weather', input_schema: { type: 'object' } }] })).json()
    expect(body.content).toEqual([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
    ])
    expect(body.stop_reason).toBe('tool_use')
  })

  it('shows reasoning as a thinking block before the text', async () => {
    await serve([{ type: 'reasoning', text: 'Let me think.' }, { type: 'text', text: 'Four.' }])
    const body = await (await create({ messages: HI, max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 1024 } })).json()
    expect(body.content).toEqual([
      { type: 'thinking', thinking: 'Let me think.', signature: '' },
      { type: 'text', text: 'Four.' },
    ])
  })

  it('says max_tokens when the answer was cut by the token limit, refusal when filtered or refused, pause_turn when paused', async () => {
    await serveReplies({
      replies: [
        [{ type: 'text', text: 'Once upon' }, { type: 'finish', status: 'incomplete', reason: 'max_output_tokens' }],
        [{ type: 'text', text: 'No' }, { type: 'finish', status: 'incomplete', reason: 'content_filter' }],
        [{ type: 'refusal', refusal: 'I cannot help with that.' }],
        [{ type: 'text', text: 'Searching.' }, { type: 'finish', status: 'incomplete', reason: 'pause_turn' }],
      ],
    })
    expect((await (await create({ messages: HI, max_tokens: 2 })).json()).stop_reason).toBe('max_tokens')
    expect((await (await create({ messages: HI })).json()).stop_reason).toBe('refusal')
    const refused = await (await create({ messages: HI })).json()
    expect(refused).toMatchObject({ stop_reason: 'refusal', content: [{ type: 'text', text: 'I cannot help with that.' }] })
    // Claude's server-tool loop paused: Anthropic's own reason, so a Messages client can send the turn back to go on.
    expect((await (await create({ messages: HI })).json()).stop_reason).toBe('pause_turn')
  })

  it('answers a failure before content in Anthropic error shape with its status', async () => {
    await serve([{ type: 'http_error', status: 429, message: 'Slow down', retryAfter: 3 }])
    const response = await create({ messages: HI })
    expect(response.status).toBe(429)
    expect(response.headers.get('retry-after')).toBe('3')
    expect(await response.json()).toEqual(anthropicError('rate_limit_error', 'scripted: Slow down'))
  })
})

describe('POST /messages, what the model is asked', () => {
  it('translates messages block by block, in order: text, images, documents, tool_use, tool_result, thinking', async () => {
    const model = await serve('ok')
    const ephemeral = { type: 'ephemeral' }
    await create({
      system: [{ type: 'text', text: 'Be brief.', cache_control: ephemeral }],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather here?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'BBBB' }, title: 'a.pdf' },
            { type: 'document', source: { type: 'url', url: 'https://example.com/b.pdf' } },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'héllo' }, cache_control: ephemeral },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Look it up.', signature: 'sig-1' },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '22 °C', cache_control: ephemeral },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'not found' }], is_error: true },
            { type: 'text', text: 'Thanks' },
          ],
        },
      ],
    })
    expect(model.lastCall!.input).toEqual([
      { type: 'message', role: 'system', content: [{ type: 'input_text', text: 'Be brief.', cache_control: ephemeral }] },
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'Weather here?' },
          { type: 'input_image', image_url: 'data:image/png;base64,AAAA' },
          { type: 'input_image', image_url: 'https://example.com/a.png' },
          { type: 'input_file', file_data: 'data:application/pdf;base64,BBBB', filename: 'a.pdf' },
          { type: 'input_file', file_url: 'https://example.com/b.pdf' },
          { type: 'input_file', file_data: `data:text/plain;base64,${Buffer.from('héllo').toString('base64')}`, cache_control: ephemeral },
        ],
      },
      { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'Look it up.' }], signature: 'sig-1' },
      { type: 'reasoning', summary: [], encrypted_content: 'opaque', format: 'anthropic-claude-v1' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
      { type: 'function_call', call_id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: 'toolu_1', output: '22 °C', cache_control: ephemeral },
      { type: 'function_call_output', call_id: 'toolu_2', output: [{ type: 'input_text', text: 'not found' }], is_error: true },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Thanks' }] },
    ])
  })

  it('translates system, tools, tool_choice, thinking, sampling, limits, caching and metadata.user_id', async () => {
    const model = await serve('ok')
    const schema = { type: 'object', properties: { city: { type: 'string' } } }
    await create({
      model: 'test/model',
      system: 'Be brief.',
      messages: HI,
      max_tokens: 4000,
      tools: [{ name: 'get_weather', description: 'Weather', input_schema: schema, cache_control: { type: 'ephemeral' } }],
      tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true },
      thinking: { type: 'enabled', budget_tokens: 2048 },
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      cache_control: { type: 'ephemeral', ttl: '1h' },
      metadata: { user_id: 'alice@example.com' },
    })
    const { request } = model.lastCall!
    expect(request).toMatchObject({
      instructions: 'Be brief.',
      tools: [{ type: 'function', name: 'get_weather', description: 'Weather', parameters: schema, cache_control: { type: 'ephemeral' } }],
      tool_choice: { type: 'function', name: 'get_weather' },
      parallel_tool_calls: false,
      reasoning: { enabled: true, summary: 'auto', max_tokens: 2048 },
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      max_output_tokens: 4000,
      cache_control: { type: 'ephemeral', ttl: '1h' },
    })
    expect(model.lastCall!.endUserId).toMatch(/^mg_[0-9a-f]{32}$/)
    expect(JSON.stringify(request)).not.toContain('alice@example.com')

    await create({ messages: HI, tool_choice: { type: 'any' }, thinking: { type: 'adaptive' }, output_config: { effort: 'high', format: { type: 'json_schema', schema } } })
    expect(model.lastCall!.request).toMatchObject({
      tool_choice: 'required',
      reasoning: { enabled: true, summary: 'auto', effort: 'high' },
      text: { format: { type: 'json_schema', name: 'output', schema } },
    })
    expect(model.lastCall!.request).not.toHaveProperty('parallel_tool_calls')
    await create({ messages: HI, tool_choice: { type: 'none' }, thinking: { type: 'disabled' } })
    expect(model.lastCall!.request).toMatchObject({ tool_choice: 'none', reasoning: { enabled: false } })
    await create({ messages: HI, tool_choice: { type: 'auto' } })
    expect(model.lastCall!.request).toMatchObject({ tool_choice: 'auto' })
    expect(model.lastCall!.request).not.toHaveProperty('reasoning')
  })

  it('routes with models and provider, as /responses does', async () => {
    await serve('ok')
    expect((await create({ models: ['test/model'], messages: HI, provider: { only: ['scripted'] } })).status).toBe(200)
    const refused = await create({ messages: HI, provider: { only: ['elsewhere'] } })
    expect(refused.status).toBe(404)
    expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } })
  })
})

describe('POST /messages, streamed', () => {
  it('streams message_start, a text block with its deltas, message_delta with usage, then message_stop', async () => {
    await serve([{ type: 'text', text: ['Hel', 'lo'] }, { type: 'usage', inputTokens: 3, outputTokens: 2 }])
    const { events } = await eventsOf(await create({ model: 'test/model', messages: HI, stream: true }))
    const start = events[0]![1]
    expect(start.message.id).toMatch(/^msg_/)
    expect(events).toEqual([
      [
        'message_start',
        {
          type: 'message_start',
          message: {
            id: start.message.id,
            type: 'message',
            role: 'assistant',
            model: 'test/model',
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, service_tier: null },
          },
        },
      ],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      [
        'message_delta',
        {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { input_tokens: 3, output_tokens: 2, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cost: 0.000007, service_tier: null },
        },
      ],
      ['message_stop', { type: 'message_stop' }],
    ])
  })

  it('streams thinking and tool_use blocks: thinking_delta, then input_json_delta pieces, stop_reason tool_use', async () => {
    await serve([
      { type: 'reasoning', summary: ['Plan', 'ning'] },
      { type: 'function_call', name: 'first', arguments: ['{"a"', ':1}'], callId: 'toolu_a' },
      { type: 'function_call', name: 'second', arguments: '{}', callId: 'toolu_b' },
    ])
    const { events } = await eventsOf(await create({ messages: HI, stream: true, max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 1024 } }))
    expect(events.slice(1, -2).map(([, data]) => data)).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Plan' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'ning' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_a', name: 'first', input: {} } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"a"' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: ':1}' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_b', name: 'second', input: {} } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{}' } },
      { type: 'content_block_stop', index: 2 },
    ])
    expect(events.at(-2)![1].delta).toEqual({ stop_reason: 'tool_use', stop_sequence: null })
  })

  it('ends a stream that fails after content with an error event and no message_stop', async () => {
    await serve([{ type: 'text', text: 'Partial' }, { type: 'error', message: 'Upstream broke', errorType: 'server' }])
    const { events } = await eventsOf(await create({ messages: HI, stream: true }))
    expect(events.map(([name]) => name)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'error'])
    expect(events.at(-1)![1]).toEqual(anthropicError('api_error', expect.stringContaining('Upstream broke')))
  })

  it('keeps a slow start open with ping events once committed', async () => {
    const held = gate()
    await serve([{ type: 'wait', until: held }, { type: 'text', text: 'Late' }], { streamCommitAfterMs: 0, keepAliveMs: 60_000 })
    const response = await create({ messages: HI, stream: true })
    expect(response.status).toBe(200)
    const reader = response.body!.getReader()
    const first = new TextDecoder().decode((await reader.read()).value)
    expect(first).toBe('event: ping\ndata: {"type":"ping"}\n\n')
    held.open()
    let rest = ''
    for (let next = await reader.read(); !next.done; next = await reader.read()) rest += new TextDecoder().decode(next.value)
    expect(rest).toContain('"text":"Late"')
    expect(rest.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n')).toBe(true)
  })
})

describe('POST /messages, keys and errors in Anthropic shape', () => {
  it('takes the key from x-api-key as well as Authorization: Bearer', async () => {
    await serve('ok')
    const response = await testGateway!.call('POST', '/messages', {
      key: null,
      json: { max_tokens: 10, messages: HI },
      headers: { 'x-api-key': testGateway!.regularKey, 'anthropic-version': '2023-06-01' },
    })
    expect(response.status).toBe(200)
    expect((await response.json()).content).toEqual([{ type: 'text', text: 'ok' }])
  })

  it('answers a missing or wrong key with 401 authentication_error, a management key with 403 permission_error', async () => {
    await serve('never')
    const missing = await testGateway!.call('POST', '/messages', { key: null, json: { max_tokens: 10, messages: HI } })
    expect(missing.status).toBe(401)
    expect(await missing.json()).toEqual(anthropicError('authentication_error', 'Missing API key: send it as x-api-key: <key> or Authorization: Bearer <key>'))
    const wrong = await testGateway!.call('POST', '/messages', { key: null, json: { max_tokens: 10, messages: HI }, headers: { 'x-api-key': 'sk-wrong' } })
    expect(wrong.status).toBe(401)
    const wrongBody = await wrong.text()
    expect(JSON.parse(wrongBody)).toEqual(anthropicError('authentication_error', 'Invalid API key'))
    expect(wrongBody).not.toContain('sk-wrong')
    const management = await testGateway!.call('POST', '/messages', { json: { max_tokens: 10, messages: HI } })
    expect(management.status).toBe(403)
    expect(await management.json()).toEqual(anthropicError('permission_error', 'Management keys cannot be used for inference; use a regular API key'))
  })

  it('keeps x-api-key to /messages: other routes still want Authorization: Bearer', async () => {
    await serve('never')
    const response = await testGateway!.call('POST', '/chat/completions', { key: null, json: { messages: HI }, headers: { 'x-api-key': testGateway!.regularKey } })
    expect(response.status).toBe(401)
    expect(await response.json()).toEqual({ error: { code: 401, message: 'Missing API key: send it as Authorization: Bearer <key>' } })
  })

  it('answers a wrong method, malformed JSON and an unknown model in Anthropic shape', async () => {
    await serve('never')
    const wrongMethod = await testGateway!.call('GET', '/messages', { key: testGateway!.regularKey })
    expect(wrongMethod.status).toBe(405)
    expect(await wrongMethod.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } })
    const malformed = await testGateway!.call('POST', '/messages', { key: testGateway!.regularKey, body: '{"max_tokens":', headers: { 'content-type': 'application/json' } })
    expect(malformed.status).toBe(400)
    expect(await malformed.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } })
    const unknown = await create({ model: 'nobody/none', messages: HI })
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } })
  })

  const refusals: Array<[string, Record<string, unknown>, string]> = [
    ['a missing max_tokens', { max_tokens: undefined }, 'body.max_tokens: is required'],
    ['no messages', { messages: [] }, 'body.messages: must have at least 1 message'],
    ['a system role in messages', { messages: [{ role: 'system', content: 'x' }] }, 'body.messages.0.role: must have a role among user, assistant'],
    ['a tool_use block in a user turn', { messages: [{ role: 'user', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] }] }, 'body.messages.0.content.0.type: must be a text, image, document or tool_result block'],
    ['a server tool', { tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, 'body.tools.0.type: must be a custom tool (name, input_schema) or one of the gateway\'s server tools ("service:…"): Anthropic\'s server tools are not supported'],
    ['a custom tool without input_schema', { tools: [{ name: 'f' }] }, 'body.tools.0.input_schema: is required'],
    // The scripted provider's adapter declares no request extensions, so no endpoint of test/model honours them.
    ['stop sequences no endpoint honours', { stop_sequences: ['END'] }, 'body.stop_sequences: not supported by any endpoint of test/model'],
    ['an empty stop sequence', { stop_sequences: [''] }, 'body.stop_sequences.0: must not be empty'],
    ['a thinking budget under 1024', { thinking: { type: 'enabled', budget_tokens: 100 } }, 'body.thinking.budget_tokens: must be at least 1024'],
    ['a thinking budget not under max_tokens', { max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 2000 } }, 'body: thinking.budget_tokens must be less than max_tokens'],
    ['omitted thinking display', { thinking: { type: 'adaptive', display: 'omitted' } }, 'body.thinking.display: is not supported: only "summarized" thinking is returned'],
    ['effort without thinking', { output_config: { effort: 'low' } }, 'body.output_config.effort: is supported only with thinking of type "enabled" or "adaptive"'],
    ['a temperature above 1', { temperature: 1.5 }, 'body.temperature: must be at most 1'],
    ['a container', { container: 'container_1' }, 'body.container: is not supported: containers belong to server tools, which this gateway does not run'],
    ['MCP servers', { mcp_servers: [{ type: 'url', url: 'https://example.com', name: 'x' }] }, 'body.mcp_servers: is not supported: MCP servers are not run by this gateway'],
    ['citations', { messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' }, citations: { enabled: true } }] }] }, 'body.messages.0.content.0.citations.enabled: is not supported: citations are not returned on this route'],
    ['a plugin field no plugin has', { plugins: [{ id: 'response-healing', strict: true }] }, 'body.plugins.0.strict: unknown field'],
  ]

  it.each(refusals)('refuses %s with a 400 invalid_request_error naming the field', async (_, fields, message) => {
    const model = await serve('never')
    const response = await create({ messages: HI, ...fields })
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual(anthropicError('invalid_request_error', message))
    expect(model.calls).toHaveLength(0)
  })

  it('accepts what asks for nothing: empty stop_sequences, null fields, anthropic-version', async () => {
    await serve('fine')
    const response = await create({ messages: HI, stop_sequences: [], container: null, mcp_servers: [], tool_choice: null, thinking: null }, { 'anthropic-version': '2023-06-01' })
    expect(response.status).toBe(200)
  })
})
