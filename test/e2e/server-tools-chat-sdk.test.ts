/**
 * Server tools on `/chat/completions` through the official `openai` SDK (`chat.completions.create`, whole and
 * streamed) and on `/messages` through Anthropic's SDK, against a gateway on a real node:http server whose model is
 * a loopback Chat Completions upstream: it calls `service_datetime` first, then answers with the time it was given.
 */

import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import Anthropic from '@anthropic-ai/sdk'
import { OpenRouter } from '@openrouter/sdk'
import OpenAI from 'openai'
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { toNodeListener } from '../../src/adapters/node'
import { createTestGateway, type TestGateway } from '../../src/testing'
import { startUpstream, type RecordedRequest, type Upstream, type UpstreamReply } from '../helpers/upstream'

const NOW = new Date('2025-03-01T09:04:05Z')
const MODEL = 'local/chat'

let upstream: Upstream
let testGateway: TestGateway | undefined
let server: Server | undefined

const completion = (message: Record<string, unknown>, finishReason: string, usage: { prompt_tokens: number; completion_tokens: number }) => ({
  id: 'chatcmpl-local',
  object: 'chat.completion',
  created: 1740819845,
  model: 'chat-model',
  choices: [{ index: 0, message, finish_reason: finishReason }],
  usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
})

const sse = (chunks: unknown[]): UpstreamReply => ({
  headers: { 'content-type': 'text/event-stream' },
  chunks: [...chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`), 'data: [DONE]\n\n'],
})

const chunk = (delta: Record<string, unknown>, finishReason: string | null) => ({
  id: 'chatcmpl-local',
  object: 'chat.completion.chunk',
  created: 1740819845,
  model: 'chat-model',
  choices: [{ index: 0, delta, finish_reason: finishReason }],
})
const usageChunk = (prompt: number, completion: number) => ({ ...chunk({}, null), choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } })

const CALL = { id: 'call_time', type: 'function', function: { name: 'service_datetime', arguments: '{"timezone":"Europe/Paris"}' } }

/** Calls the datetime tool until it has its result, then answers with the time it read. */
const answer = (request: RecordedRequest): UpstreamReply => {
  const messages = request.json.messages as Array<{ role: string; content?: string }>
  const result = messages.find((message) => message.role === 'tool')
  const isStream = request.json.stream === true
  if (!result) {
    if (isStream) return sse([chunk({ role: 'assistant', tool_calls: [{ index: 0, ...CALL }] }, null), chunk({}, 'tool_calls'), usageChunk(40, 5)])
    return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(completion({ role: 'assistant', content: null, tool_calls: [CALL] }, 'tool_calls', { prompt_tokens: 40, completion_tokens: 5 })) }
  }
  const text = `It is ${JSON.parse(result.content!).datetime.slice(11, 16)} in Paris.`
  if (isStream) return sse([chunk({ role: 'assistant', content: text.slice(0, 6) }, null), chunk({ content: text.slice(6) }, null), chunk({}, 'stop'), usageChunk(60, 7)])
  return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(completion({ role: 'assistant', content: text }, 'stop', { prompt_tokens: 60, completion_tokens: 7 })) }
}

beforeAll(async () => {
  upstream = await startUpstream(answer)
})
afterAll(() => upstream.close())
afterEach(async () => {
  if (server) await new Promise((resolve) => server!.close(resolve))
  server = undefined
  await testGateway?.close()
  testGateway = undefined
})

const start = async (): Promise<OpenAI> => {
  testGateway = await createTestGateway({
    providers: { local: { api: 'openai-chat', baseURL: upstream.url, apiKey: 'sk-local-0123456789abcdef' } },
    models: [{ slug: MODEL, name: 'Local chat', endpoints: [{ provider: 'local', model: 'chat-model', contextLength: 32_000, pricing: { prompt: 0.000001, completion: 0.000002 } }] }],
    workspaceDefaults: { textModel: MODEL },
    now: () => NOW,
  })
  server = createServer(toNodeListener(testGateway.gateway))
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return new OpenAI({ baseURL: `http://127.0.0.1:${port}/api/v1`, apiKey: testGateway.regularKey, maxRetries: 0 })
}

// The gateway's own tool kind, which the SDK's types do not know.
const params = { model: MODEL, messages: [{ role: 'user', content: 'What time is it in Paris?' }], tools: [{ type: 'service:datetime' }] } as unknown as ChatCompletionCreateParamsNonStreaming

describe('service:datetime through the openai SDK on /chat/completions', () => {
  it('chat.completions.create: the final message, no tool calls for the client, both turns in the usage', async () => {
    const client = await start()
    const before = upstream.requests.length
    const completion = await client.chat.completions.create(params)
    expect(completion.choices[0]!.message.content).toBe('It is 10:04 in Paris.')
    expect(completion.choices[0]!.message.tool_calls).toBeUndefined()
    expect(completion.choices[0]!.finish_reason).toBe('stop')
    expect(completion.usage).toMatchObject({ prompt_tokens: 100, completion_tokens: 12, total_tokens: 112 })
    const sent = upstream.requests.slice(before)
    expect(sent).toHaveLength(2)
    expect(sent[0]!.json.tools).toEqual([expect.objectContaining({ type: 'function', function: expect.objectContaining({ name: 'service_datetime' }) })])
    expect(sent[1]!.json.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_time', content: expect.stringContaining('"datetime":"2025-03-01T10:04:05+01:00"') })
  })

  it('chat.completions.create with stream: the SDK reads the answer text, then the usage of every turn', async () => {
    const client = await start()
    const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } })
    let text = ''
    let usage: OpenAI.CompletionUsage | null | undefined
    const finishReasons: string[] = []
    for await (const event of stream) {
      for (const choice of event.choices) {
        text += choice.delta.content ?? ''
        expect(choice.delta.tool_calls).toBeUndefined()
        if (choice.finish_reason) finishReasons.push(choice.finish_reason)
      }
      if (event.usage) usage = event.usage
    }
    expect(text).toBe('It is 10:04 in Paris.')
    expect(finishReasons).toEqual(['stop'])
    expect(usage).toMatchObject({ prompt_tokens: 100, completion_tokens: 12 })
  })
})

