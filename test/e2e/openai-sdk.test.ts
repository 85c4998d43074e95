/**
 * The official `openai` SDK against a gateway on a real node:http server. Every provider
 * family — OpenAI Responses, the Chat Completions family, Anthropic, Gemini — answers from loopback
 * upstreams replaying recorded fixtures, and every call goes through `client.responses.create`,
 * `client.responses.stream` or `create({stream: true})`, exactly as SDK users make them. The
 * upstreams record what the gateway sent, so the tool and reasoning round trips are asserted on
 * the provider's own wire format too.
 */

import OpenAI, { APIError, BadRequestError, NotFoundError, RateLimitError } from 'openai'
import type {
  FunctionTool,
  Response as SdkResponse,
  ResponseCreateParamsBase,
  ResponseCreateParamsStreaming,
  ResponseFunctionToolCall,
  ResponseInputItem,
  ResponseOutputItem,
  ResponseStreamEvent,
} from 'openai/resources/responses/responses'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createSdkHarness, FAMILIES, FAMILY_IDS, WEATHER_PARAMETERS, type Family, type FamilyId, type RunningGateway } from '../helpers/sdk-gateway'
import { assertValidEventSequence } from '../helpers/stream-events'
import { jsonFixture, sseFixture } from '../helpers/upstream'

// ---------------------------------------------------------------------------------------------
// The gateway on a real HTTP server, and SDK clients whose raw response bytes are tapped.
// ---------------------------------------------------------------------------------------------

const harness = createSdkHarness()
const { upstreams, overrides, startGateway, lastRequest } = harness

interface Tapped {
  client: OpenAI
  /** Raw body text of every response, in request order (filled as the SDK reads). */
  bodies: Array<{ status: number; contentType: string; text: string }>
  /** Resolves when a body chunk matching `pattern` has been read. */
  nextChunkMatching(pattern: RegExp): Promise<void>
}

/** An SDK client whose `fetch` copies every response body as the SDK reads it. */
const sdkClient = (target: RunningGateway): Tapped => {
  const bodies: Tapped['bodies'] = []
  const waiters: Array<{ pattern: RegExp; resolve: () => void }> = []
  const tapFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init)
    const record = { status: response.status, contentType: response.headers.get('content-type') ?? '', text: '' }
    bodies.push(record)
    if (!response.body) return response
    const decoder = new TextDecoder()
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          const text = decoder.decode(chunk, { stream: true })
          record.text += text
          for (const waiter of [...waiters]) {
            if (waiter.pattern.test(text)) {
              waiters.splice(waiters.indexOf(waiter), 1)
              waiter.resolve()
            }
          }
          controller.enqueue(chunk)
        },
      }),
    )
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
  }
  const client = new OpenAI({ baseURL: target.url, apiKey: target.key, maxRetries: 0, timeout: 30_000, fetch: tapFetch })
  return {
    client,
    bodies,
    nextChunkMatching: (pattern) => new Promise((resolve) => waiters.push({ pattern, resolve })),
  }
}

let main: RunningGateway
let sdk: Tapped

beforeAll(async () => {
  await harness.start()
  main = await startGateway()
  sdk = sdkClient(main)
})

afterEach(() => harness.clearOverrides())

afterAll(() => harness.close())

// ---------------------------------------------------------------------------------------------
// Request builders and assertions.
// ---------------------------------------------------------------------------------------------

const WEATHER_TOOL: FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Get the current weather for a location.',
  parameters: WEATHER_PARAMETERS,
  strict: true,
}

/** Parameters valid for `create` and `stream()` alike. */
type Body = Omit<ResponseCreateParamsBase, 'stream'>

/** The SDK's parameters plus gateway-only fields (spreads escape the SDK's excess-property check). */
const params = (family: Family, fields: Omit<Body, 'model'>): Body => ({
  model: family.model,
  ...fields,
  ...family.extra,
})

const streamingParams = (family: Family, fields: Omit<Body, 'model'>): ResponseCreateParamsStreaming => ({
  ...params(family, fields),
  stream: true,
})

const textOf = (response: { output: ResponseOutputItem[] }): string =>
  response.output
    .flatMap((item) => (item.type === 'message' ? item.content : []))
    .map((part) => (part.type === 'output_text' ? part.text : ''))
    .join('')

const functionCalls = (response: { output: ResponseOutputItem[] }): ResponseFunctionToolCall[] =>
  response.output.filter((item): item is ResponseFunctionToolCall => item.type === 'function_call')

type BilledUsage = NonNullable<SdkResponse['usage']> & { cost: unknown; is_byok: unknown }

