/**
 * BYOK key choice under each flag (spec: BYOK credential; docs/decisions.md, BYOK): prioritized keys in sort_order,
 * then the operator's shared key, then fallback keys; `is_byok_only`, `is_required`, the allowed_*
 * filters, `declared_zdr`, `disabled` and workspaces decide which keys are in the plan at all. The
 * upstream's `authorization` header says which key served.
 */

import { createHash } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { fixture, jsonFixture, sseFixture, type RecordedRequest, type Upstream, type UpstreamReply } from '../../helpers/upstream'

const MODEL = 'meta-llama/llama-3.3-70b-instruct'
const SHARED = 'sk-shared-groq-0123456789abcdef'
const SHARED_TOGETHER = 'sk-shared-together-0123456789abcdef'
// Not shaped like any known key prefix, so only verbatim redaction can hide them.
const KEY_A = 'byok-first-7f3a9c2e51d04b68a1'
const KEY_B = 'byok-second-2c91e6f0a8b34d17b2'
const KEY_C = 'byok-third-95d1c7a3e2f04b86c3'

/** Llama 3.3 70B on Groq: $0.59 / $0.79 per million; the fixture uses 14 input and 13 output tokens. */
const LIST_INPUT = 0.00000826
const LIST_OUTPUT = 0.00001027
const LIST = 0.00001853

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const ok = () => jsonFixture('openai-chat', 'text.json')
const unauthorized = () => jsonFixture('openai-chat', 'error-401.json', 401)
const rateLimited = () => jsonFixture('openai-chat', 'error-429.json', 429)
const serverError = () => jsonFixture('openai-chat', 'error-overloaded.json', 500)

const NAMES: Record<string, string> = {
  [`Bearer ${SHARED}`]: 'shared',
  [`Bearer ${SHARED_TOGETHER}`]: 'shared',
  [`Bearer ${KEY_A}`]: 'A',
  [`Bearer ${KEY_B}`]: 'B',
  [`Bearer ${KEY_C}`]: 'C',
}
const nameOf = (request: RecordedRequest) => NAMES[String(request.headers.authorization)] ?? String(request.headers.authorization)
/** Which keys the upstream saw, in order: 'A', 'B', 'C' or 'shared'. */
const keysSeen = (upstream: Upstream) => upstream.requests.map(nameOf)

/** Answers per key name; keys not listed succeed. */
const replyByKey = (upstream: Upstream, replies: Record<string, () => UpstreamReply>) =>
  upstream.setHandler((request) => (replies[nameOf(request)] ?? ok)())

const groqHarness = async (sharedKey = true, models?: ModelEntry[]) => {
  harness = await createResponsesHarness({ groq: sharedKey ? {} : { apiKey: null } }, models ? { models } : {})
  harness.upstreams.groq!.setHandler(ok)
  return { h: harness, groq: harness.upstreams.groq! }
}

const ask = (extra: Record<string, unknown> = {}, headers?: Record<string, string>) => harness!.post({ model: MODEL, input: 'hi', ...extra }, headers)