describe('service:datetime through @openrouter/sdk on /chat/completions', () => {
  const openRouterFor = (client: OpenAI) => new OpenRouter({ serverURL: client.baseURL, apiKey: testGateway!.regularKey, retryConfig: { strategy: 'none' }, timeoutMs: 30_000 })
  // The SDK sends OpenRouter's name of the tool, which the gateway takes as `service:datetime`.
  const chatRequest = { model: MODEL, messages: [{ role: 'user' as const, content: 'What time is it in Paris?' }], tools: [{ type: 'openrouter:datetime' as const }] }

  it('chat.send, JSON: the usage carries server_tool_use_details, as on every server-tool run', async () => {
    const result = await openRouterFor(await start()).chat.send({ chatRequest: { ...chatRequest, stream: false } })
    if (Symbol.asyncIterator in result) throw new Error('expected a completion, got a stream')
    expect(result.choices[0]!.message.content).toBe('It is 10:04 in Paris.')
    expect(result.usage).toMatchObject({ promptTokens: 100, completionTokens: 12, serverToolUseDetails: { toolCallsRequested: 1, toolCallsExecuted: 1, webSearchRequests: 0 } })
  })

  it('chat.send, streamed: the usage chunk carries server_tool_use_details too', async () => {
    const result = await openRouterFor(await start()).chat.send({ chatRequest: { ...chatRequest, stream: true, streamOptions: { includeUsage: true } } })
    if (!(Symbol.asyncIterator in result)) throw new Error('expected a stream, got a completion')
    let usage: unknown
    for await (const chunk of result) if (chunk.usage) usage = chunk.usage
    expect(usage).toMatchObject({ serverToolUseDetails: { toolCallsRequested: 1, toolCallsExecuted: 1 } })
  })
})

describe('service:datetime through the Anthropic SDK on /messages', () => {
  const anthropicFor = (client: OpenAI) => new Anthropic({ baseURL: client.baseURL.replace(/\/v1$/, ''), apiKey: testGateway!.regularKey, maxRetries: 0, timeout: 30_000 })
  // The gateway's own tool kind, which the SDK's types do not know.
  const body = { model: MODEL, max_tokens: 256, messages: [{ role: 'user' as const, content: 'What time is it in Paris?' }], tools: [{ type: 'service:datetime' }] as never }

  it('messages.create: the answer as text, no tool_use for the client, both turns in the usage', async () => {
    const message = await anthropicFor(await start()).messages.create(body)
    expect(message.content).toEqual([{ type: 'text', text: 'It is 10:04 in Paris.' }])
    expect(message.stop_reason).toBe('end_turn')
    expect(message.usage).toMatchObject({ input_tokens: 100, output_tokens: 12 })
  })

  it('messages.stream: finalMessage() holds the answer', async () => {
    const message = await anthropicFor(await start()).messages.stream(body).finalMessage()
    expect(message.content).toEqual([{ type: 'text', text: 'It is 10:04 in Paris.' }])
    expect(message.usage).toMatchObject({ output_tokens: 12 })
  })
})
