/**
 * Every inbound wire format (`/responses`, `/chat/completions`, `/messages`) against every upstream family
 * (OpenAI Responses, Chat Completions, Anthropic Messages, Gemini), whole and streamed, on the recorded fixtures:
 *
 * - a tool-call round trip: the upstream's calls reach the client in its format, the client sends them back with
 *   their results as that format's clients do, and the upstream receives the same calls and results in its own;
 * - reasoning: the upstream's reasoning reaches the client in its format (deltas when streamed), the same text
 *   whichever format the client speaks;
 * - usage: tokens and cost in the format's usage shape, the same figures in every format, priced from the catalog.
 *
 * Each format and family is one row of a table; the per-route tests (chat-completions-upstreams, messages-upstreams,
 * responses) cover each pair's details.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture, sseFixture, type RecordedRequest } from '../../helpers/upstream'

// ---- the upstream families ----------------------------------------------------------------------------------

interface ReceivedCall {
  id: string
  name: string
  args: unknown
}

interface ReceivedResult {
  id: string
  output: unknown
}

interface Family {
  /** The provider serving this family's model (its loopback upstream). */
  provider: string
  /** The folder of its recorded fixtures. */
  fixtures: string
  /** The calls and tool results a follow-up request carried, in this family's wire terms. */
  received(body: any): { calls: ReceivedCall[]; results: ReceivedResult[] }
}

const parsed = (value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value)
const textOf = (content: unknown) => (Array.isArray(content) ? content.map((block: { text?: string }) => block.text ?? '').join('') : content)

const FAMILIES: Family[] = [
  {
    provider: 'openai',
    fixtures: 'openai',
    received: (body) => ({
      calls: body.input.filter((item: any) => item.type === 'function_call').map((item: any) => ({ id: item.call_id, name: item.name, args: parsed(item.arguments) })),
      results: body.input.filter((item: any) => item.type === 'function_call_output').map((item: any) => ({ id: item.call_id, output: parsed(item.output) })),
    }),
  },
  {
    provider: 'groq',
    fixtures: 'openai-chat',
    received: (body) => ({
      calls: body.messages.flatMap((message: any) => message.tool_calls ?? []).map((call: any) => ({ id: call.id, name: call.function.name, args: parsed(call.function.arguments) })),
      results: body.messages.filter((message: any) => message.role === 'tool').map((message: any) => ({ id: message.tool_call_id, output: parsed(textOf(message.content)) })),
    }),
  },
  {
    provider: 'anthropic',
    fixtures: 'anthropic',
    received: (body) => {
      const blocks = body.messages.flatMap((message: any) => (Array.isArray(message.content) ? message.content : []))
      return {
        calls: blocks.filter((block: any) => block.type === 'tool_use').map((block: any) => ({ id: block.id, name: block.name, args: block.input })),
        results: blocks.filter((block: any) => block.type === 'tool_result').map((block: any) => ({ id: block.tool_use_id, output: parsed(textOf(block.content)) })),
      }
    },
  },
  {
    provider: 'google-ai-studio',
    fixtures: 'gemini',
    received: (body) => {
      const parts = body.contents.flatMap((content: any) => content.parts)
      return {
        calls: parts.filter((part: any) => part.functionCall).map(({ functionCall }: any) => ({ id: functionCall.id, name: functionCall.name, args: functionCall.args })),
        results: parts.filter((part: any) => part.functionResponse).map(({ functionResponse }: any) => ({ id: functionResponse.id, output: functionResponse.response })),
      }
    },
  },
]

// One model per family, at prices with no cache rates, so every input token costs the same.
const PRICING = { prompt: 0.000001, completion: 0.000002 }
const modelOf = (family: Family) => `matrix/${family.fixtures}`
const MODELS: ModelEntry[] = FAMILIES.map((family) => ({
  slug: modelOf(family),
  name: family.fixtures,
  endpoints: [{ provider: family.provider, model: `${family.fixtures}-model`, contextLength: 200_000, pricing: PRICING }],
}))