/** gaps §2: integer token counts, and the gateway's `cost` as a number. */
const expectBilledUsage = (usage: SdkResponse['usage']) => {
  expect(usage).toBeTruthy()
  const billed = usage as BilledUsage
  for (const count of [
    billed.input_tokens,
    billed.output_tokens,
    billed.total_tokens,
    billed.input_tokens_details.cached_tokens,
    billed.output_tokens_details.reasoning_tokens,
  ]) {
    expect(Number.isInteger(count), `token count ${String(count)}`).toBe(true)
  }
  expect(billed.input_tokens).toBeGreaterThan(0)
  expect(billed.output_tokens).toBeGreaterThan(0)
  expect(billed.total_tokens).toBe(billed.input_tokens + billed.output_tokens)
  expect(typeof billed.cost).toBe('number')
  expect(billed.cost as number).toBeGreaterThan(0)
  expect(billed.is_byok).toBe(false)
}

/** gaps §2: the fields every Response object carries, in every state. */
const RESPONSE_FIELDS = [
  'id', 'object', 'created_at', 'completed_at', 'status', 'error', 'incomplete_details', 'instructions', 'metadata', 'model', 'output',
  'parallel_tool_calls', 'temperature', 'top_p', 'presence_penalty', 'frequency_penalty', 'tool_choice', 'tools',
] as const

/** What every complete Response must carry (gaps §2), as the SDK hands it over. */
const expectCompletedResponse = (response: SdkResponse, family: Family) => {
  expect(response.object).toBe('response')
  expect(response.id).toMatch(/^resp_/)
  expect(response.status).toBe('completed')
  expect(response.model).toBe(family.model)
  expect(response.error).toBeNull()
  expect(Number.isInteger(response.created_at)).toBe(true)
  expect(typeof response.parallel_tool_calls).toBe('boolean')
  expect(Array.isArray(response.tools)).toBe(true)
  for (const field of RESPONSE_FIELDS) expect(response, field).toHaveProperty(field)
  expect(Number.isInteger(response.completed_at)).toBe(true)
  expectBilledUsage(response.usage)
}

/** Event kinds that belong to an output item, as one-letter tokens for the shape patterns below. */
const ITEM_EVENT_TOKENS: Record<string, string> = {
  'response.output_item.added': 'A',
  'response.output_item.done': 'D',
  'response.content_part.added': 'P',
  'response.content_part.done': 'p',
  'response.output_text.delta': 't',
  'response.output_text.done': 'T',
  'response.output_text.annotation.added': 'n',
  'response.refusal.delta': 'r',
  'response.refusal.done': 'R',
  'response.function_call_arguments.delta': 'f',
  'response.function_call_arguments.done': 'F',
  'response.reasoning_summary_part.added': 'S',
  'response.reasoning_summary_part.done': 's',
  'response.reasoning_summary_text.delta': 'u',
  'response.reasoning_summary_text.done': 'U',
  'response.reasoning_text.delta': 'x',
  'response.reasoning_text.done': 'X',
}

/** gaps §1.3, canonical order per item kind. */
const ITEM_SHAPES: Record<string, RegExp> = {
  message: /^A(P(t+n*T|r+R)p)+D$/,
  function_call: /^Af*FD$/,
  reasoning: /^A(Su*Us|Px*Xp)*D$/,
}

/**
 * The whole stream in canonical order (gaps §1.3 and §2): `response.created` first, then
 * `in_progress`, item events in each item's canonical shape, the terminal event last, and
 * `sequence_number` counting 0, 1, 2, … Returns the item events' `.done` items in output order.
 */
const expectCanonicalStream = (events: ResponseStreamEvent[], terminal = 'response.completed') => {
  expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index))
  expect(events[0]?.type).toBe('response.created')
  expect(events[1]?.type).toBe('response.in_progress')
  expect(events.at(-1)?.type).toBe(terminal)
  // gaps §2: the in-progress Responses are complete objects too, for the same model.
  const terminalResponse = (events.at(-1) as { response: SdkResponse }).response
  for (const event of events.slice(0, 2) as Array<{ response: SdkResponse }>) {
    for (const field of RESPONSE_FIELDS) expect(event.response, field).toHaveProperty(field)
    expect(event.response).toMatchObject({ id: terminalResponse.id, status: 'in_progress', model: terminalResponse.model, output: [] })
    expect(typeof event.response.parallel_tool_calls).toBe('boolean')
    expect(Number.isInteger(event.response.created_at)).toBe(true)
  }
  const itemEvents = events.slice(2, -1)
  for (const event of itemEvents) expect(ITEM_EVENT_TOKENS, `unexpected event ${event.type}`).toHaveProperty([event.type])
  assertValidEventSequence(itemEvents as unknown as Array<{ type: string } & Record<string, any>>)

  const byItem = new Map<number, { kind: string; tokens: string }>()
  const doneItems: ResponseOutputItem[] = []
  for (const event of itemEvents) {
    const outputIndex = (event as { output_index: number }).output_index
    if (event.type === 'response.output_item.added') {
      const item = event.item
      byItem.set(outputIndex, { kind: item.type, tokens: '' })
      if (item.type === 'message') expect(item).toMatchObject({ status: 'in_progress', content: [] })
      if (item.type === 'function_call') expect(item.arguments).toBe('')
    }
    if (event.type === 'response.output_item.done') doneItems[outputIndex] = event.item
    byItem.get(outputIndex)!.tokens += ITEM_EVENT_TOKENS[event.type]
  }
  for (const [outputIndex, { kind, tokens }] of byItem) {
    expect(tokens, `item ${outputIndex} (${kind}) events`).toMatch(ITEM_SHAPES[kind] ?? /^A.*D$/)
  }
  return doneItems
}

