/**
 * How many upstream attempts requests may make: `retry.maxAttempts` per request, a retry budget per gateway, and
 * outlier ejection of endpoints and BYOK keys that keep failing (with a probe once the back-off runs out).
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { createTestGateway, scriptedProvider, type ScriptedCall, type ScriptedReply, type TestGateway, type TestGatewayOptions } from '../../../src/testing'
import { TEST_PRICING, TWO_PROVIDERS } from '../../helpers/models'

const PRICING = TEST_PRICING

/** Seven models, each served by Groq alone. */
const SEVEN_MODELS: ModelEntry[] = Array.from({ length: 7 }, (_, index) => ({
  slug: `test/model-${index + 1}`,
  name: `Test model ${index + 1}`,
  endpoints: [{ provider: 'groq', model: `upstream-model-${index + 1}`, contextLength: 8192, pricing: PRICING }],
}))
const ALL_SEVEN = { model: 'test/model-1', models: SEVEN_MODELS.slice(1).map((model) => model.slug) }

const overloaded: ScriptedReply = [{ type: 'http_error', status: 503, message: 'The server is overloaded' }]
const ok: ScriptedReply = 'Hello'

/** A scripted provider whose answer the test changes as it goes, as a loopback upstream's handler. */
const switchable = (options: { apiKey?: string | null } = {}) => {
  let reply: ScriptedReply = ok
  const provider = scriptedProvider({ ...options, reply: (call) => (typeof reply === 'function' ? reply(call) : reply) })
  return Object.assign(provider, { answer: (next: ScriptedReply) => void (reply = next) })
}

let harness: TestGateway | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const gatewayWith = async (providers: Record<string, ReturnType<typeof switchable>>, options: TestGatewayOptions = {}) => {
  harness = await createTestGateway({ providers, ...options })
  return providers
}

const addByok = async (body: Record<string, unknown>) => {
  const response = await harness!.call('POST', '/byok', { json: body })
  if (response.status !== 200) throw new Error(`POST /byok failed: ${response.status} ${await response.text()}`)
}

/** A clock the test moves; the gateway reads it through the `now` option. */
const testClock = () => {
  let time = Date.parse('2026-03-01T12:00:00Z')
  return { now: () => new Date(time), advance: (seconds: number) => void (time += seconds * 1000) }
}

const twoProviders = (options: TestGatewayOptions = {}) => gatewayWith({ alpha: switchable(), beta: switchable() }, { models: TWO_PROVIDERS, ...options })

const ask = async (body: Record<string, unknown> = { model: 'test/model' }) => {
  const response = await harness!.responses({ input: 'hi', ...body }, { headers: { 'x-service-metadata': 'enabled' } })
  return { status: response.status, body: await response.json() }
}

describe('the attempts of a request against an upstream that fails everything', () => {
  it('stay within 1.2 × requests + 3 across 50 requests of 7 models and 20 BYOK keys each', async () => {
    const { groq } = await gatewayWith({ groq: switchable({ apiKey: null }) }, { models: SEVEN_MODELS })
    for (let index = 0; index < 20; index++) await addByok({ provider: 'groq', key: `byok-key-${index}-0123456789abcdef` })
    groq!.answer(overloaded)
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, index) => harness!.responses({ ...ALL_SEVEN, input: 'hi', stream: index % 2 === 1 })),
    )
    for (const response of responses) {
      expect(response.status).toBe(529)
      expect((await response.json()).error.metadata.error_type).toBe('provider_overloaded')
    }
    expect(groq!.calls.length).toBeGreaterThanOrEqual(50)
    expect(groq!.calls.length).toBeLessThanOrEqual(1.2 * 50 + 3)
  })

  it('are at most retry.maxAttempts: 3 by default, more when configured', async () => {
    const first = await gatewayWith({ groq: switchable() }, { models: SEVEN_MODELS, outlierDetection: false })
    first.groq!.answer(overloaded)
    const answer = await ask(ALL_SEVEN)
    expect(answer.status).toBe(529)
    expect(first.groq!.calls).toHaveLength(3)
    expect(answer.body.service_metadata).toMatchObject({ attempt: 3, summary: 'no endpoint succeeded after 3 attempts' })
    await harness!.close()

    const { groq } = await gatewayWith({ groq: switchable() }, { models: SEVEN_MODELS, outlierDetection: false, retry: { maxAttempts: 6, budget: false } })
    groq!.answer(overloaded)
    await ask(ALL_SEVEN)
    expect(groq!.calls.map((call: ScriptedCall) => call.model)).toEqual(
      ['upstream-model-1', 'upstream-model-2', 'upstream-model-3', 'upstream-model-4', 'upstream-model-5', 'upstream-model-6'],
    )
  })

  it('stop when the retry budget is spent, and the budget refills as its window slides', async () => {
    const clock = testClock()
    const { groq } = await gatewayWith(
      { groq: switchable() },
      { models: SEVEN_MODELS, outlierDetection: false, now: clock.now, retry: { maxAttempts: 10, budget: { ratio: 0, minRetries: 2, windowSeconds: 10 } } },
    )
    groq!.answer(overloaded)
    expect((await ask(ALL_SEVEN)).status).toBe(529)
    expect(groq!.calls).toHaveLength(3)
    expect((await ask(ALL_SEVEN)).status).toBe(529)
    expect(groq!.calls).toHaveLength(4)
    clock.advance(10)
    await ask(ALL_SEVEN)
    expect(groq!.calls).toHaveLength(7)
  })
})