// ---- the inbound formats ------------------------------------------------------------------------------------

interface Usage {
  input: number
  output: number
  cost: number
}

/** What a client got, read as that format's clients read it. */
interface Answer {
  calls: ReceivedCall[]
  reasoning: string
  usage: Usage
}

interface Inbound {
  name: string
  path: string
  /** A first request, with the weather tool and reasoning on. */
  ask(model: string, stream: boolean): Record<string, unknown>
  read(response: Response, stream: boolean): Promise<Answer>
  /** The conversation sent back: the question, the model's calls, and each call's result. */
  followUp(model: string, stream: boolean, calls: ReceivedCall[], results: string[]): Record<string, unknown>
}

const QUESTION = 'What is the weather in Paris and in San Francisco?'
const PARAMETERS = { type: 'object', properties: { location: { type: 'string' }, unit: { type: 'string' } }, required: ['location'] }

const dataOf = async (response: Response) => (await readSseEvents(response)).events.map((event) => event.data).filter((data) => data !== '[DONE]')

const RESPONSES: Inbound = {
  name: 'responses',
  path: '/responses',
  ask: (model, stream) => ({
    model,
    stream,
    input: QUESTION,
    tools: [{ type: 'function', name: 'get_weather', parameters: PARAMETERS }],
    reasoning: { effort: 'medium', summary: 'auto' },
  }),
  async read(response, stream) {
    let final: any
    let reasoning = ''
    if (stream) {
      const events = await dataOf(response)
      for (const event of events) {
        if (event.type === 'response.reasoning_summary_text.delta' || event.type === 'response.reasoning_text.delta') reasoning += event.delta
      }
      final = events.find((event) => event.type === 'response.completed' || event.type === 'response.incomplete')!.response
    } else {
      final = await response.json()
      for (const item of final.output.filter((one: any) => one.type === 'reasoning')) {
        const parts = item.content?.length ? item.content : item.summary
        reasoning += parts.map((part: { text: string }) => part.text).join('')
      }
    }
    return {
      calls: final.output.filter((item: any) => item.type === 'function_call').map((item: any) => ({ id: item.call_id, name: item.name, args: JSON.parse(item.arguments) })),
      reasoning,
      usage: { input: final.usage.input_tokens, output: final.usage.output_tokens, cost: final.usage.cost },
    }
  },
  followUp: (model, stream, calls, results) => ({
    model,
    stream,
    tools: [{ type: 'function', name: 'get_weather', parameters: PARAMETERS }],
    input: [
      { role: 'user', content: QUESTION },
      ...calls.map((call) => ({ type: 'function_call', call_id: call.id, name: call.name, arguments: JSON.stringify(call.args) })),
      ...calls.map((call, index) => ({ type: 'function_call_output', call_id: call.id, output: results[index] })),
    ],
  }),
}

const CHAT: Inbound = {
  name: 'chat/completions',
  path: '/chat/completions',
  ask: (model, stream) => ({
    model,
    stream,
    messages: [{ role: 'user', content: QUESTION }],
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: PARAMETERS } }],
    reasoning: { effort: 'medium' },
  }),
  async read(response, stream) {
    if (!stream) {
      const body = await response.json()
      const { message } = body.choices[0]
      return {
        calls: (message.tool_calls ?? []).map((call: any) => ({ id: call.id, name: call.function.name, args: JSON.parse(call.function.arguments) })),
        reasoning: message.reasoning ?? '',
        usage: { input: body.usage.prompt_tokens, output: body.usage.completion_tokens, cost: body.usage.cost },
      }
    }
    const chunks = await dataOf(response)
    let reasoning = ''
    const calls: Array<{ id: string; name: string; arguments: string }> = []
    for (const chunk of chunks) {
      const delta = chunk.choices[0]?.delta
      if (!delta) continue
      reasoning += delta.reasoning ?? ''
      for (const piece of delta.tool_calls ?? []) {
        calls[piece.index] ??= { id: '', name: '', arguments: '' }
        const call = calls[piece.index]!
        if (piece.id) call.id = piece.id
        if (piece.function?.name) call.name = piece.function.name
        call.arguments += piece.function?.arguments ?? ''
      }
    }
    const usage = chunks.at(-1).usage
    return {
      calls: calls.map((call) => ({ id: call.id, name: call.name, args: JSON.parse(call.arguments) })),
      reasoning,
      usage: { input: usage.prompt_tokens, output: usage.completion_tokens, cost: usage.cost },
    }
  },
  followUp: (model, stream, calls, results) => ({
    model,
    stream,
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: PARAMETERS } }],
    messages: [
      { role: 'user', content: QUESTION },
      { role: 'assistant', content: null, tool_calls: calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args) } })) },
      ...calls.map((call, index) => ({ role: 'tool', tool_call_id: call.id, content: results[index] })),
    ],
  }),
}

