/**
 * Request fields of the three inference routes that used to be dropped: each now takes effect or is a 400 naming
 * it. `service_tier` is forwarded where the adapter sends tiers and refused where none can; `trace` is kept from
 * /chat/completions and /messages as from /responses; Chat Completions' `verbosity` and `web_search_options`
 * act, its `prediction` and `store: true` are refused; /responses takes `transforms` and refuses `response_format`;
 * /messages refuses `context_management`.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture, type RecordedRequest } from '../../helpers/upstream'
import { TEST_PRICING } from '../../helpers/models'

const CHAT_ONLY: ModelEntry[] = [
  { slug: 'test/chat', name: 'Chat', endpoints: [{ provider: 'alpha', model: 'alpha-model', contextLength: 8192, pricing: TEST_PRICING }] },
]

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const start = async () => {
  harness = await createResponsesHarness({ openai: {}, alpha: { api: 'openai-chat' } }, { models: CHAT_ONLY })
  const seen: Record<string, RecordedRequest[]> = { openai: [], alpha: [] }
  harness.upstreams.openai!.setHandler((request) => {
    seen.openai!.push(request)
    return jsonFixture('openai', 'text.json')
  })
  harness.upstreams.alpha!.setHandler((request) => {
    seen.alpha!.push(request)
    return jsonFixture('openai-chat', 'text.json')
  })
  return seen
}

const send = async (path: string, body: unknown) => {
  const response = await harness!.gateway.fetch(
    new Request(`http://gateway.test/api/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness!.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  )
  return { status: response.status, body: await response.json() }
}

const chat = (body: Record<string, unknown>) => send('/chat/completions', { messages: [{ role: 'user', content: 'hi' }], ...body })

describe('service_tier', () => {
  it('is forwarded from /chat/completions and /responses to a provider with tiers, fast as priority', async () => {
    const seen = await start()
    expect((await chat({ model: 'openai/gpt-4.1-mini', service_tier: 'flex' })).status).toBe(200)
    expect(seen.openai!.at(-1)!.json.service_tier).toBe('flex')
    const answer = await send('/responses', { model: 'openai/gpt-4.1-mini', input: 'hi', service_tier: 'fast' })
    expect(answer.status).toBe(200)
    expect(seen.openai!.at(-1)!.json.service_tier).toBe('priority')
    // The answer names the tier the upstream says served it (this fixture's `default`), not the one asked for.
    expect(answer.body.service_tier).toBe('default')
  })

  it('is refused, naming it, where no endpoint can serve the tier', async () => {
    const seen = await start()
    const refused = await chat({ model: 'test/chat', service_tier: 'flex' })
    expect(refused.status).toBe(400)
    expect(refused.body.error.message).toBe('body.service_tier ("flex"): not supported by any endpoint of test/chat')
    const responses = await send('/responses', { model: 'test/chat', input: 'hi', service_tier: 'priority' })
    expect(responses.status).toBe(400)
    expect(seen.alpha).toHaveLength(0)
    // auto and default ask nothing of the provider.
    expect((await chat({ model: 'test/chat', service_tier: 'default' })).status).toBe(200)
  })
})

describe('trace', () => {
  it('is kept in the usage ledger from /chat/completions and /messages', async () => {
    await start()
    const trace = { trace_id: 'trace-1', span_name: 'checkout' }
    const answer = await chat({ model: 'test/chat', trace })
    expect(answer.status).toBe(200)
    const generation = await harness!.gateway.fetch(
      new Request(`http://gateway.test/api/v1/generation?id=${answer.body.id}`, { headers: { authorization: `Bearer ${harness!.key}` } }),
    )
    expect((await generation.json()).data.trace).toEqual(trace)
  })
})

describe('Chat Completions fields', () => {
  it('verbosity is text.verbosity, web_search_options the web plugin', async () => {
    const seen = await start()
    expect((await chat({ model: 'openai/gpt-4.1-mini', verbosity: 'low' })).status).toBe(200)
    expect(seen.openai!.at(-1)!.json.text.verbosity).toBe('low')
    // No search engine is configured here: the web plugin refuses, as it would when asked for by name.
    const search = await chat({ model: 'test/chat', web_search_options: { user_location: { type: 'approximate', approximate: { city: 'Paris' } } } })
    expect(search.status).toBe(400)
    expect(search.body.error.message).toContain('"web" plugin needs a search engine')
  })

  it.each([
    [{ prediction: { type: 'content', content: 'x' } }, 'body.prediction: is not supported: predicted outputs are not sent to any provider through this gateway'],
    [{ store: true }, 'body.store: must be false: completions are not stored'],
    [{ web_search_options: { search_context_size: 'high' } }, 'body.web_search_options.search_context_size: is not supported: the web plugin sets no search context size; use plugins: [{"id": "web", "max_results": …}]'],
  ])('%j is a 400 naming it', async (field, message) => {
    const seen = await start()
    const answer = await chat({ model: 'test/chat', ...field })
    expect(answer.status).toBe(400)
    expect(answer.body.error.message).toBe(message)
    expect(seen.alpha).toHaveLength(0)
  })
})

describe('/responses and /messages fields', () => {
  it('/responses takes transforms and refuses response_format', async () => {
    await start()
    expect((await send('/responses', { model: 'test/chat', input: 'hi', transforms: ['middle-out'] })).status).toBe(200)
    expect((await send('/responses', { model: 'test/chat', input: 'hi', transforms: ['other'] })).status).toBe(400)
    const refused = await send('/responses', { model: 'test/chat', input: 'hi', response_format: { type: 'json_object' } })
    expect(refused.status).toBe(400)
    expect(refused.body.error.message).toBe('body.response_format: is not a /responses field: send text.format')
  })

  it('/messages sends standard_only to Anthropic as it was asked', async () => {
    harness = await createResponsesHarness({ anthropic: {} })
    const seen: RecordedRequest[] = []
    harness.upstreams.anthropic!.setHandler((request) => {
      seen.push(request)
      return jsonFixture('anthropic', 'text.json')
    })
    const base = { model: 'anthropic/claude-sonnet-4.5', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }
    expect((await send('/messages', { ...base, service_tier: 'standard_only' })).status).toBe(200)
    expect(seen.at(-1)!.json.service_tier).toBe('standard_only')
    expect((await send('/messages', { ...base, service_tier: 'auto' })).status).toBe(200)
    expect(seen.at(-1)!.json.service_tier).toBeUndefined()
  })

  it('/messages refuses context_management and takes service_tier', async () => {
    await start()
    const base = { model: 'test/chat', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }
    const refused = await send('/messages', { ...base, context_management: { edits: [] } })
    expect(refused.status).toBe(400)
    expect(refused.body.error.message).toContain('body.context_management: is not supported')
    expect((await send('/messages', { ...base, service_tier: 'standard_only' })).status).toBe(200)
    expect((await send('/messages', { ...base, service_tier: 'priority' })).status).toBe(400)
  })
})
