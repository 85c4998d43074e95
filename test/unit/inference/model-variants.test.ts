/** Model variants (`:free`, `:floor`, `:thinking`, `:online`, `:nitro` in measured-routing.test.ts): each with its effect or a 400. */

import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { createTestGateway, scriptedProvider, type ScriptedProvider, type TestGateway } from '../../../src/testing'
import { TEST_PRICING } from '../../helpers/models'

const REASONING = ['max_output_tokens', 'reasoning']

/** `test/mixed`: alpha paid (and reasoning), beta free; `test/paid`: alpha only, without reasoning. */
const MODELS: ModelEntry[] = [
  {
    slug: 'test/mixed',
    name: 'Mixed',
    endpoints: [
      { provider: 'alpha', model: 'alpha-model', contextLength: 8192, pricing: TEST_PRICING, supportedParameters: REASONING },
      { provider: 'beta', model: 'beta-model', contextLength: 8192, pricing: { prompt: 0, completion: 0 } },
    ],
  },
  { slug: 'test/paid', name: 'Paid', endpoints: [{ provider: 'alpha', model: 'alpha-paid', contextLength: 8192, pricing: TEST_PRICING }] },
]

let harness: TestGateway | undefined
let alpha: ScriptedProvider
let beta: ScriptedProvider
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const start = async () => {
  alpha = scriptedProvider({ reply: [{ type: 'text', text: 'paid' }, { type: 'usage', inputTokens: 10, outputTokens: 10 }] })
  beta = scriptedProvider({ reply: [{ type: 'text', text: 'free' }, { type: 'usage', inputTokens: 10, outputTokens: 10 }] })
  harness = await createTestGateway({ providers: { alpha, beta }, models: MODELS })
}

const ask = async (body: Record<string, unknown>) => {
  const response = await harness!.responses({ input: 'hi', ...body })
  return { status: response.status, body: await response.json() }
}

describe('model variants', () => {
  it(':free routes only to free endpoints and bills nothing', async () => {
    await start()
    const answer = await ask({ model: 'test/mixed:free' })
    expect(answer.status).toBe(200)
    expect(answer.body.model).toBe('test/mixed')
    expect(answer.body.usage.cost).toBe(0)
    expect(beta.calls).toHaveLength(1)
    expect(alpha.calls).toHaveLength(0)
  })

  it(':free on a model without a free endpoint is a 404, with no upstream call', async () => {
    await start()
    const answer = await ask({ model: 'test/paid:free' })
    expect(answer.status).toBe(404)
    expect(answer.body.error.message).toBe('No endpoint for test/paid:free (no endpoint of it is free)')
    expect(alpha.calls).toHaveLength(0)
  })

  it(':free on a fallback model leaves the other models as they are', async () => {
    await start()
    const answer = await ask({ model: 'test/paid:free', models: ['test/mixed'] })
    expect(answer.status).toBe(200)
    expect(answer.body.model).toBe('test/mixed')
  })

  it(':floor orders cheapest first whatever provider.sort says', async () => {
    await start()
    const answer = await ask({ model: 'test/mixed:floor', provider: { sort: 'latency' } })
    expect(answer.status).toBe(200)
    expect(beta.calls).toHaveLength(1)
  })

  it(':thinking routes to endpoints that reason, with reasoning on unless the request sets it', async () => {
    await start()
    expect((await ask({ model: 'test/mixed:thinking' })).status).toBe(200)
    expect(alpha.lastCall!.request.reasoning).toEqual({ effort: 'medium' })
    expect(beta.calls).toHaveLength(0)
    expect((await ask({ model: 'test/mixed:thinking', reasoning: { effort: 'high' } })).status).toBe(200)
    expect(alpha.lastCall!.request.reasoning).toEqual({ effort: 'high' })
    const refused = await ask({ model: 'test/paid:thinking' })
    expect(refused.status).toBe(404)
    expect(refused.body.error.message).toBe('No endpoint for test/paid:thinking (no endpoint of it reasons)')
  })

  it(':online turns the web plugin on, as plugins: [{id: "web"}] does', async () => {
    await start()
    const online = await ask({ model: 'test/mixed:online' })
    const plugin = await ask({ model: 'test/mixed', plugins: [{ id: 'web' }] })
    // No search engine is configured here: both are refused by the plugin alike.
    expect(online.status).toBe(400)
    expect(online.body).toEqual(plugin.body)
    expect(alpha.calls).toHaveLength(0)
  })

  it.each([
    ['test/mixed:bogus', 'model "test/mixed:bogus": unknown variant ":bogus" (supported: :free, :nitro, :floor, :thinking, :online)'],
    ['test/mixed:exacto', 'model "test/mixed:exacto": the variant ":exacto" is not supported: the gateway has no tool-calling quality figures to route on'],
  ])('%s is a 400 naming it', async (model, message) => {
    await start()
    const answer = await ask({ model })
    expect(answer.status).toBe(400)
    expect(answer.body.error.message).toBe(message)
    const fallback = await ask({ model: 'test/mixed', models: [model] })
    expect(fallback.status).toBe(400)
    expect(alpha.calls).toHaveLength(0)
  })

  it('a catalog entry whose slug has the suffix is that model, not a variant', async () => {
    alpha = scriptedProvider({ reply: 'own' })
    harness = await createTestGateway({
      providers: { alpha },
      models: [{ slug: 'test/own:bogus', name: 'Own', endpoints: [{ provider: 'alpha', model: 'own', contextLength: 8192, pricing: TEST_PRICING }] }],
    })
    const answer = await ask({ model: 'test/own:bogus' })
    expect(answer.status).toBe(200)
    expect(answer.body.model).toBe('test/own:bogus')
  })
})
