/**
 * The default load balancing through the gateway (docs/decisions.md, "Load balancing"): the weighted pick leads a
 * model's attempts, recent failures are set aside, free endpoints, BYOK keys and `allow_fallbacks` keep their rules,
 * and a conversation without a session stays on the endpoint that served it.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { createTestGateway, scriptedProvider, type ScriptedReply, type TestGateway, type TestGatewayOptions } from '../../../src/testing'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import type { RecordedRequest, UpstreamReply } from '../../helpers/upstream'

const MODEL = 'test/balanced'
/**
 * Groq at p, Together at 2p: the weighted pick gives them 4/5 and 1/5. Mistral, cheapest of all, has no key here: no
 * attempt can reach it, so it takes no part in the pick.
 */
const BALANCED: ModelEntry[] = [
  {
    slug: MODEL,
    name: 'Balanced test model',
    endpoints: [
      { provider: 'mistral', model: 'mistral-model', contextLength: 8192, pricing: { prompt: 0.0000005, completion: 0.000001 } },
      { provider: 'groq', model: 'groq-model', contextLength: 8192, pricing: { prompt: 0.000001, completion: 0.000002 } },
      { provider: 'together', model: 'together-model', contextLength: 8192, pricing: { prompt: 0.000002, completion: 0.000004 } },
    ],
  },
]
/** Rolls of the random source under the cheaper endpoint's share (4/5: Groq, OpenAI) and over it (Together, Mistral). */
const PICKS_CHEAPER = 0.1
const PICKS_DEARER = 0.9

const failing: ScriptedReply = [{ type: 'http_error', status: 503 }]

/** A scripted provider whose answer the test switches. */
const switchable = () => {
  let reply: ScriptedReply = 'ok'
  const provider = scriptedProvider({ reply: (call) => (typeof reply === 'function' ? reply(call) : reply) })
  return Object.assign(provider, { answer: (next: ScriptedReply) => void (reply = next) })
}

let harness: TestGateway | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

let roll = 0
let time = Date.parse('2026-03-01T12:00:00Z')
const advance = (seconds: number) => void (time += seconds * 1000)

/** A gateway on the default balancing (the testing kit pins `cheapest`; these tests unpin it) with a set roll. */
const setUp = async (options: TestGatewayOptions = {}) => {
  const groq = switchable()
  const together = switchable()
  harness = await createTestGateway({
    providers: { groq, together },
    models: BALANCED,
    routing: { balancing: 'weighted', random: () => roll },
    now: () => new Date(time),
    ...options,
  })
  return { groq, together }
}

let asked = 0
/** Asks with `roll`; each question opens a conversation of its own unless `body.input` says otherwise. */
const ask = async (pick: number, body: Record<string, unknown> = {}) => {
  roll = pick
  asked++
  const response = await harness!.responses({ model: MODEL, input: `question ${asked}`, ...body }, { headers: { 'x-service-metadata': 'enabled' } })
  const answer = await response.json()
  const metadata = answer.service_metadata
  const selected = metadata?.endpoints.available.find((endpoint: { selected: boolean }) => endpoint.selected)
  return { status: response.status, provider: selected?.provider as string | undefined, metadata }
}

const order = (metadata: { endpoints: { available: Array<{ provider: string }> } }) => metadata.endpoints.available.map((endpoint) => endpoint.provider)