describe('outlier ejection through the gateway', () => {
  it('skips an endpoint after 5 consecutive 5xx, probes it once the back-off ran out, and takes it back when it answers', async () => {
    const clock = testClock()
    const { alpha } = await twoProviders({ now: clock.now, retry: { budget: false } })
    alpha!.answer(overloaded)
    for (let index = 0; index < 5; index++) expect((await ask()).body.service_metadata.attempt).toBe(2)
    expect(alpha!.calls).toHaveLength(5)

    const skipped = await ask()
    expect(skipped.status).toBe(200)
    expect(skipped.body.service_metadata).toMatchObject({ attempt: 1, summary: 'test/model via beta on attempt 1 of 2' })
    expect(alpha!.calls).toHaveLength(5)

    clock.advance(29)
    await ask()
    expect(alpha!.calls).toHaveLength(5)
    clock.advance(1)
    alpha!.answer(ok)
    const probe = await ask()
    expect(probe.body.service_metadata).toMatchObject({ attempt: 1, endpoints: { available: [{ provider: 'alpha', selected: true }, { provider: 'beta', selected: false }] } })
    expect(alpha!.calls).toHaveLength(6)
    await ask()
    expect(alpha!.calls).toHaveLength(7)
  })

  it('doubles the back-off when the probe fails', async () => {
    const clock = testClock()
    const { alpha } = await twoProviders({ now: clock.now, retry: { budget: false } })
    alpha!.answer(overloaded)
    for (let index = 0; index < 5; index++) await ask()
    clock.advance(30)
    await ask()
    expect(alpha!.calls).toHaveLength(6)
    clock.advance(59)
    await ask()
    expect(alpha!.calls).toHaveLength(6)
    clock.advance(1)
    await ask()
    expect(alpha!.calls).toHaveLength(7)
  })

  it('ejects a BYOK key that keeps failing while the endpoint, answering others, stays in use', async () => {
    const { groq } = await gatewayWith({ groq: switchable() }, { models: SEVEN_MODELS, retry: { budget: false } })
    await addByok({ provider: 'groq', key: 'byok-failing-key-0123456789' })
    const byKey = (call: ScriptedCall) => (call.apiKey.includes('byok-failing') ? 'byok' : 'shared')
    groq!.answer((call) => (byKey(call) === 'byok' ? [{ type: 'http_error', status: 500, message: 'The server had an error' }] : ok))
    for (let index = 0; index < 5; index++) expect((await ask({ model: 'test/model-1' })).body.service_metadata.is_byok).toBe(false)
    expect(groq!.calls.map(byKey)).toEqual(['byok', 'shared', 'byok', 'shared', 'byok', 'shared', 'byok', 'shared', 'byok', 'shared'])
    const next = await ask({ model: 'test/model-1' })
    expect(next.body.service_metadata.attempt).toBe(1)
    expect(groq!.calls.map(byKey).slice(10)).toEqual(['shared'])
  })

  it('does not count caller errors (4xx) against an endpoint', async () => {
    const { alpha } = await twoProviders({ retry: { budget: false } })
    alpha!.answer([{ type: 'http_error', status: 400, message: "This model's maximum context length is 8192 tokens" }])
    for (let index = 0; index < 7; index++) await ask()
    expect(alpha!.calls).toHaveLength(7)
  })

  it('still tries the endpoints when every one is ejected, and answers with the upstream failure', async () => {
    const { groq } = await gatewayWith({ groq: switchable() }, { models: SEVEN_MODELS, retry: { budget: false } })
    groq!.answer(overloaded)
    for (let index = 0; index < 5; index++) await ask({ model: 'test/model-1' })
    const panic = await ask({ model: 'test/model-1' })
    expect(groq!.calls).toHaveLength(6)
    expect(panic.status).toBe(529)
    expect(panic.body.error.metadata).toMatchObject({ error_type: 'provider_overloaded', provider_name: 'groq' })
  })

  it('is off with outlierDetection: false', async () => {
    const { alpha } = await twoProviders({ outlierDetection: false, retry: { budget: false } })
    alpha!.answer(overloaded)
    for (let index = 0; index < 7; index++) await ask()
    expect(alpha!.calls).toHaveLength(7)
  })
})