/** Anthropic's usage leaves cache reads and writes out of `input_tokens`. */
const messagesUsage = (usage: any): Usage => ({
  input: usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens,
  output: usage.output_tokens,
  cost: usage.cost,
})

const MESSAGES: Inbound = {
  name: 'messages',
  path: '/messages',
  ask: (model, stream) => ({
    model,
    stream,
    max_tokens: 8192,
    messages: [{ role: 'user', content: QUESTION }],
    tools: [{ name: 'get_weather', input_schema: PARAMETERS }],
    thinking: { type: 'enabled', budget_tokens: 2048 },
  }),
  async read(response, stream) {
    if (!stream) {
      const body = await response.json()
      return {
        calls: body.content.filter((block: any) => block.type === 'tool_use').map((block: any) => ({ id: block.id, name: block.name, args: block.input })),
        reasoning: body.content.filter((block: any) => block.type === 'thinking').map((block: any) => block.thinking).join(''),
        usage: messagesUsage(body.usage),
      }
    }
    const events = await dataOf(response)
    const blocks: any[] = []
    let reasoning = ''
    for (const event of events) {
      if (event.type === 'content_block_start') blocks[event.index] = { ...event.content_block, json: '' }
      if (event.type !== 'content_block_delta') continue
      if (event.delta.type === 'thinking_delta') reasoning += event.delta.thinking
      if (event.delta.type === 'input_json_delta') blocks[event.index].json += event.delta.partial_json
    }
    return {
      calls: blocks.filter((block) => block.type === 'tool_use').map((block) => ({ id: block.id, name: block.name, args: JSON.parse(block.json || '{}') })),
      reasoning,
      usage: messagesUsage(events.find((event) => event.type === 'message_delta').usage),
    }
  },
  followUp: (model, stream, calls, results) => ({
    model,
    stream,
    max_tokens: 8192,
    tools: [{ name: 'get_weather', input_schema: PARAMETERS }],
    messages: [
      { role: 'user', content: QUESTION },
      { role: 'assistant', content: calls.map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: call.args })) },
      { role: 'user', content: calls.map((call, index) => ({ type: 'tool_result', tool_use_id: call.id, content: results[index] })) },
    ],
  }),
}

const INBOUND: Inbound[] = [RESPONSES, CHAT, MESSAGES]

// ---- the matrix ---------------------------------------------------------------------------------------------

let harness: ResponsesHarness
beforeAll(async () => {
  harness = await createResponsesHarness(Object.fromEntries(FAMILIES.map((family) => [family.provider, {}])), { models: MODELS })
})
afterAll(() => harness.close())

