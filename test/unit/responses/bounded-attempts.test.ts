/**
 * How many upstream attempts requests may make: `retry.maxAttempts` per request, a retry budget per gateway, and
 * outlier ejection of endpoints and BYOK keys that keep failing (with a probe once the back-off runs out).
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { GatewayOptions } from '../../../src/gateway/options'
import type { ModelEntry } from '../../../src/engine/models'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture, sseFixture, type RecordedRequest } from '../../helpers/upstream'

const PRICING = { prompt: 0.000001, completion: 0.000002 }

/** Seven models, each served by Groq alone. */
const SEVEN_MODELS: ModelEntry[] = Array.from({ length: 7 }, (_, index) => ({
  slug: `test/model-${index + 1}`,
  name: `Test model ${index + 1}`,
  endpoints: [{ provider: 'groq', model: `upstream-model-${index + 1}`, contextLength: 8192, pricing: PRICING }],
}))
const ALL_SEVEN = { model: 'test/model-1', models: SEVEN_MODELS.slice(1).map((model) => model.slug) }

/** One model on two providers, alpha (cheaper, tried first) and beta. */
const TWO_PROVIDERS: ModelEntry[] = [
  {
    slug: 'test/model',
    name: 'Test model',
    endpoints: [
      { provider: 'alpha', model: 'alpha-model', contextLength: 8192, pricing: PRICING },
      { provider: 'beta', model: 'beta-model', contextLength: 8192, pricing: { prompt: 0.000002, completion: 0.000004 } },
    ],
  },
]

const overloaded = () => jsonFixture('openai-chat', 'error-overloaded.json', 503)
const ok = () => jsonFixture('openai-chat', 'text.json')

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

/** A clock the test moves; the gateway reads it through the `now` option. */
const testClock = () => {
  let time = Date.parse('2026-03-01T12:00:00Z')
  return { now: () => new Date(time), advance: (seconds: number) => void (time += seconds * 1000) }
}

const twoProviders = async (options: Partial<GatewayOptions> = {}) => {
  harness = await createResponsesHarness({ alpha: { api: 'openai-chat' }, beta: { api: 'openai-chat' } }, { models: TWO_PROVIDERS, ...options })
  return { alpha: harness.upstreams.alpha!, beta: harness.upstreams.beta! }
}

const ask = async (body: Record<string, unknown> = { model: 'test/model' }) => {
  const response = await harness!.post({ input: 'hi', ...body }, { 'x-service-metadata': 'enabled' })
  return { status: response.status, body: await response.json() }
}

describe('the attempts of a request against an upstream that fails everything', () => {
  it('stay within 1.2 × requests + 3 across 50 requests of 7 models and 20 BYOK keys each', async () => {
    harness = await createResponsesHarness({ groq: { apiKey: null } }, { models: SEVEN_MODELS })
    for (let index = 0; index < 20; index++) await harness.addByok({ provider: 'groq', key: `byok-key-${index}-0123456789abcdef` })
    const groq = harness.upstreams.groq!
    groq.setHandler(overloaded)
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, index) => harness!.post({ ...ALL_SEVEN, input: 'hi', stream: index % 2 === 1 })),
    )
    for (const response of responses) {
      expect(response.status).toBe(529)
      expect((await response.json()).error.metadata.error_type).toBe('provider_overloaded')
    }
    expect(groq.requests.length).toBeGreaterThanOrEqual(50)
    expect(groq.requests.length).toBeLessThanOrEqual(1.2 * 50 + 3)
  })

  it('are at most retry.maxAttempts: 3 by default, more when configured', async () => {
    harness = await createResponsesHarness({ groq: {} }, { models: SEVEN_MODELS, outlierDetection: false })
    harness.upstreams.groq!.setHandler(overloaded)
    const first = await ask(ALL_SEVEN)
    expect(first.status).toBe(529)
    expect(harness.upstreams.groq!.requests).toHaveLength(3)
    expect(first.body.service_metadata).toMatchObject({ attempt: 3, summary: 'no endpoint succeeded after 3 attempts' })
    await harness.close()

    harness = await createResponsesHarness({ groq: {} }, { models: SEVEN_MODELS, outlierDetection: false, retry: { maxAttempts: 6, budget: false } })
    harness.upstreams.groq!.setHandler(overloaded)
    await ask(ALL_SEVEN)
    expect(harness.upstreams.groq!.requests.map((request: RecordedRequest) => request.json.model)).toEqual(
      ['upstream-model-1', 'upstream-model-2', 'upstream-model-3', 'upstream-model-4', 'upstream-model-5', 'upstream-model-6'],
    )
  })

  it('stop when the retry budget is spent, and the budget refills as its window slides', async () => {
    const clock = testClock()
    harness = await createResponsesHarness(
      { groq: {} },
      { models: SEVEN_MODELS, outlierDetection: false, now: clock.now, retry: { maxAttempts: 10, budget: { ratio: 0, minRetries: 2, windowSeconds: 10 } } },
    )
    const groq = harness.upstreams.groq!
    groq.setHandler(overloaded)
    expect((await ask(ALL_SEVEN)).status).toBe(529)
    expect(groq.requests).toHaveLength(3)
    expect((await ask(ALL_SEVEN)).status).toBe(529)
    expect(groq.requests).toHaveLength(4)
    clock.advance(10)
    await ask(ALL_SEVEN)
    expect(groq.requests).toHaveLength(7)
  })
})

