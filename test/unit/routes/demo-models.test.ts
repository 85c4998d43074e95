import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, type TestGateway, type TestGatewayOptions } from '../../../src/testing'

let harness: TestGateway | undefined

afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const start = async (options: TestGatewayOptions = { demoModels: true }) => {
  harness = await createTestGateway(options)
  return harness
}

type Format = 'chat' | 'responses' | 'messages'
const PATHS: Record<Format, string> = { chat: '/chat/completions', responses: '/responses', messages: '/messages' }

const WEATHER_SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 40 }, days: { type: 'integer', minimum: 1, maximum: 7 }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
  required: ['city', 'days', 'unit'],
}

/** A user message (and, for a tool's second turn, the call and its result) in each format. */
const bodyFor = (format: Format, model: string, text: string, options: { stream?: boolean; withTool?: boolean; toolResult?: { callId: string; args: string; output: string } } = {}) => {
  const stream = options.stream ? { stream: true } : {}
  const { toolResult } = options
  if (format === 'chat') {
    return {
      model,
      ...stream,
      messages: [
        { role: 'user', content: text },
        ...(toolResult
          ? [
              { role: 'assistant', content: null, tool_calls: [{ id: toolResult.callId, type: 'function', function: { name: 'get_weather', arguments: toolResult.args } }] },
              { role: 'tool', tool_call_id: toolResult.callId, content: toolResult.output },
            ]
          : []),
      ],
      ...(options.withTool ? { tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: WEATHER_SCHEMA } }] } : {}),
    }
  }
  if (format === 'responses') {
    return {
      model,
      ...stream,
      input: [
        { role: 'user', content: text },
        ...(toolResult
          ? [
              { type: 'function_call', call_id: toolResult.callId, name: 'get_weather', arguments: toolResult.args },
              { type: 'function_call_output', call_id: toolResult.callId, output: toolResult.output },
            ]
          : []),
      ],
      ...(options.withTool ? { tools: [{ type: 'function', name: 'get_weather', description: 'Weather', parameters: WEATHER_SCHEMA }] } : {}),
    }
  }
  return {
    model,
    max_tokens: 200,
    ...stream,
    messages: [
      { role: 'user', content: text },
      ...(toolResult
        ? [
            { role: 'assistant', content: [{ type: 'tool_use', id: toolResult.callId, name: 'get_weather', input: JSON.parse(toolResult.args) }] },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolResult.callId, content: toolResult.output }] },
          ]
        : []),
    ],
    ...(options.withTool ? { tools: [{ name: 'get_weather', description: 'Weather', input_schema: WEATHER_SCHEMA }] } : {}),
  }
}

/** What an answer said, whatever its format and whether it streamed. */
interface Answer {
  id: string
  text: string
  reasoning: string
  toolCall?: { id: string; name: string; args: string }
  inputTokens: number
  outputTokens: number
  cost: number
}

const events = (text: string): any[] =>
  text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice('data: '.length)))

const fromResponse = (response: any): Answer => {
  const answer: Answer = { id: response.id, text: '', reasoning: '', inputTokens: response.usage.input_tokens, outputTokens: response.usage.output_tokens, cost: response.usage.cost }
  for (const item of response.output) {
    if (item.type === 'message') answer.text += item.content.map((part: any) => part.text ?? '').join('')
    if (item.type === 'reasoning') answer.reasoning += (item.content ?? []).map((part: any) => part.text).join('')
    if (item.type === 'function_call') answer.toolCall = { id: item.call_id, name: item.name, args: item.arguments }
  }
  return answer
}