const expectServed = async (response: Response) => {
  const body = await response.json()
  expect(response.status, JSON.stringify(body)).toBe(200)
  expect(body.status).toBe('completed')
  return body
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex')

/** The model's other providers (cheapest first) have no key either. */
const noKey = (names: string, variables: string, ids: string) => ({
  error: {
    code: 404,
    message: `No provider key for ${MODEL}: the gateway has none for ${names} (set ${variables}, or providers.<id>.apiKey) and this workspace has no BYOK credential that applies (POST /byok with provider ${ids})`,
    metadata: { error_type: 'not_found' },
  },
})

const NO_ENDPOINTS = {
  error: {
    code: 404,
    message: `No endpoints found for ${MODEL} that match the provider preferences and available credentials`,
    metadata: { error_type: 'not_found' },
  },
}

describe('a plain BYOK key', () => {
  it('is used before the shared key, and billed as BYOK: 5% of the list price', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A })
    const body = await expectServed(await ask({}, { 'x-service-metadata': 'enabled' }))
    expect(keysSeen(groq)).toEqual(['A'])
    expect(body.usage).toEqual({
      input_tokens: 14,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 13,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 27,
      cost: 0.0000009265,
      is_byok: true,
      cost_details: { upstream_inference_cost: LIST, upstream_inference_input_cost: LIST_INPUT, upstream_inference_output_cost: LIST_OUTPUT },
    })
    expect(body.usage.cost).toBeCloseTo(LIST * 0.05, 15)
    expect(body.service_metadata).toMatchObject({
      is_byok: true,
      attempt: 1,
      strategy: 'direct',
      endpoints: { available: [{ model: MODEL, provider: 'groq', selected: true }, { model: MODEL, provider: 'groq', selected: false }], total: 2 },
    })
  })

  it('is not BYOK when the shared key serves: cost is the list price', async () => {
    const { groq } = await groqHarness()
    const body = await expectServed(await ask({}, { 'x-service-metadata': 'enabled' }))
    expect(keysSeen(groq)).toEqual(['shared'])
    expect(body.usage).toMatchObject({
      cost: LIST,
      is_byok: false,
      cost_details: { upstream_inference_cost: null, upstream_inference_input_cost: LIST_INPUT, upstream_inference_output_cost: LIST_OUTPUT },
    })
    expect(body.service_metadata.is_byok).toBe(false)
  })

  it('bills a stream the same way', async () => {
    const { h, groq } = await groqHarness()
    groq.setHandler(() => sseFixture('openai-chat', 'text.sse'))
    await h.addByok({ provider: 'groq', key: KEY_A })
    const response = await ask({ stream: true }, { 'x-service-metadata': 'enabled' })
    expect(response.status).toBe(200)
    const { events } = await readSseEvents(response)
    const completed = events.find((event) => event.event === 'response.completed')!.data.response
    expect(keysSeen(groq)).toEqual(['A'])
    expect(completed.usage.is_byok).toBe(true)
    expect(completed.usage.cost).toBeCloseTo(completed.usage.cost_details.upstream_inference_cost * 0.05, 15)
    expect(completed.service_metadata.is_byok).toBe(true)
  })

  it('is used without any shared key configured', async () => {
    const { h, groq } = await groqHarness(false)
    await h.addByok({ provider: 'groq', key: KEY_A })
    await expectServed(await ask())
    expect(keysSeen(groq)).toEqual(['A'])
  })
})

describe('several keys', () => {
  it('are tried in sort_order; a failing key falls through to the next, then to shared', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A })
    await h.addByok({ provider: 'groq', key: KEY_B })
    replyByKey(groq, { A: unauthorized, B: rateLimited })
    const body = await expectServed(await ask({}, { 'x-service-metadata': 'enabled' }))
    expect(keysSeen(groq)).toEqual(['A', 'B', 'shared'])
    expect(body.usage.is_byok).toBe(false)
    expect(body.service_metadata).toMatchObject({ attempt: 3, strategy: 'fallback', is_byok: false })
  })

  it('the second key serves when the first fails with a server error', async () => {
    const { h, groq } = await groqHarness()
    const first = await h.addByok({ provider: 'groq', key: KEY_A })
    const second = await h.addByok({ provider: 'groq', key: KEY_B })
    const listed = await h.gateway.fetch(
      new Request('http://gateway.test/api/v1/byok', { headers: { authorization: `Bearer ${h.managementKey}` } }),
    )
    expect(((await listed.json()) as { data: Array<{ id: string; sort_order: number }> }).data.map(({ id, sort_order }) => ({ id, sort_order }))).toEqual([
      { id: first.id, sort_order: 0 },
      { id: second.id, sort_order: 1 },
    ])
    replyByKey(groq, { A: serverError })
    const body = await expectServed(await ask())
    expect(keysSeen(groq)).toEqual(['A', 'B'])
    expect(body.usage.is_byok).toBe(true)
  })

  it('with no shared key, the last key’s error is the answer', async () => {
    const { h, groq } = await groqHarness(false)
    await h.addByok({ provider: 'groq', key: KEY_A })
    await h.addByok({ provider: 'groq', key: KEY_B })
    replyByKey(groq, { A: serverError, B: rateLimited })
    const response = await ask()
    expect(response.status).toBe(429)
    expect((await response.json()).error.metadata).toMatchObject({ error_type: 'rate_limit_exceeded', provider_name: 'groq' })
    expect(keysSeen(groq)).toEqual(['A', 'B'])
  })
})