const deltaText = (events: ResponseStreamEvent[]) =>
  events.flatMap((event) => (event.type === 'response.output_text.delta' ? [event.delta] : [])).join('')

/** The raw SSE the SDK parsed: OpenAI-style `event:` lines and the `data: [DONE]` end (gaps §1.3). */
const expectRawStream = (raw: { status: number; contentType: string; text: string } | undefined) => {
  expect(raw?.status).toBe(200)
  expect(raw?.contentType).toBe('text/event-stream')
  const text = raw!.text
  expect(text.endsWith('data: [DONE]\n\n')).toBe(true)
  const blocks = text.split('\n\n').filter((block) => block !== '' && !block.startsWith(':'))
  for (const block of blocks.slice(0, -1)) {
    const [eventLine, dataLine] = block.split('\n')
    expect(eventLine).toMatch(/^event: response\./)
    expect(JSON.parse(dataLine!.slice('data: '.length)).type).toBe(eventLine!.slice('event: '.length))
  }
  // No event but the `error` event may carry a top-level `error` key: the SDK throws on it.
  expect(text).not.toMatch(/^data: \{"error"/m)
}

const collect = async <T>(iterable: AsyncIterable<T>): Promise<T[]> => {
  const all: T[] = []
  for await (const value of iterable) all.push(value)
  return all
}

/**
 * `responses.stream()`: every event it emits, and its final Response. The helper accumulates its
 * snapshot into the very item objects the `output_item.added` events carry, so each event is
 * copied the moment it is emitted; the iteration itself must still run to its end.
 */
const runStream = async (client: OpenAI, body: Body) => {
  const stream = client.responses.stream(body)
  const events: ResponseStreamEvent[] = []
  stream.on('event', (event) => events.push(structuredClone(event)))
  const iterated = await collect(stream)
  expect(iterated.map((event) => event.type)).toEqual(events.map((event) => event.type))
  const final = await stream.finalResponse()
  return { events, final }
}

/** The local tool: what a real app would compute for get_weather. */
const runWeatherTool = (call: ResponseFunctionToolCall): ResponseInputItem => {
  const args = JSON.parse(call.arguments) as { location?: string; city?: string }
  return {
    type: 'function_call_output',
    call_id: call.call_id,
    output: JSON.stringify({ location: args.location ?? args.city, temperature: 18, unit: 'celsius', conditions: 'partly cloudy' }),
  }
}

/** Output items sent back as input, as SDK users do (`input.push(...response.output)`). */
const asInput = (items: ResponseOutputItem[]) => items as ResponseInputItem[]

const QUESTION = 'What is the capital of France?'
const WEATHER_QUESTION: ResponseInputItem = { role: 'user', content: 'What is the weather like in Paris right now?' }

const expectApiError = async (promise: Promise<unknown>, type: abstract new (...args: any[]) => APIError, status: number) => {
  const error = await promise.then(
    () => {
      throw new Error(`expected ${type.name}`)
    },
    (caught: unknown) => caught,
  )
  expect(error).toBeInstanceOf(type)
  const apiError = error as APIError
  expect(apiError.status).toBe(status)
  // gaps §2: `error.code` is the HTTP status as an integer.
  expect(apiError.code).toBe(status)
  expect(apiError.error).toMatchObject({ code: status, message: expect.any(String) })
  expect(apiError.headers?.get('content-type')).toMatch(/^application\/json/)
  return apiError
}

// ---------------------------------------------------------------------------------------------
// Text: create, stream(), create({stream: true}).
// ---------------------------------------------------------------------------------------------

describe.each(FAMILY_IDS)('openai SDK → %s family: text', (id) => {
  const family = FAMILIES[id]
  let created: SdkResponse

  it('responses.create returns a complete Response with output_text, items, usage and the public model slug', async () => {
    created = await sdk.client.responses.create(params(family, { input: QUESTION }))
    expectCompletedResponse(created, family)
    expect(created.output_text).toContain(family.textPhrase)
    expect(created.output_text).toBe(textOf(created))
    expect(created.output.filter((item) => item.type === 'message')).toEqual([
      expect.objectContaining({ type: 'message', role: 'assistant', status: 'completed', id: expect.any(String) }),
    ])
    expect(family.isStream(lastRequest(id))).toBe(false)
  })

  it('responses.stream() accepts the stream, its finalResponse equals create, and the events are canonical', async () => {
    const { events, final } = await runStream(sdk.client, params(family, { input: QUESTION }))
    expect(family.isStream(lastRequest(id))).toBe(true)
    expectRawStream(sdk.bodies.at(-1))
    const doneItems = expectCanonicalStream(events)
    expectCompletedResponse(final, family)
    expect(textOf(final)).toBe(textOf(created))
    expect(final.usage).toEqual(created.usage)
    expect(deltaText(events)).toBe(textOf(final))
    const completed = events.at(-1) as Extract<ResponseStreamEvent, { type: 'response.completed' }>
    // The completed Response holds exactly the items of the output_item.done events.
    expect(completed.response.output).toEqual(doneItems)
    expect(completed.response.usage).toEqual(created.usage)
  })

  it('create({stream: true}) iterates to the end over event lines, [DONE] and keep-alives', async () => {
    const stream = await sdk.client.responses.create(streamingParams(family, { input: QUESTION }))
    const events = await collect(stream)
    expectRawStream(sdk.bodies.at(-1))
    expectCanonicalStream(events)
    const completed = events.at(-1) as Extract<ResponseStreamEvent, { type: 'response.completed' }>
    expect(textOf(completed.response)).toBe(textOf(created))
    expect(deltaText(events)).toBe(textOf(created))
  })
})

// ---------------------------------------------------------------------------------------------
// Function-tool round trip: turn 1 calls the tool, turn 2 sends the call and its output back.
// ---------------------------------------------------------------------------------------------

/** The tool history of turn 2 as it reached the upstream, in the provider's own format. */
const expectToolHistoryUpstream = (id: FamilyId, calls: ResponseFunctionToolCall[]) => {
  const sent = lastRequest(id).json
  const ids = calls.map((call) => call.call_id)
  const args = calls.map((call) => JSON.parse(call.arguments))
  switch (id) {
    case 'openai': {
      const input = sent.input as any[]
      expect(input.filter((item) => item.type === 'function_call').map((item) => [item.call_id, item.name, JSON.parse(item.arguments)])).toEqual(
        calls.map((call, index) => [call.call_id, 'get_weather', args[index]]),
      )
      expect(input.filter((item) => item.type === 'function_call_output').map((item) => item.call_id)).toEqual(ids)
      break
    }
    case 'chat': {
      const messages = sent.messages as any[]
      const assistant = messages.find((message) => message.role === 'assistant')
      expect(assistant.tool_calls.map((call: any) => [call.id, call.type, call.function.name, JSON.parse(call.function.arguments)])).toEqual(
        calls.map((call, index) => [call.call_id, 'function', 'get_weather', args[index]]),
      )
      expect(messages.filter((message) => message.role === 'tool').map((message) => message.tool_call_id)).toEqual(ids)
      expect(sent.tools).toEqual([expect.objectContaining({ type: 'function', function: expect.objectContaining({ name: 'get_weather' }) })])
      break
    }
    case 'anthropic': {
      const messages = sent.messages as any[]
      expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user'])
      const toolUses = messages[1].content.filter((block: any) => block.type === 'tool_use')
      expect(toolUses.map((block: any) => [block.id, block.name, block.input])).toEqual(calls.map((call, index) => [call.call_id, 'get_weather', args[index]]))
      // Tool results open the user turn (Anthropic requires them first).
      expect(messages[2].content.map((block: any) => [block.type, block.tool_use_id])).toEqual(ids.map((callId) => ['tool_result', callId]))
      break
    }
    case 'gemini': {
      const contents = sent.contents as any[]
      expect(contents.map((content) => content.role)).toEqual(['user', 'model', 'user'])
      expect(contents[1].parts.map((part: any) => [part.functionCall.id, part.functionCall.name, part.functionCall.args])).toEqual(
        calls.map((call, index) => [call.call_id, 'get_weather', args[index]]),
      )
      expect(contents[2].parts.map((part: any) => [part.functionResponse.id, part.functionResponse.name])).toEqual(ids.map((callId) => [callId, 'get_weather']))
      break
    }
  }
}

describe.each(FAMILY_IDS)('openai SDK → %s family: function-tool round trip', (id) => {
  const family = FAMILIES[id]
  let turn1: SdkResponse

  it('responses.create: the model calls get_weather, the app runs it, turn 2 answers in text', async () => {
    turn1 = await sdk.client.responses.create(params(family, { input: [WEATHER_QUESTION], tools: [WEATHER_TOOL] }))
    expectCompletedResponse(turn1, family)
    const calls = functionCalls(turn1)
    expect(calls.length).toBeGreaterThan(0)
    for (const call of calls) {
      expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', status: 'completed', call_id: expect.any(String), id: expect.any(String) })
      expect(JSON.parse(call.arguments)).toEqual(expect.any(Object))
    }
    expect(lastRequest(id).json).not.toHaveProperty('stream', true)

    const turn2 = await sdk.client.responses.create(
      params(family, { input: [WEATHER_QUESTION, ...asInput(turn1.output), ...calls.map(runWeatherTool)], tools: [WEATHER_TOOL] }),
    )
    expectCompletedResponse(turn2, family)
    expect(turn2.output_text).toContain(family.toolResultPhrase)
    expect(functionCalls(turn2)).toEqual([])
    expectToolHistoryUpstream(id, calls)
  })

  it('responses.stream(): the same round trip streamed, with canonical function-call events', async () => {
    const first = await runStream(sdk.client, params(family, { input: [WEATHER_QUESTION], tools: [WEATHER_TOOL] }))
    expectRawStream(sdk.bodies.at(-1))
    expectCanonicalStream(first.events)
    expectCompletedResponse(first.final, family)
    const calls = functionCalls(first.final)
    // The streamed calls are the non-streamed ones: same ids, names and arguments (as JSON values:
    // Anthropic streams the model's own spacing, its JSON body holds a parsed object).
    const summary = (call: ResponseFunctionToolCall) => ({ call_id: call.call_id, name: call.name, args: JSON.parse(call.arguments) })
    expect(calls.map(summary)).toEqual(functionCalls(turn1).map(summary))
    expect(first.final.usage).toEqual(turn1.usage)
    const argumentEvents = first.events.filter((event) => event.type === 'response.function_call_arguments.done')
    expect(argumentEvents.map((event) => event.arguments)).toEqual(calls.map((call) => call.arguments))

    const second = await runStream(
      sdk.client,
      params(family, { input: [WEATHER_QUESTION, ...asInput(first.final.output), ...calls.map(runWeatherTool)], tools: [WEATHER_TOOL] }),
    )
    expectCanonicalStream(second.events)
    expectCompletedResponse(second.final, family)
    expect(textOf(second.final)).toContain(family.toolResultPhrase)
    expect(deltaText(second.events)).toBe(textOf(second.final))
    expectToolHistoryUpstream(id, calls)
  })
})

// ---------------------------------------------------------------------------------------------
// Reasoning models: reasoning items come back, and go back to the upstream in its own format.
// ---------------------------------------------------------------------------------------------

type ReasoningOutput = Extract<ResponseOutputItem, { type: 'reasoning' }> & { signature?: string; format?: string }

const reasoningItems = (response: { output: ResponseOutputItem[] }) =>
  response.output.filter((item): item is ReasoningOutput => item.type === 'reasoning')

const FOLLOW_UP: ResponseInputItem = { role: 'user', content: 'Thanks. Now explain it in one sentence.' }

describe('openai SDK → openai family: reasoning (o4-mini)', () => {
  const family: Family = { ...FAMILIES.openai, model: 'openai/o4-mini' }
  const body = (input: ResponseInputItem[]) =>
    params(family, { input, reasoning: { effort: 'medium', summary: 'auto' }, include: ['reasoning.encrypted_content'] })
  const question: ResponseInputItem = { role: 'user', content: 'How many r are in "strawberry"?' }

  for (const mode of ['create', 'stream'] as const) {
    it(`${mode}: a reasoning item with summary and encrypted_content, sent back in turn 2 as OpenAI wants it`, async () => {
      let turn1: SdkResponse
      if (mode === 'create') turn1 = await sdk.client.responses.create(body([question]))
      else {
        const { events, final } = await runStream(sdk.client, body([question]))
        expectCanonicalStream(events)
        const summaryDeltas = events.filter((event) => event.type === 'response.reasoning_summary_text.delta')
        expect(summaryDeltas.length).toBeGreaterThan(0)
        // OpenAI sends a first encrypted_content with output_item.added and the final one with .done.
        const [added, done] = (['response.output_item.added', 'response.output_item.done'] as const).map(
          (type) => events.find((event) => event.type === type && event.item.type === 'reasoning') as { item: ReasoningOutput },
        )
        expect(added!.item.encrypted_content).not.toBe(done!.item.encrypted_content)
        expect(reasoningItems(final)[0]!.encrypted_content).toBe(done!.item.encrypted_content)
        turn1 = final
      }
      expectCompletedResponse(turn1, family)
      expect(turn1.usage!.output_tokens_details.reasoning_tokens).toBe(192)
      const [reasoning] = reasoningItems(turn1)
      expect(reasoning).toMatchObject({ id: expect.stringMatching(/^rs_/), encrypted_content: expect.stringMatching(/^gAAAA/) })
      expect(reasoning!.summary.map((part) => part.type)).toEqual(['summary_text', 'summary_text'])
      expect(turn1.output.map((item) => item.type)).toEqual(['reasoning', 'message'])
      expect(textOf(turn1)).toContain('strawberry')
      expect(lastRequest('openai').json).toMatchObject({ model: 'o4-mini', reasoning: { effort: 'medium', summary: 'auto' }, include: ['reasoning.encrypted_content'] })

      const turn2 = await sdk.client.responses.create(body([question, ...asInput(turn1.output), FOLLOW_UP]))
      expectCompletedResponse(turn2, family)
      const sentReasoning = (lastRequest('openai').json.input as any[]).filter((item) => item.type === 'reasoning')
      // Only what OpenAI takes back: our `format` / `signature` / `status` never reach it.
      expect(sentReasoning).toEqual([{ type: 'reasoning', id: reasoning!.id, summary: reasoning!.summary, encrypted_content: reasoning!.encrypted_content }])
    })
  }
})

describe('openai SDK → anthropic family: extended thinking with a tool call', () => {
  const family = FAMILIES.anthropic
  const body = (input: ResponseInputItem[]) => params(family, { input, tools: [WEATHER_TOOL], reasoning: { effort: 'low' } })
  const question: ResponseInputItem = { role: 'user', content: 'What is the weather in San Francisco and in Paris?' }

  for (const mode of ['create', 'stream'] as const) {
    it(`${mode}: the signed thinking block comes back as a reasoning item and returns upstream as a thinking block`, async () => {
      let turn1: SdkResponse
      if (mode === 'create') turn1 = await sdk.client.responses.create(body([question]))
      else {
        const { events, final } = await runStream(sdk.client, body([question]))
        expectCanonicalStream(events)
        expect(events.some((event) => event.type === 'response.reasoning_text.delta')).toBe(true)
        turn1 = final
      }
      expectCompletedResponse(turn1, family)
      expect(lastRequest('anthropic').json.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 })
      expect(turn1.output.map((item) => item.type)).toEqual(['reasoning', 'function_call', 'function_call'])
      const [reasoning] = reasoningItems(turn1)
      expect(reasoning).toMatchObject({ format: 'anthropic-claude-v1', signature: expect.stringMatching(/^ErUB/) })
      const thinking = reasoning!.content!.map((part) => part.text).join('')
      expect(thinking).toContain('I can call the tool for both cities at once')
      expect(turn1.usage!.output_tokens_details.reasoning_tokens).toBe(71)

      const calls = functionCalls(turn1)
      const turn2 = await sdk.client.responses.create(body([question, ...asInput(turn1.output), ...calls.map(runWeatherTool)]))
      expectCompletedResponse(turn2, family)
      expect(turn2.output_text).toContain(family.toolResultPhrase)
      const messages = lastRequest('anthropic').json.messages as any[]
      // The assistant turn opens with the thinking block, signature intact, before its tool_use blocks.
      expect(messages[1]).toEqual({
        role: 'assistant',
        content: [
          { type: 'thinking', thinking, signature: reasoning!.signature },
          ...calls.map((call) => ({ type: 'tool_use', id: call.call_id, name: 'get_weather', input: JSON.parse(call.arguments) })),
        ],
      })
      expectToolHistoryUpstream('anthropic', calls)
    })
  }

  it('stream: thinking without tools streams reasoning_text events in canonical order', async () => {
    const { events, final } = await runStream(sdk.client, params(family, { input: 'GCD of 1071 and 462?', reasoning: { effort: 'low' } }))
    expectCanonicalStream(events)
    expect(final.output.map((item) => item.type)).toEqual(['reasoning', 'message'])
    expect(reasoningItems(final)[0]).toMatchObject({ signature: expect.stringMatching(/^EqQB/), format: 'anthropic-claude-v1' })
    expect(textOf(final)).toContain('**21**')
  })
})