describe('default load balancing', () => {
  it('leads with the weighted pick among the cheapest endpoints, the rest following in price order', async () => {
    await setUp()
    const dear = await ask(PICKS_DEARER)
    expect(dear.provider).toBe('together')
    expect(dear.metadata).toMatchObject({ weighted_pick: true, attempt: 1 })
    expect(dear.metadata.endpoints.available).toEqual([
      { model: MODEL, provider: 'together', selected: true, share: 0.2 },
      { model: MODEL, provider: 'groq', selected: false, share: 0.8 },
    ])
    const cheap = await ask(PICKS_CHEAPER)
    expect(cheap.provider).toBe('groq')
    expect(order(cheap.metadata)).toEqual(['groq', 'together'])
  })

  it('is off where the caller orders the endpoints: provider.sort, provider.order, :floor, a workspace sort', async () => {
    await setUp()
    for (const body of [{ provider: { sort: 'price' } }, { model: `${MODEL}:floor` }, { route: 'fallback' }]) {
      const sorted = await ask(PICKS_DEARER, body)
      expect(sorted.provider).toBe('groq')
      expect(sorted.metadata.weighted_pick).toBeUndefined()
      expect(sorted.metadata.endpoints.available[0]).not.toHaveProperty('share')
    }
    expect((await ask(PICKS_CHEAPER, { provider: { order: ['together'] } })).provider).toBe('together')
    const patched = await harness!.call('PATCH', `/workspaces/${harness!.defaultWorkspaceId}`, { json: { default_provider_sort: 'latency' } })
    expect(patched.status).toBe(200)
    // Unmeasured endpoints keep catalog order under a latency sort.
    expect((await ask(PICKS_DEARER)).metadata.weighted_pick).toBeUndefined()
    // Back to the default `price`: balanced again, as OpenRouter's default is.
    await harness!.call('PATCH', `/workspaces/${harness!.defaultWorkspaceId}`, { json: { default_provider_sort: null } })
    expect((await ask(PICKS_DEARER)).provider).toBe('together')
  })

  it('sets aside an endpoint whose upstream failed in the last 30 s, and takes it back after', async () => {
    const { groq } = await setUp()
    groq.answer(failing)
    const failed = await ask(PICKS_CHEAPER)
    expect(failed.provider).toBe('together')
    expect(failed.metadata).toMatchObject({ attempt: 2, weighted_pick: false })
    groq.answer('ok')
    const callsBefore = groq.calls.length
    advance(29)
    // Groq failed 29 s ago: Together alone is a candidate, and Groq comes last.
    const setAside = await ask(PICKS_CHEAPER)
    expect(setAside.provider).toBe('together')
    expect(setAside.metadata.endpoints.available).toEqual([
      { model: MODEL, provider: 'together', selected: true, share: 1 },
      { model: MODEL, provider: 'groq', selected: false },
    ])
    expect(groq.calls.length).toBe(callsBefore)
    advance(1)
    expect((await ask(PICKS_CHEAPER)).provider).toBe('groq')
  })

  it('shares the pick among free endpoints only; a paid one is a fallback', async () => {
    await setUp({ prices: [{ model: MODEL, provider: 'groq', pricing: { prompt: 0, completion: 0 } }] })
    const free = await ask(0.999)
    expect(free.provider).toBe('groq')
    expect(free.metadata.endpoints.available).toEqual([
      { model: MODEL, provider: 'groq', selected: true, share: 1 },
      { model: MODEL, provider: 'together', selected: false },
    ])
  })

  it("keeps the caller's prioritized BYOK keys first, whichever endpoint the pick chose", async () => {
    await setUp()
    const added = await harness!.call('POST', '/byok', { json: { provider: 'together', key: 'byok-together-0123456789abcdef' } })
    expect(added.status).toBe(200)
    const byok = await ask(PICKS_CHEAPER)
    expect(byok.provider).toBe('together')
    expect(byok.metadata).toMatchObject({ is_byok: true, weighted_pick: false })
    // The key's endpoint first, then the shared ones with the pick leading.
    expect(order(byok.metadata)).toEqual(['together', 'groq', 'together'])
  })

  it('with allow_fallbacks false, tries the weighted pick alone', async () => {
    const { groq, together } = await setUp()
    together.answer(failing)
    const refused = await ask(PICKS_DEARER, { provider: { allow_fallbacks: false } })
    expect(refused.status).toBeGreaterThanOrEqual(500)
    expect(together.calls).toHaveLength(1)
    expect(groq.calls).toHaveLength(0)
    // Together just failed, so it is set aside: Groq is the only candidate and the only attempt.
    const alone = await ask(PICKS_DEARER, { provider: { allow_fallbacks: false } })
    expect(alone.provider).toBe('groq')
    expect(alone.metadata.endpoints.available).toEqual([{ model: MODEL, provider: 'groq', selected: true, share: 1 }])
    advance(30)
    const picked = await ask(PICKS_CHEAPER, { provider: { allow_fallbacks: false } })
    expect(picked.metadata.endpoints.available).toEqual([{ model: MODEL, provider: 'groq', selected: true, share: 0.8 }])
  })
})