describe('is_fallback keys', () => {
  it('come after shared: unused while shared succeeds', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, is_fallback: true })
    const body = await expectServed(await ask())
    expect(keysSeen(groq)).toEqual(['shared'])
    expect(body.usage.is_byok).toBe(false)
  })

  it('serve when shared fails', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, is_fallback: true })
    replyByKey(groq, { shared: serverError })
    const body = await expectServed(await ask())
    expect(keysSeen(groq)).toEqual(['shared', 'A'])
    expect(body.usage.is_byok).toBe(true)
  })

  it('order: prioritized keys, shared, then fallback keys, whatever the creation order', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, is_fallback: true })
    await h.addByok({ provider: 'groq', key: KEY_B })
    replyByKey(groq, { B: rateLimited, shared: serverError })
    await expectServed(await ask())
    expect(keysSeen(groq)).toEqual(['B', 'shared', 'A'])
  })
})

describe('disabled keys', () => {
  it('are never used, even when everything else fails', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, disabled: true })
    await expectServed(await ask())
    replyByKey(groq, { shared: rateLimited })
    expect((await ask()).status).toBe(429)
    expect(keysSeen(groq)).toEqual(['shared', 'shared'])
  })

  it('stop being used once disabled by PATCH', async () => {
    const { h, groq } = await groqHarness()
    const { id } = await h.addByok({ provider: 'groq', key: KEY_A })
    await expectServed(await ask())
    const patched = await h.gateway.fetch(
      new Request(`http://gateway.test/api/v1/byok/${id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${h.managementKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ disabled: true }),
      }),
    )
    expect(patched.status).toBe(200)
    await expectServed(await ask())
    expect(keysSeen(groq)).toEqual(['A', 'shared'])
  })

  it('with no shared key and only disabled keys, there is no endpoint', async () => {
    const { h, groq } = await groqHarness(false)
    await h.addByok({ provider: 'groq', key: KEY_A, disabled: true })
    const response = await ask()
    expect(response.status).toBe(404)
    expect(await response.json()).toEqual(
      noKey(
        'DeepInfra, Groq, Together or Fireworks',
        'DEEPINFRA_API_KEY, GROQ_API_KEY, TOGETHER_API_KEY or FIREWORKS_API_KEY',
        '"deepinfra", "groq", "together" or "fireworks"',
      ),
    )
    expect(groq.requests).toHaveLength(0)
  })
})

describe('is_byok_only', () => {
  it('never falls back to shared: when every key fails, the last key’s error is the answer', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, is_byok_only: true })
    await h.addByok({ provider: 'groq', key: KEY_B })
    replyByKey(groq, { A: unauthorized, B: rateLimited })
    const response = await ask()
    expect(response.status).toBe(429)
    const body = await response.json()
    expect(body.error).toMatchObject({ code: 429, metadata: { error_type: 'rate_limit_exceeded', provider_name: 'groq', provider_code: 'rate_limit_exceeded' } })
    expect(body.error.message).toMatch(/^Groq: Rate limit reached/)
    expect(keysSeen(groq)).toEqual(['A', 'B'])
  })

  it('a lone failing byok_only key: its own error, shared untouched', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, is_byok_only: true })
    replyByKey(groq, { A: unauthorized })
    const response = await ask()
    expect(response.status).toBe(401)
    expect((await response.json()).error.metadata).toMatchObject({ error_type: 'authentication', provider_name: 'groq' })
    expect(keysSeen(groq)).toEqual(['A'])
  })

  it('removes shared for models outside its allowed_models too', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, is_byok_only: true, allowed_models: ['openai/gpt-4o'] })
    const response = await ask()
    expect(response.status).toBe(404)
    // Groq is not named: its shared key is there, removed by the byok_only credential.
    expect(await response.json()).toEqual(
      noKey(
        'DeepInfra, Together or Fireworks',
        'DEEPINFRA_API_KEY, TOGETHER_API_KEY or FIREWORKS_API_KEY',
        '"deepinfra", "together" or "fireworks"',
      ),
    )
    expect(groq.requests).toHaveLength(0)
  })

  it('skips the provider, moving on to other providers’ shared endpoints', async () => {
    harness = await createResponsesHarness({ groq: {}, together: {} })
    const { groq, together } = harness.upstreams as Record<string, Upstream>
    replyByKey(groq!, { A: serverError })
    together!.setHandler(ok)
    await harness.addByok({ provider: 'groq', key: KEY_A, is_byok_only: true })
    const body = await expectServed(await ask({}, { 'x-service-metadata': 'enabled' }))
    expect(keysSeen(groq!)).toEqual(['A'])
    expect(keysSeen(together!)).toEqual(['shared'])
    expect(body.service_metadata.endpoints.available).toEqual([
      { model: MODEL, provider: 'groq', selected: false },
      { model: MODEL, provider: 'together', selected: true },
    ])
  })

  it('a disabled byok_only credential does not remove shared', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, is_byok_only: true, disabled: true })
    await expectServed(await ask())
    expect(keysSeen(groq)).toEqual(['shared'])
  })
})

/** A second Groq model, to tell the models an allowlist covers from those it does not. */
const SMALL_MODEL = 'meta-llama/llama-3.1-8b-instruct'
const WITH_SMALL_MODEL: ModelEntry[] = [
  {
    slug: SMALL_MODEL,
    name: 'Llama 3.1 8B Instruct',
    endpoints: [{ provider: 'groq', model: 'llama-3.1-8b-instant', contextLength: 131_072, pricing: { prompt: 0.00000005, completion: 0.00000008 } }],
  },
]

describe('is_required', () => {
  it('with allowed_models covering the model: shared is removed for that model', async () => {
    const { h, groq } = await groqHarness(true, WITH_SMALL_MODEL)
    await h.addByok({ provider: 'groq', key: KEY_A, is_required: true, allowed_models: [MODEL] })
    replyByKey(groq, { A: rateLimited })
    const response = await ask()
    expect(response.status).toBe(429)
    expect(keysSeen(groq)).toEqual(['A'])
  })

  it('models outside the allowlist still use shared, and never the key', async () => {
    const { h, groq } = await groqHarness(true, WITH_SMALL_MODEL)
    await h.addByok({ provider: 'groq', key: KEY_A, is_required: true, allowed_models: [MODEL] })
    const body = await expectServed(await ask({ model: SMALL_MODEL }))
    expect(body.usage.is_byok).toBe(false)
    expect(keysSeen(groq)).toEqual(['shared'])
  })

  it('with allowed_models not covering the model: the key is not used and shared serves', async () => {
    const { h, groq } = await groqHarness(true, WITH_SMALL_MODEL)
    await h.addByok({ provider: 'groq', key: KEY_A, is_required: true, allowed_models: [SMALL_MODEL] })
    await expectServed(await ask())
    expect(keysSeen(groq)).toEqual(['shared'])
  })

  it('with allowed_models null: shared is removed for every model', async () => {
    const { h, groq } = await groqHarness(true, WITH_SMALL_MODEL)
    await h.addByok({ provider: 'groq', key: KEY_A, is_required: true })
    replyByKey(groq, { A: serverError })
    expect((await ask()).status).toBe(502)
    expect((await ask({ model: SMALL_MODEL })).status).toBe(502)
    expect(keysSeen(groq)).toEqual(['A', 'A'])
  })

  it('a disabled is_required credential does not remove shared', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, is_required: true, disabled: true })
    await expectServed(await ask())
    expect(keysSeen(groq)).toEqual(['shared'])
  })
})

describe('allowed_models', () => {
  it('a key restricted to other models is not used', async () => {
    const { h, groq } = await groqHarness(true, WITH_SMALL_MODEL)
    await h.addByok({ provider: 'groq', key: KEY_A, allowed_models: [SMALL_MODEL] })
    await expectServed(await ask())
    await expectServed(await ask({ model: SMALL_MODEL }))
    expect(keysSeen(groq)).toEqual(['shared', 'A'])
  })
})

describe('allowed_api_key_hashes', () => {
  it('containing the caller’s key hash: the key is used', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, allowed_api_key_hashes: [sha256(h.key)] })
    await expectServed(await ask())
    expect(keysSeen(groq)).toEqual(['A'])
  })

  it('containing only another key’s hash: the key is not used', async () => {
    const { h, groq } = await groqHarness()
    const other = await h.gateway.admin.createKey({ kind: 'regular' })
    expect(other.record.hash).toBe(sha256(other.key))
    await h.addByok({ provider: 'groq', key: KEY_A, allowed_api_key_hashes: [other.record.hash] })
    await expectServed(await ask())
    expect(keysSeen(groq)).toEqual(['shared'])
    // The other key does get it.
    const response = await h.gateway.fetch(
      new Request('http://gateway.test/api/v1/responses', {
        method: 'POST',
        headers: { authorization: `Bearer ${other.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, input: 'hi' }),
      }),
    )
    await expectServed(response)
    expect(keysSeen(groq)).toEqual(['shared', 'A'])
  })
})