describe('openai SDK → gemini family: thought signatures', () => {
  const family = FAMILIES.gemini
  const question: ResponseInputItem = { role: 'user', content: 'How many r are in "strawberry"?' }
  const body = (input: ResponseInputItem[]) => params(family, { input, reasoning: { effort: 'low', summary: 'auto' } })

  for (const mode of ['create', 'stream'] as const) {
    it(`${mode}: thought summaries and the answer's signature come back, and the signature returns on the answer part`, async () => {
      let turn1: SdkResponse
      if (mode === 'create') turn1 = await sdk.client.responses.create(body([question]))
      else {
        const { events, final } = await runStream(sdk.client, body([question]))
        expectCanonicalStream(events)
        turn1 = final
      }
      expectCompletedResponse(turn1, family)
      expect(lastRequest('gemini').json.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 2048, includeThoughts: true })
      expect(turn1.output.map((item) => item.type)).toEqual(['reasoning', 'message', 'reasoning'])
      const [summary, signed] = reasoningItems(turn1)
      expect(summary!.summary[0]!.text).toContain('**Counting the letters**')
      expect(signed).toMatchObject({ format: 'google-gemini-v1', signature: expect.stringMatching(/^EpGy/), summary: [] })

      await sdk.client.responses.create(body([question, ...asInput(turn1.output), FOLLOW_UP]))
      const contents = lastRequest('gemini').json.contents as any[]
      expect(contents.map((content) => content.role)).toEqual(['user', 'model', 'user'])
      // Thought summaries are not sent back; the signature rides on the part it signed.
      expect(contents[1].parts).toEqual([{ text: textOf(turn1), thoughtSignature: signed!.signature }])
    })
  }

  it('tool round trip: the signature of the first functionCall goes back on that functionCall', async () => {
    const turn1 = await sdk.client.responses.create(params(family, { input: [WEATHER_QUESTION], tools: [WEATHER_TOOL] }))
    expect(turn1.output.map((item) => item.type)).toEqual(['reasoning', 'function_call', 'function_call'])
    const [reasoning] = reasoningItems(turn1)
    expect(reasoning).toMatchObject({ format: 'google-gemini-v1', signature: expect.stringMatching(/^Er0e/) })
    const calls = functionCalls(turn1)
    await sdk.client.responses.create(params(family, { input: [WEATHER_QUESTION, ...asInput(turn1.output), ...calls.map(runWeatherTool)], tools: [WEATHER_TOOL] }))
    const modelParts = (lastRequest('gemini').json.contents as any[])[1].parts
    expect(modelParts[0]).toMatchObject({ functionCall: { id: calls[0]!.call_id }, thoughtSignature: reasoning!.signature })
    expect(modelParts[1]).not.toHaveProperty('thoughtSignature')
  })
})

