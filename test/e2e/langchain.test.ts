/**
 * LangChain's OpenAI chat model (`@langchain/openai` `ChatOpenAI`), pointed at the gateway as LangChain users point it
 * at OpenRouter: over Chat Completions for every provider family, and over the Responses API
 * (`useResponsesApi`). LangChain sends fields of its own choosing (`stream_options`, `n`, tool `strict`…); each must
 * take effect or be refused by name, so a plain invoke, a stream and a tool round trip are served without a 400, and
 * the answers reach LangChain's message objects whole (text, tool calls, token usage).
 */

import { AIMessage, HumanMessage, ToolMessage, type AIMessageChunk, type BaseMessage } from '@langchain/core/messages'
import { ChatOpenAI, type ChatOpenAIFields } from '@langchain/openai'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createSdkHarness, FAMILIES, FAMILY_IDS, WEATHER_PARAMETERS, type FamilyId } from '../helpers/sdk-gateway'

const harness = createSdkHarness()
let url: string
let key: string

beforeAll(async () => {
  await harness.start()
  ;({ url, key } = await harness.startGateway())
})

afterEach(() => harness.clearOverrides())

afterAll(() => harness.close())

const WEATHER_TOOL = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Get the current weather for a location.', parameters: WEATHER_PARAMETERS },
}

const chatModel = (id: FamilyId, fields: ChatOpenAIFields = {}) =>
  new ChatOpenAI({
    model: FAMILIES[id].model,
    apiKey: key,
    configuration: { baseURL: url },
    maxRetries: 0,
    timeout: 30_000,
    // Gateway-only routing fields travel as LangChain's extra body fields.
    modelKwargs: FAMILIES[id].extra,
    ...fields,
  })

const textOf = (message: BaseMessage) => (typeof message.content === 'string' ? message.content : message.content.map((part) => ('text' in part ? part.text : '')).join(''))

const collect = async (stream: AsyncIterable<AIMessageChunk>): Promise<AIMessageChunk> => {
  let whole: AIMessageChunk | undefined
  for await (const chunk of stream) whole = whole ? whole.concat(chunk) : chunk
  expect(whole).toBeDefined()
  return whole!
}

/** A tool round trip: the model asks for `get_weather` (once or more), gets the answers, and says what the weather is. */
const toolRoundTrip = async (model: ChatOpenAI, id: FamilyId) => {
  const withTools = model.bindTools([WEATHER_TOOL])
  const question = new HumanMessage('What is the weather like in Paris right now?')
  const call = await withTools.invoke([question])
  const calls = call.tool_calls ?? []
  expect(calls.length).toBeGreaterThan(0)
  for (const toolCall of calls) {
    expect(toolCall.name).toBe('get_weather')
    // Each fixture's model fills the arguments its own way (`location` or `city`): an object naming a place is what matters.
    expect(toolCall.args.location ?? toolCall.args.city).toEqual(expect.any(String))
  }
  const results = calls.map((toolCall) => new ToolMessage({ tool_call_id: toolCall.id!, content: JSON.stringify({ temperature: 22, condition: 'sunny' }) }))
  const answer = await withTools.invoke([question, new AIMessage({ content: call.content, tool_calls: calls }), ...results])
  expect(textOf(answer)).toContain(FAMILIES[id].toolResultPhrase)
}

describe.each(FAMILY_IDS)('LangChain ChatOpenAI (Chat Completions) → %s family', (id: FamilyId) => {
  it('invokes: the answer and its token usage reach the AIMessage', async () => {
    const answer = await chatModel(id).invoke([new HumanMessage('What is the capital of France?')])
    expect(textOf(answer)).toContain(FAMILIES[id].textPhrase)
    expect(answer.usage_metadata?.input_tokens).toBeGreaterThan(0)
    expect(answer.usage_metadata?.output_tokens).toBeGreaterThan(0)
    expect(answer.response_metadata.model_name ?? answer.response_metadata.model).toBeTruthy()
  })

  it('streams with usage (LangChain asks for stream_options.include_usage)', async () => {
    const whole = await collect(await chatModel(id, { streamUsage: true }).stream([new HumanMessage('What is the capital of France?')]))
    expect(textOf(whole)).toContain(FAMILIES[id].textPhrase)
    expect(whole.usage_metadata?.output_tokens).toBeGreaterThan(0)
    expect(FAMILIES[id].isStream(harness.lastRequest(id))).toBe(true)
  })

  it('runs a tool round trip with bound tools', async () => {
    await toolRoundTrip(chatModel(id), id)
  })
})

describe('LangChain ChatOpenAI (Responses API) → openai family', () => {
  const responsesModel = (fields: ChatOpenAIFields = {}) => chatModel('openai', { useResponsesApi: true, ...fields })

  it('invokes over /responses', async () => {
    const answer = await responsesModel().invoke([new HumanMessage('What is the capital of France?')])
    expect(textOf(answer)).toContain(FAMILIES.openai.textPhrase)
    expect(answer.usage_metadata?.total_tokens).toBeGreaterThan(0)
    // Reached the OpenAI family through the Responses wire, as LangChain sent it.
    expect(harness.lastRequest('openai').json.input).toBeDefined()
  })

  it('streams over /responses', async () => {
    const whole = await collect(await responsesModel().stream([new HumanMessage('What is the capital of France?')]))
    expect(textOf(whole)).toContain(FAMILIES.openai.textPhrase)
  })

  it('runs a tool round trip over /responses', async () => {
    await toolRoundTrip(responsesModel(), 'openai')
  })
})