describe('allowed_user_ids', () => {
  /** A regular key minted over `POST /keys` for `user` (the field `@openrouter/sdk` calls creatorUserId). */
  const keyFor = async (h: ResponsesHarness, user: string) => {
    const response = await h.gateway.fetch(
      new Request('http://gateway.test/api/v1/keys', {
        method: 'POST',
        headers: { authorization: `Bearer ${h.managementKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `${user}'s key`, creator_user_id: user }),
      }),
    )
    expect(response.status).toBe(201)
    return ((await response.json()) as { key: string }).key
  }
  const as = (key: string) => ({ authorization: `Bearer ${key}` })

  it("match the user behind the calling key; the body's user field never unlocks a key", async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, allowed_user_ids: ['alice', 'bob'] })
    // The account owner's key, naming a listed user in every field a caller controls.
    await expectServed(await ask({ user: 'bob' }))
    await expectServed(await ask({ user: 'alice', safety_identifier: 'alice' }))
    const bobKey = await keyFor(h, 'bob')
    await expectServed(await ask({}, as(bobKey)))
    await expectServed(await ask({ user: 'mallory' }, as(bobKey)))
    const { key: carolKey } = await h.gateway.admin.createKey({ creatorUserId: 'carol' })
    await expectServed(await ask({ user: 'bob' }, as(carolKey)))
    expect(keysSeen(groq)).toEqual(['shared', 'shared', 'A', 'A', 'shared'])
  })

  it('all filters must match', async () => {
    const { h, groq } = await groqHarness()
    const aliceKey = await keyFor(h, 'alice')
    await h.addByok({ provider: 'groq', key: KEY_A, allowed_user_ids: ['alice'], allowed_models: [MODEL], allowed_api_key_hashes: [sha256(aliceKey)] })
    await h.addByok({ provider: 'groq', key: KEY_B, allowed_user_ids: ['alice'], allowed_models: ['openai/gpt-4o'] })
    await expectServed(await ask({}, as(aliceKey)))
    await expectServed(await ask({ user: 'alice' }))
    expect(keysSeen(groq)).toEqual(['A', 'shared'])
  })
})