describe('openai SDK → chat family: DeepSeek-style reasoning_content', () => {
  const family: Family = { ...FAMILIES.chat, model: 'deepseek/deepseek-r1', extra: {} }
  const question: ResponseInputItem = { role: 'user', content: 'What is 17 × 23?' }

  for (const mode of ['create', 'stream'] as const) {
    it(`${mode}: reasoning_content becomes a reasoning item, and goes back as reasoning_content`, async () => {
      let turn1: SdkResponse
      if (mode === 'create') turn1 = await sdk.client.responses.create(params(family, { input: [question] }))
      else {
        const { events, final } = await runStream(sdk.client, params(family, { input: [question] }))
        expectCanonicalStream(events)
        expect(events.some((event) => event.type === 'response.reasoning_text.delta')).toBe(true)
        turn1 = final
      }
      expectCompletedResponse(turn1, family)
      expect(lastRequest('chat').json.model).toBe('deepseek-reasoner')
      expect(turn1.output.map((item) => item.type)).toEqual(['reasoning', 'message'])
      const reasoning = reasoningItems(turn1)[0]!.content!.map((part) => part.text).join('')
      expect(reasoning).toBe('The user asks for 17 × 23. 17 × 20 = 340, and 17 × 3 = 51. 340 + 51 = 391.')
      expect(textOf(turn1)).toBe('17 × 23 = **391**')
      expect(turn1.usage!.output_tokens_details.reasoning_tokens).toBe(32)

      await sdk.client.responses.create(params(family, { input: [question, ...asInput(turn1.output), FOLLOW_UP] }))
      const messages = lastRequest('chat').json.messages as any[]
      expect(messages[1]).toEqual({ role: 'assistant', content: textOf(turn1), reasoning_content: reasoning })
    })
  }
})

