/**
 * What the engine's session guarantees beyond the wire: a streamed request that fails before any content
 * carries the same `service_metadata` as a whole one, and the injected clock dates every response.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { GatewayOptions } from '../../../src/gateway/options'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture, sseFixture } from '../../helpers/upstream'
import { TWO_PROVIDERS } from '../../helpers/models'

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