const read = async (format: Format, response: Response, isStream: boolean): Promise<Answer> => {
  const text = await response.text()
  if (!isStream) {
    const body = JSON.parse(text)
    if (format === 'responses') return fromResponse(body)
    if (format === 'chat') {
      const { message } = body.choices[0]
      const call = message.tool_calls?.[0]
      return {
        id: body.id,
        text: message.content ?? '',
        reasoning: message.reasoning ?? '',
        ...(call ? { toolCall: { id: call.id, name: call.function.name, args: call.function.arguments } } : {}),
        inputTokens: body.usage.prompt_tokens,
        outputTokens: body.usage.completion_tokens,
        cost: body.usage.cost,
      }
    }
    const answer: Answer = { id: body.id, text: '', reasoning: '', inputTokens: body.usage.input_tokens, outputTokens: body.usage.output_tokens, cost: body.usage.cost }
    for (const block of body.content) {
      if (block.type === 'text') answer.text += block.text
      if (block.type === 'thinking') answer.reasoning += block.thinking
      if (block.type === 'tool_use') answer.toolCall = { id: block.id, name: block.name, args: JSON.stringify(block.input) }
    }
    return answer
  }
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
  const all = events(text)
  expect(all.length).toBeGreaterThan(3)
  if (format === 'responses') return fromResponse(all.find((event) => event.type === 'response.completed').response)
  if (format === 'chat') {
    const answer: Answer = { id: all[0].id, text: '', reasoning: '', inputTokens: 0, outputTokens: 0, cost: -1 }
    for (const chunk of all) {
      const delta = chunk.choices?.[0]?.delta ?? {}
      answer.text += delta.content ?? ''
      answer.reasoning += delta.reasoning ?? ''
      for (const call of delta.tool_calls ?? []) {
        answer.toolCall ??= { id: call.id, name: call.function?.name, args: '' }
        answer.toolCall.args += call.function?.arguments ?? ''
      }
      if (chunk.usage) Object.assign(answer, { inputTokens: chunk.usage.prompt_tokens, outputTokens: chunk.usage.completion_tokens, cost: chunk.usage.cost })
    }
    return answer
  }
  const answer: Answer = { id: '', text: '', reasoning: '', inputTokens: 0, outputTokens: 0, cost: -1 }
  for (const event of all) {
    if (event.type === 'message_start') Object.assign(answer, { id: event.message.id })
    if (event.type === 'content_block_start' && event.content_block.type === 'tool_use') answer.toolCall = { id: event.content_block.id, name: event.content_block.name, args: '' }
    if (event.type === 'content_block_delta') {
      answer.text += event.delta.text ?? ''
      answer.reasoning += event.delta.thinking ?? ''
      if (answer.toolCall) answer.toolCall.args += event.delta.partial_json ?? ''
    }
    if (event.type === 'message_delta') Object.assign(answer, { inputTokens: event.usage.input_tokens, outputTokens: event.usage.output_tokens, cost: event.usage.cost })
  }
  return answer
}

const send = async (format: Format, body: Record<string, unknown>) => {
  const response = await harness!.call('POST', PATHS[format], { key: harness!.regularKey, json: body })
  expect(response.status, await response.clone().text()).toBe(200)
  return read(format, response, body.stream === true)
}

const expectFreeUsage = (answer: Answer) => {
  expect(answer.inputTokens).toBeGreaterThan(0)
  expect(answer.outputTokens).toBeGreaterThan(0)
  expect(answer.cost).toBe(0)
}

const CASES = (['chat', 'responses', 'messages'] as const).flatMap((format) => [false, true].map((stream) => [format, stream] as const))