describe('sticky routing by conversation', () => {
  const opening = [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Name a prime.' },
  ]
  const later = [...opening, { role: 'assistant', content: '7' }, { role: 'user', content: 'Another.' }]

  it('keeps a conversation on the endpoint that served it, even where the pick would go elsewhere', async () => {
    await setUp()
    const first = await ask(PICKS_DEARER, { input: opening })
    expect(first.provider).toBe('together')
    expect(first.metadata).toMatchObject({ sticky: false, sticky_by: 'conversation' })
    const held = await ask(PICKS_CHEAPER, { input: later })
    expect(held.provider).toBe('together')
    expect(held.metadata).toMatchObject({ sticky: true, sticky_by: 'conversation', weighted_pick: false, attempt: 1 })
    // Another opening, or another end user, is another conversation: balanced as usual.
    expect((await ask(PICKS_CHEAPER, { input: [opening[0], { role: 'user', content: 'Name a square.' }] })).provider).toBe('groq')
    expect((await ask(PICKS_CHEAPER, { input: later, user: 'someone-else' })).provider).toBe('groq')
    // The caller's own order wins, and says nothing of stickiness.
    const ordered = await ask(PICKS_CHEAPER, { input: later, provider: { sort: 'price' } })
    expect(ordered.provider).toBe('groq')
    expect(ordered.metadata.sticky).toBeUndefined()
  })

  it('lets go of an endpoint that failed, and an explicit session id wins over the conversation', async () => {
    const { together } = await setUp()
    expect((await ask(PICKS_DEARER, { input: opening })).provider).toBe('together')
    together.answer(failing)
    // Another request finds Together failing: set aside for 30 s, so the conversation moves to Groq.
    expect((await ask(PICKS_DEARER)).provider).toBe('groq')
    together.answer('ok')
    const released = await ask(PICKS_DEARER, { input: later })
    expect(released.provider).toBe('groq')
    expect(released.metadata).toMatchObject({ sticky: false, sticky_by: 'conversation' })
    advance(60)
    expect((await ask(PICKS_DEARER, { input: later })).provider).toBe('groq')
    // A session names its own stickiness: the conversation's endpoint is not consulted.
    const session = await ask(PICKS_DEARER, { input: later, session_id: 'session-1' })
    expect(session.provider).toBe('together')
    expect(session.metadata).toMatchObject({ sticky: false, sticky_by: 'session', weighted_pick: true })
  })
})

describe('embeddings', () => {
  /** One embedding model on OpenAI at p and Mistral at 2p. */
  const EMBEDDER: ModelEntry = {
    slug: 'test/embedder',
    name: 'Balanced embedder',
    outputModalities: ['embeddings'],
    endpoints: [
      { provider: 'openai', model: 'embed-a', contextLength: 8192, pricing: { prompt: 2e-8, completion: 0 } },
      { provider: 'mistral', model: 'embed-b', contextLength: 8192, pricing: { prompt: 4e-8, completion: 0 } },
    ],
  }
  const vectors = (request: RecordedRequest): UpstreamReply => ({
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      object: 'list',
      data: (request.json.input as unknown[]).map((_, index) => ({ object: 'embedding', index, embedding: [index, 0.5] })),
      model: request.json.model,
      usage: { prompt_tokens: 3, total_tokens: 3 },
    }),
  })
  let embeddings: ResponsesHarness | undefined
  afterEach(async () => {
    await embeddings?.close()
    embeddings = undefined
  })

  it('are balanced the same way', async () => {
    embeddings = await createResponsesHarness({ openai: {}, mistral: {} }, { models: [EMBEDDER], routing: { balancing: 'weighted', random: () => roll } })
    const { openai, mistral } = embeddings.upstreams
    openai!.setHandler(vectors)
    mistral!.setHandler(vectors)
    const embed = (pick: number) => {
      roll = pick
      return embeddings!.gateway.fetch(
        new Request('http://gateway.test/api/v1/embeddings', {
          method: 'POST',
          headers: { authorization: `Bearer ${embeddings!.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: EMBEDDER.slug, input: ['one line'] }),
        }),
      )
    }
    expect((await embed(PICKS_DEARER)).status).toBe(200)
    expect(mistral!.requests).toHaveLength(1)
    expect(openai!.requests).toHaveLength(0)
    expect((await embed(PICKS_CHEAPER)).status).toBe(200)
    expect(openai!.requests).toHaveLength(1)
  })
})