const send = (inbound: Inbound, body: Record<string, unknown>) =>
  harness.gateway.fetch(
    new Request(`http://gateway.test/api/v1${inbound.path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  )

/** Answers the next request with a fixture of `family` and returns what that request carried. */
const replyOnce = (family: Family, name: string, stream: boolean) => {
  const upstream = harness.upstreams[family.provider]!
  const before = upstream.requests.length
  upstream.setHandler(() => (stream ? sseFixture(family.fixtures, `${name}.sse`) : jsonFixture(family.fixtures, `${name}.json`)))
  return (): RecordedRequest => {
    expect(upstream.requests.length, 'one upstream request').toBe(before + 1)
    return upstream.requests[before]!
  }
}

const expectPriced = (usage: Usage, where: string) => {
  expect(usage.input, where).toBeGreaterThan(0)
  expect(usage.output, where).toBeGreaterThan(0)
  expect(usage.cost, where).toBeCloseTo(usage.input * PRICING.prompt + usage.output * PRICING.completion, 12)
}

const modes = [false, true] as const

describe.each(FAMILIES.map((family) => [family.fixtures, family] as const))('upstream %s', (_, family) => {
  const model = modelOf(family)

  describe.each(modes.map((stream) => [stream ? 'streamed' : 'whole', stream] as const))('%s', (__, stream) => {
    // What each format's client got from the same fixture: every format must agree.
    const toolAnswers = new Map<string, Answer>()
    const reasoningAnswers = new Map<string, Answer>()

    it.each(INBOUND.map((inbound) => [inbound.name, inbound] as const))('%s: a tool-call round trip reaches the upstream in its own terms', async (___, inbound) => {
      const sent = replyOnce(family, 'tool-call', stream)
      const response = await send(inbound, inbound.ask(model, stream))
      expect(response.status, await response.clone().text()).toBe(200)
      const answer = await inbound.read(response, stream)
      sent()
      expect(answer.calls.length).toBeGreaterThan(0)
      for (const call of answer.calls) {
        expect(call).toMatchObject({ id: expect.stringMatching(/./), name: 'get_weather' })
        // The fixtures name the place `location` or `city`: some argument, as an object.
        expect(Object.keys(call.args as object).length).toBeGreaterThan(0)
      }
      expectPriced(answer.usage, 'tool call')
      toolAnswers.set(inbound.name, answer)

      const results = answer.calls.map((call, index) => JSON.stringify({ for: call.args, temperature: 20 + index }))
      const followUp = replyOnce(family, 'text', stream)
      const next = await send(inbound, inbound.followUp(model, stream, answer.calls, results))
      expect(next.status, await next.clone().text()).toBe(200)
      await next.arrayBuffer()
      const received = family.received(followUp().json)
      expect(received.calls).toEqual(answer.calls)
      expect(received.results).toEqual(answer.calls.map((call, index) => ({ id: call.id, output: JSON.parse(results[index]!) })))
    })

    it.each(INBOUND.map((inbound) => [inbound.name, inbound] as const))('%s: reasoning and usage reach the client in its format', async (___, inbound) => {
      const sent = replyOnce(family, 'reasoning', stream)
      const response = await send(inbound, inbound.ask(model, stream))
      expect(response.status, await response.clone().text()).toBe(200)
      const answer = await inbound.read(response, stream)
      sent()
      expect(answer.reasoning.length, 'reasoning text').toBeGreaterThan(0)
      expectPriced(answer.usage, 'reasoning')
      reasoningAnswers.set(inbound.name, answer)
    })

    it('gives every format the same calls, reasoning and usage', () => {
      expect(toolAnswers.size).toBe(INBOUND.length)
      expect(reasoningAnswers.size).toBe(INBOUND.length)
      const [first, ...others] = INBOUND.map((inbound) => ({ tool: toolAnswers.get(inbound.name)!, reasoning: reasoningAnswers.get(inbound.name)! }))
      for (const other of others) {
        expect(other.tool.calls.map(({ name, args }) => ({ name, args }))).toEqual(first!.tool.calls.map(({ name, args }) => ({ name, args })))
        expect(other.tool.usage).toEqual(first!.tool.usage)
        expect(other.reasoning.reasoning).toBe(first!.reasoning.reasoning)
        expect(other.reasoning.usage).toEqual(first!.reasoning.usage)
      }
    })
  })
})