// ---------------------------------------------------------------------------------------------
// Errors through the SDK.
// ---------------------------------------------------------------------------------------------

const ERROR_FIXTURES: Record<FamilyId, { rateLimit: string; context: string }> = {
  openai: { rateLimit: 'error-429.json', context: 'error-400-context.json' },
  chat: { rateLimit: 'error-429.json', context: 'error-400-context.json' },
  anthropic: { rateLimit: 'error-429.json', context: 'error-400-context.json' },
  gemini: { rateLimit: 'error-429.json', context: 'error-400-context.json' },
}

describe.each(FAMILY_IDS)('openai SDK → %s family: errors', (id) => {
  const family = FAMILIES[id]
  const fail = (name: string, status: number) => {
    overrides[id] = () => jsonFixture(family.folder, name, status)
  }

  it('an upstream 429 throws RateLimitError from create, create({stream: true}) and stream()', async () => {
    fail(ERROR_FIXTURES[id].rateLimit, 429)
    const before = upstreams[id].requests.length
    await expectApiError(sdk.client.responses.create(params(family, { input: QUESTION })), RateLimitError, 429)
    await expectApiError(sdk.client.responses.create(streamingParams(family, { input: QUESTION })), RateLimitError, 429)
    const stream = sdk.client.responses.stream(params(family, { input: QUESTION }))
    await expectApiError(stream.finalResponse(), RateLimitError, 429)
    // maxRetries: 0, and one endpoint: each call reached the upstream exactly once.
    expect(upstreams[id].requests.length - before).toBe(3)
  })

  it('an upstream 400 context-length error throws BadRequestError', async () => {
    fail(ERROR_FIXTURES[id].context, 400)
    const error = await expectApiError(sdk.client.responses.create(params(family, { input: QUESTION })), BadRequestError, 400)
    expect(error.error).toMatchObject({ metadata: { error_type: 'context_length_exceeded' } })
    await expectApiError(sdk.client.responses.create(streamingParams(family, { input: QUESTION })), BadRequestError, 400)
  })

  it('a failure after content arrives in-band: iteration ends at response.failed without throwing', async () => {
    overrides[id] = () => sseFixture(family.folder, 'error-midstream.sse')
    const stream = await sdk.client.responses.create(streamingParams(family, { input: QUESTION }))
    const events = await collect(stream)
    expectRawStream(sdk.bodies.at(-1))
    expect(events[0]?.type).toBe('response.created')
    expect(events.some((event) => event.type === 'response.output_text.delta')).toBe(true)
    const failed = events.at(-1) as Extract<ResponseStreamEvent, { type: 'response.failed' }>
    expect(failed.type).toBe('response.failed')
    expect(failed.response).toMatchObject({ status: 'failed', model: family.model, error: { code: expect.any(String), message: expect.any(String) } })
    expect(events.filter((event) => event.type === 'response.failed' || event.type === 'error')).toHaveLength(1)
  })
})