describe('outlier ejection through the gateway', () => {
  it('skips an endpoint after 5 consecutive 5xx, probes it once the back-off ran out, and takes it back when it answers', async () => {
    const clock = testClock()
    const { alpha, beta } = await twoProviders({ now: clock.now, retry: { budget: false } })
    alpha.setHandler(overloaded)
    beta.setHandler(ok)
    for (let index = 0; index < 5; index++) expect((await ask()).body.service_metadata.attempt).toBe(2)
    expect(alpha.requests).toHaveLength(5)

    const skipped = await ask()
    expect(skipped.status).toBe(200)
    expect(skipped.body.service_metadata).toMatchObject({ attempt: 1, summary: 'test/model via beta on attempt 1 of 2' })
    expect(alpha.requests).toHaveLength(5)

    clock.advance(29)
    await ask()
    expect(alpha.requests).toHaveLength(5)
    clock.advance(1)
    alpha.setHandler(ok)
    const probe = await ask()
    expect(probe.body.service_metadata).toMatchObject({ attempt: 1, endpoints: { available: [{ provider: 'alpha', selected: true }, { provider: 'beta', selected: false }] } })
    expect(alpha.requests).toHaveLength(6)
    await ask()
    expect(alpha.requests).toHaveLength(7)
  })

  it('doubles the back-off when the probe fails', async () => {
    const clock = testClock()
    const { alpha, beta } = await twoProviders({ now: clock.now, retry: { budget: false } })
    alpha.setHandler(overloaded)
    beta.setHandler(ok)
    for (let index = 0; index < 5; index++) await ask()
    clock.advance(30)
    await ask()
    expect(alpha.requests).toHaveLength(6)
    clock.advance(59)
    await ask()
    expect(alpha.requests).toHaveLength(6)
    clock.advance(1)
    await ask()
    expect(alpha.requests).toHaveLength(7)
  })

  it('ejects a BYOK key that keeps failing while the endpoint, answering others, stays in use', async () => {
    harness = await createResponsesHarness({ groq: {} }, { models: SEVEN_MODELS, retry: { budget: false } })
    await harness.addByok({ provider: 'groq', key: 'byok-failing-key-0123456789' })
    const groq = harness.upstreams.groq!
    const byKey = (request: RecordedRequest) => (String(request.headers.authorization).includes('byok-failing') ? 'byok' : 'shared')
    groq.setHandler((request) => (byKey(request) === 'byok' ? jsonFixture('openai-chat', 'error-overloaded.json', 500) : ok()))
    for (let index = 0; index < 5; index++) expect((await ask({ model: 'test/model-1' })).body.service_metadata.is_byok).toBe(false)
    expect(groq.requests.map(byKey)).toEqual(['byok', 'shared', 'byok', 'shared', 'byok', 'shared', 'byok', 'shared', 'byok', 'shared'])
    const next = await ask({ model: 'test/model-1' })
    expect(next.body.service_metadata.attempt).toBe(1)
    expect(groq.requests.map(byKey).slice(10)).toEqual(['shared'])
  })

  it('does not count caller errors (4xx) against an endpoint', async () => {
    const { alpha, beta } = await twoProviders({ retry: { budget: false } })
    alpha.setHandler(() => jsonFixture('openai-chat', 'error-400-context.json', 400))
    beta.setHandler(ok)
    for (let index = 0; index < 7; index++) await ask()
    expect(alpha.requests).toHaveLength(7)
  })

  it('still tries the endpoints when every one is ejected, and answers with the upstream failure', async () => {
    harness = await createResponsesHarness({ groq: {} }, { models: SEVEN_MODELS, retry: { budget: false } })
    const groq = harness.upstreams.groq!
    groq.setHandler(overloaded)
    for (let index = 0; index < 5; index++) await ask({ model: 'test/model-1' })
    const panic = await ask({ model: 'test/model-1' })
    expect(groq.requests).toHaveLength(6)
    expect(panic.status).toBe(529)
    expect(panic.body.error.metadata).toMatchObject({ error_type: 'provider_overloaded', provider_name: 'groq' })
  })

  it('is off with outlierDetection: false', async () => {
    const { alpha, beta } = await twoProviders({ outlierDetection: false, retry: { budget: false } })
    alpha.setHandler(overloaded)
    beta.setHandler(ok)
    for (let index = 0; index < 7; index++) await ask()
    expect(alpha.requests).toHaveLength(7)
  })
})

