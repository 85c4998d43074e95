/**
 * The response cache (docs/decisions.md, Response cache) through the clients people call it with: the official
 * `openai` SDK (`responses.create`, whole and streamed, `chat.completions` streamed) and `@openrouter/sdk`
 * (`chat.send` streamed, whose schemas judge every chunk), and `@anthropic-ai/sdk` on `/messages`, against a gateway on a real server whose upstream replays
 * recorded fixtures on loopback and counts what reaches it.
 */

import Anthropic from '@anthropic-ai/sdk'
import { OpenRouter } from '@openrouter/sdk'
import type { ChatStreamChunk } from '@openrouter/sdk/models'
import OpenAI, { BadRequestError } from 'openai'
import type { ResponseStreamEvent } from 'openai/resources/responses/responses'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSdkHarness, FAMILIES, type RunningGateway } from '../helpers/sdk-gateway'
import { assertValidEventSequence } from '../helpers/stream-events'

const harness = createSdkHarness()
const family = FAMILIES.openai
const CACHE = { headers: { 'x-modelgate-cache-ttl': '300' } }
let clock = Date.parse('2026-03-01T10:00:00Z')
let running: RunningGateway
let managementKey: string

const upstreamCalls = () => harness.upstreams.openai.requests.length
const openaiClient = (apiKey = running.key) => new OpenAI({ baseURL: running.url, apiKey, maxRetries: 0, timeout: 30_000 })
const openRouterClient = (apiKey = running.key) => new OpenRouter({ serverURL: running.url, apiKey, retryConfig: { strategy: 'none' }, timeoutMs: 30_000 })

