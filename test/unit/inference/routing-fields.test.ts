/**
 * Smaller routing and workspace fields, each with its effect or a 400: `allow_fallbacks: false` leaves the `models`
 * fallback on, an `x-session-id` header is held to the body field's bound, `is_data_discount_logging_enabled` only false.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { createTestGateway, scriptedProvider, type TestGateway } from '../../../src/testing'
import { TEST_PRICING } from '../../helpers/models'

const MODELS: ModelEntry[] = [
  {
    slug: 'test/first',
    name: 'First',
    endpoints: [
      { provider: 'alpha', model: 'alpha-first', contextLength: 8192, pricing: TEST_PRICING },
      { provider: 'beta', model: 'beta-first', contextLength: 8192, pricing: { prompt: 0.000002, completion: 0.000004 } },
    ],
  },
  { slug: 'test/second', name: 'Second', endpoints: [{ provider: 'beta', model: 'beta-second', contextLength: 8192, pricing: TEST_PRICING }] },
]

let harness: TestGateway | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const start = async () => {
  const failing = scriptedProvider({ reply: [{ type: 'http_error', status: 503 }] })
  const beta = scriptedProvider({ reply: 'from beta' })
  harness = await createTestGateway({ providers: { alpha: failing, beta }, models: MODELS })
  return { failing, beta }
}

describe('allow_fallbacks: false', () => {
  it('turns off the provider fallback, not the models fallback', async () => {
    const { beta } = await start()
    const answer = await harness!.responses({ input: 'hi', model: 'test/first', models: ['test/second'], provider: { allow_fallbacks: false } }, { headers: { 'x-service-metadata': 'enabled' } })
    const body = await answer.json()
    expect(answer.status).toBe(200)
    expect(body.model).toBe('test/second')
    // test/first's other endpoint (beta-first) was not tried.
    expect(body.service_metadata.endpoints.available.map((endpoint: { model: string; provider: string }) => `${endpoint.model} ${endpoint.provider}`)).toEqual([
      'test/first alpha',
      'test/second beta',
    ])
    expect(beta.calls.map((call) => call.model)).toEqual(['beta-second'])
  })
})

describe('filters on catalog facts', () => {
  const FACTS: ModelEntry[] = [
    {
      slug: 'test/facts',
      name: 'Facts',
      endpoints: [
        { provider: 'alpha', model: 'alpha-facts', contextLength: 8192, pricing: TEST_PRICING },
        { provider: 'beta', model: 'beta-facts', contextLength: 8192, pricing: TEST_PRICING, collectsData: false, quantization: 'fp8', isDistillable: true },
      ],
    },
  ]

  it('keep only endpoints known to meet them, and the 404 says which facts were missing', async () => {
    const alpha = scriptedProvider({ reply: 'from alpha' })
    const beta = scriptedProvider({ reply: 'from beta' })
    harness = await createTestGateway({ providers: { alpha, beta }, models: FACTS })
    for (const provider of [{ data_collection: 'deny' }, { enforce_distillable_text: true }, { quantizations: ['fp8'] }]) {
      expect((await harness.responses({ input: 'hi', model: 'test/facts', provider })).status).toBe(200)
      expect(beta.lastCall!.model).toBe('beta-facts')
    }
    expect(alpha.calls).toHaveLength(0)
    // `unknown` admits an endpoint whose format the catalog does not say.
    expect((await harness.responses({ input: 'hi', model: 'test/facts', provider: { quantizations: ['unknown'] } })).status).toBe(200)
    expect(alpha.calls).toHaveLength(1)
    const none = await harness.responses({ input: 'hi', model: 'test/facts', provider: { data_collection: 'deny', ignore: ['beta'] } })
    expect(none.status).toBe(404)
    expect((await none.json()).error.message).toBe(
      'No endpoints found for test/facts that match the provider preferences and available credentials; provider.data_collection "deny" left out ' +
        'endpoints the catalog has no such facts for (an operator adds them to the model entries: collectsData, quantization, isDistillable)',
    )
  })
})

describe('the built-in catalog\'s provider facts', () => {
  it('route data_collection "deny" to a first-party provider, and enforce_distillable_text names the terms', async () => {
    const openai = scriptedProvider({ reply: 'from openai' })
    const groq = scriptedProvider({ reply: 'from groq' })
    harness = await createTestGateway({ providers: { openai, groq } })
    // gpt-oss-120b's open hosts state no policy; OpenAI states it does not train on API traffic.
    const denied = await harness.responses({ input: 'hi', model: 'openai/gpt-oss-120b', models: ['openai/gpt-4.1-mini'], provider: { data_collection: 'deny' } })
    expect(denied.status).toBe(200)
    expect((await denied.json()).model).toBe('openai/gpt-4.1-mini')
    expect(openai.lastCall!.model).toBe('gpt-4.1-mini')
    expect(groq.calls).toHaveLength(0)
    const distilled = await harness.responses({ input: 'hi', model: 'openai/gpt-4.1-mini', provider: { enforce_distillable_text: true } })
    expect(distilled.status).toBe(404)
    expect((await distilled.json()).error.message).toBe(
      'No endpoints found for openai/gpt-4.1-mini that match the provider preferences and available credentials; provider.enforce_distillable_text ' +
        "left out endpoints whose terms forbid using the model's output to train other models",
    )
  })
})

describe('the x-session-id header', () => {
  it('is held to 256 characters, as the body field', async () => {
    await start()
    const long = await harness!.responses({ input: 'hi', model: 'test/second' }, { headers: { 'x-session-id': 's'.repeat(257) } })
    expect(long.status).toBe(400)
    expect((await long.json()).error.message).toBe('headers.x-session-id: must be at most 256 characters')
    expect((await harness!.responses({ input: 'hi', model: 'test/second' }, { headers: { 'x-session-id': 's'.repeat(256) } })).status).toBe(200)
    // The body's wins, so a long header beside it is not read.
    expect((await harness!.responses({ input: 'hi', model: 'test/second', session_id: 'body' }, { headers: { 'x-session-id': 's'.repeat(257) } })).status).toBe(200)
  })
})

describe('is_data_discount_logging_enabled', () => {
  it('takes only false: no discount is offered for logging prompts', async () => {
    await start()
    const refused = await harness!.call('PATCH', `/workspaces/${harness!.defaultWorkspaceId}`, { json: { is_data_discount_logging_enabled: true } })
    expect(refused.status).toBe(400)
    expect((await refused.json()).error.message).toBe(
      'body.is_data_discount_logging_enabled: only false: this gateway offers no discount for logging prompts, and logs none for one',
    )
    expect((await harness!.call('PATCH', `/workspaces/${harness!.defaultWorkspaceId}`, { json: { is_data_discount_logging_enabled: false } })).status).toBe(200)
  })
})