describe('openai SDK: service_tier', () => {
  it('is the tier the upstream says served the answer, from create, create({stream: true}) and stream()', async () => {
    // Asked for priority; the recorded answer was served on the default tier, and says so.
    const body = { ...params(FAMILIES.openai, { input: QUESTION }), service_tier: 'priority' as const }
    const whole = await sdk.client.responses.create(body)
    expect(lastRequest('openai').json.service_tier).toBe('priority')
    expect(whole.service_tier).toBe('default')
    const events = await collect(await sdk.client.responses.create({ ...body, stream: true }))
    expect((events[0] as Extract<ResponseStreamEvent, { type: 'response.created' }>).response.service_tier).toBe('priority')
    expect((events.at(-1) as Extract<ResponseStreamEvent, { type: 'response.completed' }>).response.service_tier).toBe('default')
    expect((await runStream(sdk.client, body)).final.service_tier).toBe('default')
  })
})

describe('openai SDK: request errors', () => {
  it('an unknown model throws NotFoundError, streamed or not', async () => {
    const body = { model: 'nobody/nothing', input: QUESTION }
    const error = await expectApiError(sdk.client.responses.create(body), NotFoundError, 404)
    expect(error.message).toContain('nobody/nothing')
    await expectApiError(sdk.client.responses.create({ ...body, stream: true }), NotFoundError, 404)
    await expectApiError(sdk.client.responses.stream(body).finalResponse(), NotFoundError, 404)
  })

  it('an invalid body throws BadRequestError with an integer code', async () => {
    await expectApiError(sdk.client.responses.create({ model: FAMILIES.openai.model, input: QUESTION, temperature: 7 }), BadRequestError, 400)
  })
})