const manage = async (method: string, path: string, body?: unknown) => {
  const response = await fetch(`${running.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${managementKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  expect(response.status, await response.clone().text()).toBeLessThan(300)
  return response.json() as Promise<any>
}

/** A fresh question per test, so each starts from a miss. */
let questions = 0
const question = () => `What is the capital of France? (${++questions})`

beforeAll(async () => {
  await harness.start()
  running = await harness.startGateway({ now: () => new Date(clock) })
  managementKey = (await running.gateway.admin.createKey({ kind: 'management', name: 'cache tests' })).key
})

afterAll(() => harness.close())

describe('the response cache through the openai SDK', () => {
  it('answers a repeated request from the cache: the same output, no upstream call, a hit the usage and headers say', async () => {
    const client = openaiClient()
    const input = question()
    const first = await client.responses.create({ model: family.model, input }, CACHE).withResponse()
    expect(first.response.headers.get('x-modelgate-cache')).toBe('miss')
    const calls = upstreamCalls()
    clock += 7_000
    const second = await client.responses.create({ model: family.model, input }, CACHE).withResponse()
    expect(upstreamCalls()).toBe(calls)
    expect(second.response.headers.get('x-modelgate-cache')).toBe('hit')
    expect(second.response.headers.get('x-modelgate-cache-age')).toBe('7')
    expect(second.data.output_text).toBe(first.data.output_text)
    expect(second.data.output_text).toContain(family.textPhrase)
    expect(second.data.id).not.toBe(first.data.id)
    expect(second.data.output[0]!.id).not.toBe(first.data.output[0]!.id)
    expect(second.data.usage).toMatchObject({ input_tokens: first.data.usage!.input_tokens, output_tokens: first.data.usage!.output_tokens, cost: 0, is_cache_hit: true })
    expect((first.data.usage as unknown as Record<string, unknown>).is_cache_hit).toBeUndefined()

    // The service metadata a caller asks for says where the answer came from, not how a run it did not make went.
    const described = await client.responses.create({ model: family.model, input }, { headers: { ...CACHE.headers, 'x-service-metadata': 'enabled' } })
    expect((described as unknown as { service_metadata: unknown }).service_metadata).toEqual({ response_cache: { status: 'hit', age_seconds: 7 } })
    expect(upstreamCalls()).toBe(calls)
  })

  it('serves a streamed request from a whole answer as a complete stream the SDK assembles', async () => {
    const client = openaiClient()
    const input = question()
    const whole = await client.responses.create({ model: family.model, input }, CACHE)
    const calls = upstreamCalls()
    const { data: stream, response } = await client.responses.create({ model: family.model, input, stream: true }, CACHE).withResponse()
    expect(response.headers.get('x-modelgate-cache')).toBe('hit')
    const events: ResponseStreamEvent[] = []
    for await (const event of stream) events.push(event)
    assertValidEventSequence(events as never)
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index))
    const completed = events.at(-1)
    if (completed?.type !== 'response.completed') throw new Error(`ended with ${completed?.type}`)
    expect(completed.response.output).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'message' })]))
    expect(completed.response.id).not.toBe(whole.id)
    expect(completed.response.usage).toMatchObject({ cost: 0, is_cache_hit: true })
    const text = events.filter((event) => event.type === 'response.output_text.delta').map((event) => (event as { delta: string }).delta).join('')
    expect(text).toBe(whole.output_text)
    expect(upstreamCalls()).toBe(calls)

    // responses.stream() reads the same replay into its final response.
    const helper = client.responses.stream({ model: family.model, input }, CACHE)
    const final = await helper.finalResponse()
    expect(final.output).toEqual([expect.objectContaining({ type: 'message', content: [expect.objectContaining({ type: 'output_text', text: whole.output_text })] })])
    expect(upstreamCalls()).toBe(calls)
  })

  it('fills the cache from a streamed miss once it completes', async () => {
    const client = openaiClient()
    const messages = [{ role: 'user' as const, content: question() }]
    const streamed = await client.chat.completions.create({ model: family.model, messages, stream: true }, CACHE)
    let text = ''
    for await (const chunk of streamed) text += chunk.choices[0]?.delta.content ?? ''
    const calls = upstreamCalls()
    const again = await client.chat.completions.create({ model: family.model, messages }, CACHE).withResponse()
    expect(again.response.headers.get('x-modelgate-cache')).toBe('hit')
    expect(again.data.choices[0]!.message.content).toBe(text)
    expect((again.data.usage as unknown as Record<string, unknown>).is_cache_hit).toBe(true)
    expect(upstreamCalls()).toBe(calls)
  })

  it('runs upstream again once the entry has expired', async () => {
    const client = openaiClient()
    const input = question()
    await client.responses.create({ model: family.model, input }, { headers: { 'x-modelgate-cache-ttl': '60' } })
    clock += 61_000
    const calls = upstreamCalls()
    const later = await client.responses.create({ model: family.model, input }, { headers: { 'x-modelgate-cache-ttl': '60' } }).withResponse()
    expect(later.response.headers.get('x-modelgate-cache')).toBe('miss')
    expect(upstreamCalls()).toBe(calls + 1)
  })

  it('bypasses the cache with a TTL of 0, and for a request that cannot be repeated', async () => {
    const client = openaiClient()
    const input = question()
    await client.responses.create({ model: family.model, input }, CACHE)
    const calls = upstreamCalls()
    const zero = await client.responses.create({ model: family.model, input }, { headers: { 'x-modelgate-cache-ttl': '0' } }).withResponse()
    expect(zero.response.headers.get('x-modelgate-cache')).toBe('bypass')
    expect(zero.response.headers.get('x-modelgate-cache-age')).toBeNull()
    expect(upstreamCalls()).toBe(calls + 1)
    // Echoing the upstream body is about this run: the request runs each time.
    const debug = await client.responses.create({ model: family.model, input, debug: { echo_upstream_body: true } } as never, CACHE).withResponse()
    expect(debug.response.headers.get('x-modelgate-cache')).toBe('bypass')
    expect(upstreamCalls()).toBe(calls + 2)
  })

  it('answers no cache header when nothing asked for the cache, and 400 naming the header for a bad TTL', async () => {
    const client = openaiClient()
    const plain = await client.responses.create({ model: family.model, input: question() }).withResponse()
    expect(plain.response.headers.get('x-modelgate-cache')).toBeNull()
    const failure = await client.responses.create({ model: family.model, input: 'hi' }, { headers: { 'x-modelgate-cache-ttl': 'soon' } }).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(BadRequestError)
    expect((failure as BadRequestError).message).toContain('x-modelgate-cache-ttl')
  })
})

describe('the response cache through @anthropic-ai/sdk', () => {
  it('answers a repeated /messages request from the cache, whole and streamed', async () => {
    // The SDK appends `/v1/messages` to its base URL.
    const client = new Anthropic({ baseURL: running.url.replace(/\/v1$/, ''), apiKey: running.key, maxRetries: 0, timeout: 30_000 })
    const messages = [{ role: 'user' as const, content: question() }]
    const first = await client.messages.create({ model: family.model, max_tokens: 256, messages }, CACHE)
    const calls = upstreamCalls()
    const { data: second, response } = await client.messages.create({ model: family.model, max_tokens: 256, messages }, CACHE).withResponse()
    expect(response.headers.get('x-modelgate-cache')).toBe('hit')
    expect(second.content).toEqual(first.content)
    expect(second.id).not.toBe(first.id)
    expect(second.usage).toMatchObject({ output_tokens: first.usage.output_tokens, is_cache_hit: true })
    const streamed = await client.messages.stream({ model: family.model, max_tokens: 256, messages }, CACHE).finalMessage()
    expect(streamed.content).toEqual(first.content)
    expect(upstreamCalls()).toBe(calls)
  })
})

describe('the response cache and workspaces', () => {
  it('never serves one workspace what another cached, and follows a key`s and a workspace`s cache setting', async () => {
    const input = question()
    await openaiClient().responses.create({ model: family.model, input }, CACHE)
    const other = await manage('POST', '/workspaces', { name: 'Other', slug: `other-${questions}`, cache: { ttl_seconds: 120 } })
    expect(other.data.cache).toEqual({ ttl_seconds: 120 })
    const { key } = await manage('POST', '/keys', { name: 'other workspace', workspace_id: other.data.id })
    const calls = upstreamCalls()
    // No header: the workspace's default turns the cache on, and its own entries are empty.
    const first = await openaiClient(key).responses.create({ model: family.model, input }).withResponse()
    expect(first.response.headers.get('x-modelgate-cache')).toBe('miss')
    expect(upstreamCalls()).toBe(calls + 1)
    const second = await openaiClient(key).responses.create({ model: family.model, input }).withResponse()
    expect(second.response.headers.get('x-modelgate-cache')).toBe('hit')
    expect(upstreamCalls()).toBe(calls + 1)

    // A key's own setting comes before its workspace's: 0 turns the cache off for it.
    const { key: uncached, data: keyData } = await manage('POST', '/keys', { name: 'no cache', workspace_id: other.data.id, cache: { ttl_seconds: 0 } })
    expect(keyData.cache).toEqual({ ttl_seconds: 0 })
    const bypassed = await openaiClient(uncached).responses.create({ model: family.model, input }).withResponse()
    expect(bypassed.response.headers.get('x-modelgate-cache')).toBe('bypass')

    // Clearing the workspace's cache leaves the next request a miss; the change is in the audit log.
    const cleared = await manage('DELETE', `/workspaces/${other.data.id}/response-cache`)
    expect(cleared.data).toEqual({ workspace_id: other.data.id, removed: 1 })
    const afterClear = await openaiClient(key).responses.create({ model: family.model, input }).withResponse()
    expect(afterClear.response.headers.get('x-modelgate-cache')).toBe('miss')
    const audit = await manage('GET', '/audit-log')
    expect(audit.data.map((entry: { action: string }) => entry.action)).toContain('workspace.clear_response_cache')
  })
})

describe('the response cache through @openrouter/sdk', () => {
  it('chat.send streams a hit its schema accepts, usage last, marked as a cache hit', async () => {
    const client = openRouterClient()
    const messages = [{ role: 'user' as const, content: question() }]
    const first = await client.chat.send({ chatRequest: { model: family.model, messages } }, CACHE)
    if (Symbol.asyncIterator in first) throw new Error('expected a chat result, got a stream')
    const calls = upstreamCalls()
    const result = await client.chat.send({ chatRequest: { model: family.model, messages, stream: true } }, CACHE)
    if (!(Symbol.asyncIterator in result)) throw new Error('expected a stream, got a chat result')
    const chunks: ChatStreamChunk[] = []
    for await (const chunk of result) chunks.push(chunk)
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe(first.choices[0]!.message.content)
    expect(chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.finishReason)).filter(Boolean)).toEqual(['stop'])
    expect(chunks.at(-1)!.usage).toMatchObject({ cost: 0 })
    expect(upstreamCalls()).toBe(calls)
  })

  it('records the hit in the usage ledger: no provider, no cost, its source generation, counted by /activity', async () => {
    const client = openaiClient()
    const input = question()
    const original = await client.responses.create({ model: family.model, input }, CACHE)
    const hit = await client.responses.create({ model: family.model, input }, CACHE)
    const generation = await manage('GET', `/generation?id=${hit.id}`)
    expect(generation.data).toMatchObject({ response_cache_source_id: original.id, total_cost: 0, provider_name: null, provider_responses: [] })
    const activity = await manage('GET', '/activity')
    const hits = activity.data.reduce((sum: number, row: { cache_hits: number }) => sum + row.cache_hits, 0)
    expect(hits).toBeGreaterThanOrEqual(1)
    const cachedRow = activity.data.find((row: { cache_hits: number; endpoint_id: string }) => row.cache_hits > 0)
    expect(cachedRow).toMatchObject({ endpoint_id: '', usage: 0 })
  })
})