/** The same Groq model, declared zero-data-retention in the catalog. */
const ZDR_MODEL = 'meta-llama/llama-3.3-70b-instruct-zdr'
const WITH_ZDR_MODEL: ModelEntry[] = [
  {
    slug: ZDR_MODEL,
    name: 'Llama 3.3 70B (ZDR endpoint)',
    endpoints: [{ provider: 'groq', model: 'llama-3.3-70b-versatile', contextLength: 131_072, pricing: { prompt: 0.00000059, completion: 0.00000079 }, isZeroDataRetention: true }],
  },
]

describe('declared_zdr with provider.zdr', () => {
  it('true: the key serves ZDR requests though the shared endpoint retains data', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, declared_zdr: true })
    await expectServed(await ask({ provider: { zdr: true } }))
    expect(keysSeen(groq)).toEqual(['A'])
  })

  it('false: never used for ZDR requests (and shared is no ZDR endpoint either)', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, declared_zdr: false })
    const response = await ask({ provider: { zdr: true } })
    expect(response.status).toBe(404)
    expect(await response.json()).toEqual(NO_ENDPOINTS)
    expect(groq.requests).toHaveLength(0)
  })

  it('false: never used for ZDR requests even on a ZDR endpoint, where shared serves', async () => {
    const { h, groq } = await groqHarness(true, WITH_ZDR_MODEL)
    await h.addByok({ provider: 'groq', key: KEY_A, declared_zdr: false })
    await expectServed(await ask({ model: ZDR_MODEL, provider: { zdr: true } }))
    expect(keysSeen(groq)).toEqual(['shared'])
  })

  it('null: used only when the endpoint itself is ZDR', async () => {
    const { h, groq } = await groqHarness(true, WITH_ZDR_MODEL)
    await h.addByok({ provider: 'groq', key: KEY_A, declared_zdr: null })
    const refused = await ask({ provider: { zdr: true } })
    expect(refused.status).toBe(404)
    expect(groq.requests).toHaveLength(0)
    await expectServed(await ask({ model: ZDR_MODEL, provider: { zdr: true } }))
    expect(keysSeen(groq)).toEqual(['A'])
  })

  it('without provider.zdr, declared_zdr does not matter', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, declared_zdr: false })
    await expectServed(await ask())
    expect(keysSeen(groq)).toEqual(['A'])
  })
})

