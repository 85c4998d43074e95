/**
 * OpenRouter's own SDK (`@openrouter/sdk`) against a gateway on a real node:http server, pointed at
 * it with `serverURL`. The SDK validates every Response and every stream event with its zod schemas:
 * a result that fails them throws, and a stream event that fails them comes through typed `UNKNOWN`.
 * So each call here is judged by OpenRouter's reading of the wire format, for an OpenAI Responses
 * upstream and for translated ones (Anthropic Messages, Chat Completions).
 */

import { OpenRouter } from '@openrouter/sdk'
import type { OpenResponsesResult, StreamEvents } from '@openrouter/sdk/models'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createSdkHarness, FAMILIES, WEATHER_PARAMETERS, type Family, type FamilyId } from '../helpers/sdk-gateway'
import { sseFixture } from '../helpers/upstream'

const harness = createSdkHarness()
let client: OpenRouter

beforeAll(async () => {
  await harness.start()
  const { url, key } = await harness.startGateway()
  client = new OpenRouter({ serverURL: url, apiKey: key, retryConfig: { strategy: 'none' }, timeoutMs: 30_000 })
})

afterEach(() => harness.clearOverrides())

afterAll(() => harness.close())

const QUESTION = 'What is the capital of France?'

const WEATHER_TOOL = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Get the current weather for a location.',
  parameters: WEATHER_PARAMETERS,
  strict: true,
}

const request = (family: Family, stream: boolean, fields: { input: string; tools?: Array<typeof WEATHER_TOOL> } = { input: QUESTION }) => ({
  responsesRequest: { model: family.model, stream, ...fields, ...family.extra },
})

/** `responses.send` without `stream`: the SDK hands back the parsed Response object. */
const sendWhole = async (family: Family): Promise<OpenResponsesResult> => {
  const result = await client.responses.send(request(family, false))
  if (Symbol.asyncIterator in result) throw new Error('expected a Response object, got a stream')
  return result
}

/** `responses.send` with `stream: true`: every event the SDK parsed, to the end of the stream. */
const sendStreamed = async (family: Family, fields?: Parameters<typeof request>[2]): Promise<StreamEvents[]> => {
  const result = await client.responses.send(request(family, true, fields))
  if (!(Symbol.asyncIterator in result)) throw new Error('expected a stream, got a Response object')
  const events: StreamEvents[] = []
  for await (const event of result) events.push(event)
  return events
}

const textOf = (response: OpenResponsesResult): string =>
  response.output
    .flatMap((item) => (item.type === 'message' ? item.content : []))
    .map((part) => (part.type === 'output_text' ? part.text : ''))
    .join('')

/** Events the SDK's schemas rejected, as their raw JSON (none is expected). */
const rejectedEvents = (events: StreamEvents[]) => events.flatMap((event) => ('isUnknown' in event && event.isUnknown ? [event.raw] : []))

const terminal = <T extends StreamEvents['type']>(events: StreamEvents[], type: T) => {
  const last = events.at(-1)
  expect(last?.type).toBe(type)
  return last as Extract<StreamEvents, { type: T }>
}

const FAMILY_IDS: FamilyId[] = ['openai', 'anthropic', 'chat']

describe.each(FAMILY_IDS)('@openrouter/sdk → %s family', (id) => {
  const family = FAMILIES[id]

  it('responses.send returns a Response its schema accepts', async () => {
    const response = await sendWhole(family)
    expect(response).toMatchObject({ object: 'response', status: 'completed', model: family.model, error: null })
    expect(response.errorType).toBeUndefined()
    expect(textOf(response)).toContain(family.textPhrase)
    expect(response.usage?.outputTokens).toBeGreaterThan(0)
    expect(response.usage?.cost).toBeGreaterThan(0)
  })

  it('responses.send with stream: true yields only events its schemas accept, ending at response.completed', async () => {
    const events = await sendStreamed(family)
    expect(rejectedEvents(events)).toEqual([])
    expect(events.slice(0, 2).map((event) => event.type)).toEqual(['response.created', 'response.in_progress'])
    const completed = terminal(events, 'response.completed')
    expect(completed.response).toMatchObject({ status: 'completed', model: family.model, error: null })
    const deltas = events.flatMap((event) => (event.type === 'response.output_text.delta' ? [event.delta] : [])).join('')
    expect(deltas).toContain(family.textPhrase)
    expect(textOf(completed.response)).toBe(deltas)
  })

  it('a streamed function call comes through as events its schemas accept, the call named on each', async () => {
    const events = await sendStreamed(family, { input: 'What is the weather like in Paris right now?', tools: [WEATHER_TOOL] })
    expect(rejectedEvents(events)).toEqual([])
    const argumentsDone = events.flatMap((event) => (event.type === 'response.function_call_arguments.done' ? [event] : []))
    expect(argumentsDone.length).toBeGreaterThan(0)
    for (const event of argumentsDone) expect(event.name).toBe('get_weather')
    const calls = terminal(events, 'response.completed').response.output.filter((item) => item.type === 'function_call')
    expect(calls.map((call) => call.arguments)).toEqual(argumentsDone.map((event) => event.arguments))
  })

  it('callModel(...).getText() reads the streamed answer', async () => {
    const text = await client.callModel({ model: family.model, input: QUESTION, ...family.extra }).getText()
    expect(text).toContain(family.textPhrase)
  })
})

describe('@openrouter/sdk: streams that end otherwise', () => {
  it('a response cut by max_output_tokens ends at a response.incomplete its schema accepts', async () => {
    harness.overrides.anthropic = () => sseFixture('anthropic', 'max-tokens.sse')
    const events = await sendStreamed(FAMILIES.anthropic)
    expect(rejectedEvents(events)).toEqual([])
    const incomplete = terminal(events, 'response.incomplete')
    expect(incomplete.response).toMatchObject({ status: 'incomplete', incompleteDetails: { reason: 'max_output_tokens' }, error: null })
  })

  it('a failure after content ends at a response.failed whose error_type it reads', async () => {
    harness.overrides.openai = () => sseFixture('openai', 'error-midstream.sse')
    const events = await sendStreamed(FAMILIES.openai)
    expect(rejectedEvents(events)).toEqual([])
    const failed = terminal(events, 'response.failed')
    expect(failed.response).toMatchObject({ status: 'failed', error: { code: expect.any(String), message: expect.any(String) } })
    expect(failed.response.errorType).toEqual(expect.any(String))
  })
})

describe('@openrouter/sdk: interns', () => {
  it('createIntern and listInterns page newest first to the end, passing next_cursor back as starting_after', async () => {
    const { gateway, url, key } = await harness.startGateway()
    await gateway.admin.setAccountFlags(undefined, { interns: true })
    const sdk = new OpenRouter({ serverURL: url, apiKey: key, retryConfig: { strategy: 'none' }, timeoutMs: 30_000 })
    const names = ['ada', 'bob', 'cy']
    for (const name of names) {
      const intern = await sdk.interns.createIntern({ createInternRequest: { name } })
      expect(intern).toMatchObject({ name, status: 'stopped' })
    }
    const seen: string[] = []
    let page = await sdk.interns.listInterns({ limit: 2 })
    seen.push(...page.data.map((intern) => intern.name))
    expect(page.hasMore).toBe(true)
    page = await sdk.interns.listInterns({ limit: 2, startingAfter: page.nextCursor! })
    seen.push(...page.data.map((intern) => intern.name))
    expect(page.hasMore).toBe(false)
    expect(page.nextCursor).toBeUndefined()
    expect(seen).toEqual(['cy', 'bob', 'ada'])
  })
})