describe('a streamed request committed before every attempt failed', () => {
  it('ends in-band with response.failed carrying service_metadata, as a whole answer carries it', async () => {
    const { alpha, beta } = await twoProviders({ streamCommitAfterMs: 0, keepAliveMs: 60_000, outlierDetection: false })
    let release!: () => void
    const committed = new Promise<void>((resolve) => (release = resolve))
    // The first attempt fails only once the client holds the committed answer.
    alpha.setHandler(async () => {
      await committed
      return overloaded()
    })
    beta.setHandler(overloaded)
    const response = await harness!.post({ model: 'test/model', input: 'hi', stream: true }, { 'x-service-metadata': 'enabled' })
    expect(response.status).toBe(200)
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    expect(decoder.decode((await reader.read()).value).startsWith(': PROCESSING')).toBe(true)
    release()
    let rest = ''
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += decoder.decode(chunk.value)
    expect(rest.trim().endsWith('data: [DONE]')).toBe(true)
    const failedLine = rest.split('\n').find((line) => line.startsWith('data: {"type":"response.failed"'))!
    const failed = JSON.parse(failedLine.slice('data: '.length)).response
    expect(failed).toMatchObject({ status: 'failed', error_type: 'provider_overloaded' })
    expect(failed.service_metadata).toMatchObject({
      attempt: 2,
      strategy: 'fallback',
      summary: 'no endpoint succeeded after 2 attempts',
      endpoints: { total: 2 },
      requested: 'test/model',
    })
    expect(alpha.requests).toHaveLength(1)
    expect(beta.requests).toHaveLength(1)
  })
})

describe('the gateway clock', () => {
  it('dates whole and streamed responses (created_at, completed_at)', async () => {
    const clock = testClock()
    const { alpha } = await twoProviders({ now: clock.now })
    const expected = Math.floor(clock.now().getTime() / 1000)
    alpha.setHandler(ok)
    const whole = await ask()
    expect(whole.body).toMatchObject({ created_at: expected, completed_at: expected })
    alpha.setHandler(() => sseFixture('openai-chat', 'text.sse'))
    const streamed = await harness!.post({ model: 'test/model', input: 'hi', stream: true })
    const { events } = await readSseEvents(streamed)
    expect(events[0]!.data.response.created_at).toBe(expected)
    expect(events.at(-2)!.data.response).toMatchObject({ created_at: expected, completed_at: expected })
  })
})