describe.each(CASES)('demo models on %s (stream: %s)', (format, stream) => {
  it('demo/chat answers with a summary of the last user message, free', async () => {
    await start()
    const answer = await send(format, bodyFor(format, 'demo/chat', 'Hello from the demo test', { stream }))

    expect(answer.text).toBe('You said "Hello from the demo test" (5 words, 24 characters). This is demo/chat, a scripted demo model.')
    expect(answer.reasoning).toBe('')
    expectFreeUsage(answer)
    // Live: another message, another answer.
    expect((await send(format, bodyFor(format, 'demo/chat', 'Bye', { stream }))).text).toMatch(/^You said "Bye" \(1 word, 3 characters\)/)
  })

  it('demo/reasoning reasons, then answers', async () => {
    await start()
    const answer = await send(format, bodyFor(format, 'demo/reasoning', 'Why is the sky blue', { stream }))

    expect(answer.reasoning).toContain('The user wrote 5 words; I will sum them up.')
    expect(answer.text).toBe('You said "Why is the sky blue" (5 words, 19 characters). This is demo/reasoning, a scripted demo model.')
    expectFreeUsage(answer)
  })

  it('demo/tools calls the first tool with arguments its schema accepts, then answers with the result', async () => {
    await start()
    const first = await send(format, bodyFor(format, 'demo/tools', 'Weather in Paris', { stream, withTool: true }))

    expect(first.toolCall?.name).toBe('get_weather')
    expect(JSON.parse(first.toolCall!.args)).toEqual({ city: 'Weather in Paris', days: 1, unit: 'celsius' })
    expectFreeUsage(first)

    const second = await send(
      format,
      bodyFor(format, 'demo/tools', 'Weather in Paris', { stream, withTool: true, toolResult: { callId: first.toolCall!.id, args: first.toolCall!.args, output: 'Sunny, 21 C' } }),
    )
    expect(second.toolCall).toBeUndefined()
    expect(second.text).toBe('Thanks: get_weather returned Sunny, 21 C. This is demo/tools, a scripted demo model.')
    expectFreeUsage(second)
  })

  it('demo/tools without tools says it needs them', async () => {
    await start()
    const answer = await send(format, bodyFor(format, 'demo/tools', 'Hi', { stream }))

    expect(answer.toolCall).toBeUndefined()
    expect(answer.text).toBe('demo/tools needs tools: send a request with a "tools" list of functions, and it will call the first one.')
    expectFreeUsage(answer)
  })
})

describe('demo models as any model', () => {
  it('are listed by GET /models as demo models, free', async () => {
    await start()
    const { data } = await (await harness!.call('GET', '/models', { key: harness!.regularKey })).json()
    const demo = data.filter((model: { id: string }) => model.id.startsWith('demo/'))

    expect(demo.map((model: { id: string }) => model.id).sort()).toEqual(['demo/chat', 'demo/reasoning', 'demo/tools'])
    for (const model of demo) {
      expect(model.description).toMatch(/^Demo model \(development mode\): /)
      expect(model.pricing).toMatchObject({ prompt: '0', completion: '0' })
    }
  })

  it('are recorded in the ledger at cost 0, need a key, and keep the rate limit', async () => {
    await start({ demoModels: true, rateLimit: { requests: 2, windowSeconds: 60 } })
    const answer = await send('responses', bodyFor('responses', 'demo/chat', 'Count me', {}) as Record<string, unknown>)
    await harness!.gateway.flushSpend()

    const record = await harness!.call('GET', `/generation?id=${encodeURIComponent(answer.id)}`, { key: harness!.regularKey })
    expect(record.status).toBe(200)
    expect((await record.json()).data).toMatchObject({ model: 'demo/chat', provider_name: 'modelgate demo', total_cost: 0, tokens_prompt: answer.inputTokens, tokens_completion: answer.outputTokens })

    const anonymous = await harness!.call('POST', '/responses', { key: null, json: { model: 'demo/chat', input: 'Hi' } })
    expect(anonymous.status).toBe(401)
    // The first request and the generation read used the key's two requests.
    const limited = await harness!.call('POST', '/responses', { key: harness!.regularKey, json: { model: 'demo/chat', input: 'Hi' } })
    expect(limited.status).toBe(429)
  })

  it('are absent unless enabled: not listed, not served', async () => {
    for (const options of [{}, { demoModels: false }]) {
      await start(options)
      const { data } = await (await harness!.call('GET', '/models', { key: harness!.regularKey })).json()
      expect(data.some((model: { id: string }) => model.id.startsWith('demo/'))).toBe(false)

      const refused = await harness!.call('POST', '/chat/completions', { key: harness!.regularKey, json: { model: 'demo/chat', messages: [{ role: 'user', content: 'Hi' }] } })
      expect(refused.status).toBeGreaterThanOrEqual(400)
      expect(refused.status).toBeLessThan(500)
      expect(JSON.stringify(await refused.json())).toContain('demo/chat')
      await harness!.close()
      harness = undefined
    }
  })
})