describe('scope', () => {
  it('a credential in another workspace is not used; that workspace’s keys do use it', async () => {
    const { h, groq } = await groqHarness()
    const other = await h.gateway.admin.createWorkspace(undefined, { name: 'Research', slug: 'research' })
    const credential = await h.addByok({ provider: 'groq', key: KEY_A, workspace_id: other.id })
    expect(credential).toMatchObject({ workspace_id: other.id })
    await expectServed(await ask())
    expect(keysSeen(groq)).toEqual(['shared'])

    const researchKey = await h.gateway.admin.createKey({ kind: 'regular', workspaceId: other.id })
    const response = await h.gateway.fetch(
      new Request('http://gateway.test/api/v1/responses', {
        method: 'POST',
        headers: { authorization: `Bearer ${researchKey.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, input: 'hi' }),
      }),
    )
    await expectServed(response)
    expect(keysSeen(groq)).toEqual(['shared', 'A'])
  })

  it('credentials of one provider are never sent to another', async () => {
    harness = await createResponsesHarness({ groq: {}, together: {} })
    const { groq, together } = harness.upstreams as Record<string, Upstream>
    groq!.setHandler(serverError)
    replyByKey(together!, { B: serverError })
    await harness.addByok({ provider: 'together', key: KEY_B })
    // The caller's Together key first (prioritized keys precede every shared endpoint), then the
    // shared endpoints cheapest first: Groq with its shared key only, then Together.
    const body = await expectServed(await ask({}, { 'x-service-metadata': 'enabled' }))
    expect(keysSeen(together!)).toEqual(['B', 'shared'])
    expect(keysSeen(groq!)).toEqual(['shared'])
    expect(body.usage.is_byok).toBe(false)
    expect(body.service_metadata.endpoints.available.map((endpoint: { provider: string }) => endpoint.provider)).toEqual(['together', 'groq', 'together'])
    // A Groq key is not used when only Together may serve.
    await harness.addByok({ provider: 'groq', key: KEY_A })
    await expectServed(await ask({ provider: { only: ['together'] } }))
    expect(keysSeen(groq!)).toEqual(['shared'])
    expect(keysSeen(together!)).toEqual(['B', 'shared', 'B', 'shared'])
  })
})

describe('the raw key never leaves', () => {
  const leaks = (text: string) => [KEY_A, KEY_B].filter((key) => text.includes(key))

  it('not in an upstream error that quotes it', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A, is_byok_only: true })
    groq.setHandler((request) => ({
      status: 401,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ error: { message: `Invalid API key: ${String(request.headers.authorization).slice(7)}`, type: 'invalid_request_error', code: 'invalid_api_key' } }),
    }))
    const response = await ask({}, { 'x-service-metadata': 'enabled' })
    expect(response.status).toBe(401)
    const text = await response.text()
    expect(leaks(text)).toEqual([])
    expect(JSON.parse(text).error.message).toBe('Groq: Invalid API key: [redacted]')
  })

  it('not in a stream, nor in its debug echo of the upstream body', async () => {
    const { h, groq } = await groqHarness()
    groq.setHandler(() => sseFixture('openai-chat', 'text.sse'))
    await h.addByok({ provider: 'groq', key: KEY_A })
    const response = await ask({ stream: true, debug: { echo_upstream_body: true } }, { 'x-service-metadata': 'enabled' })
    const { text, events } = await readSseEvents(response)
    expect(events.some((event) => event.event === 'response.debug')).toBe(true)
    expect(leaks(text)).toEqual([])
  })

  it('not in an in-band stream error that quotes it', async () => {
    const { h, groq } = await groqHarness()
    await h.addByok({ provider: 'groq', key: KEY_A })
    const content = fixture('openai-chat', 'error-midstream.sse').toString('utf8').split('\n\n').slice(0, 2).join('\n\n')
    groq.setHandler(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [`${content}\n\n`, `data: ${JSON.stringify({ error: { message: `Key ${KEY_A} was revoked`, type: 'invalid_request_error', code: 'invalid_api_key' } })}\n\n`],
    }))
    const response = await ask({ stream: true })
    const { text, events } = await readSseEvents(response)
    expect(events.map((event) => event.event).at(-2)).toBe('response.failed')
    expect(events.at(-2)!.data.response.error).toEqual({ code: 'server_error', message: 'Groq: Key [redacted] was revoked' })
    expect(leaks(text)).toEqual([])
  })

  it('not in an error before the first content byte of a stream', async () => {
    const { h, groq } = await groqHarness(false)
    await h.addByok({ provider: 'groq', key: KEY_A })
    groq.setHandler(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [`data: ${JSON.stringify({ error: { message: `Key ${KEY_A} was revoked`, type: 'invalid_request_error', code: 'invalid_api_key' } })}\n\n`],
    }))
    const response = await ask({ stream: true })
    // The caller's own key was refused: a 401 that names the provider, never the key.
    expect(response.status).toBe(401)
    const text = await response.text()
    expect(leaks(text)).toEqual([])
    expect(JSON.parse(text)).toEqual({
      error: {
        code: 401,
        message: 'Groq: Key [redacted] was revoked',
        metadata: { error_type: 'authentication', provider_name: 'groq', provider_code: 'invalid_api_key' },
      },
    })
  })

  it('not in the BYOK routes’ answers', async () => {
    const { h } = await groqHarness()
    const created = await h.gateway.fetch(
      new Request('http://gateway.test/api/v1/byok', {
        method: 'POST',
        headers: { authorization: `Bearer ${h.managementKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ provider: 'groq', key: KEY_A }),
      }),
    )
    expect(leaks(await created.text())).toEqual([])
    const listed = await h.gateway.fetch(new Request('http://gateway.test/api/v1/byok', { headers: { authorization: `Bearer ${h.managementKey}` } }))
    expect(leaks(await listed.text())).toEqual([])
  })
})