// ---------------------------------------------------------------------------------------------
// Keep-alive comments before the first event (a committed stream).
// ---------------------------------------------------------------------------------------------

describe('openai SDK: a stream committed before content', () => {
  let committed: Tapped

  beforeAll(async () => {
    committed = sdkClient(await startGateway({ streamCommitAfterMs: 0, keepAliveMs: 10 }))
  })

  it('skips `: PROCESSING` comments and still sees response.created first', async () => {
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    overrides.anthropic = () => ({ ...sseFixture('anthropic', 'text.sse'), pause: { after: 0, until: released } })
    // The upstream answers only once the SDK has read a keep-alive comment.
    void committed.nextChunkMatching(/^: PROCESSING$/m).then(release)
    const { events, final } = await runStream(committed.client, params(FAMILIES.anthropic, { input: QUESTION }))
    expect(committed.bodies.at(-1)!.text.startsWith(': PROCESSING\n\n')).toBe(true)
    expectRawStream(committed.bodies.at(-1))
    expectCanonicalStream(events)
    expect(textOf(final)).toContain(FAMILIES.anthropic.textPhrase)
  })

  it('reports an upstream 429 in-band as response.failed, which the SDK iterates without throwing', async () => {
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    overrides.gemini = async () => {
      await released
      return jsonFixture('gemini', 'error-429.json', 429)
    }
    void committed.nextChunkMatching(/^: PROCESSING$/m).then(release)
    const stream = await committed.client.responses.create(streamingParams(FAMILIES.gemini, { input: QUESTION }))
    const events = await collect(stream)
    expect(events.map((event) => event.type)).toEqual(['response.created', 'response.in_progress', 'response.failed'])
    const failed = events[2] as Extract<ResponseStreamEvent, { type: 'response.failed' }>
    expect(failed.response.status).toBe('failed')
    expect(failed.response.error).toMatchObject({ code: 'rate_limit_exceeded', message: expect.any(String) })
    expect(committed.bodies.at(-1)!.text.endsWith('data: [DONE]\n\n')).toBe(true)
  })
})
