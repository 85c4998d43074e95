/** An upstream's `Retry-After` reaches the caller bounded, in whole seconds, from either RFC 9110 form. */

import { afterEach, describe, expect, it } from 'vitest'
import { boundedRetryAfter } from '../../../src/engine/retry-after'
import { parseRetryAfter } from '../../../src/providers/shared/retry-after'
import { createTestGateway, scriptedProvider, type TestGateway, type TestGatewayOptions } from '../../../src/testing'

const NOW = new Date('2026-03-01T12:00:00Z')

let harness: TestGateway | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

/** The Retry-After the caller gets when the provider answers 429 with `retryAfter` (and no delay in its message). */
const passedOn = async (retryAfter: string, options: TestGatewayOptions = {}) => {
  const limited = scriptedProvider({ reply: [{ type: 'http_error', status: 429, message: 'Rate limit reached for requests', retryAfter }] })
  harness = await createTestGateway({ providers: { limited }, now: () => NOW, ...options })
  const response = await harness.responses({ input: 'hi' })
  expect(response.status).toBe(429)
  return response.headers.get('retry-after')
}

describe('Retry-After passed on to callers', () => {
  it('bounds an absurd delay to 600 s by default', async () => {
    expect(await passedOn('1000000000000')).toBe('600')
  })

  it('bounds it to retry.maxRetryAfterSeconds when configured', async () => {
    expect(await passedOn('1000000000000', { retry: { maxRetryAfterSeconds: 30 } })).toBe('30')
  })

  it('reads the HTTP-date form against the gateway clock', async () => {
    expect(await passedOn(new Date(NOW.getTime() + 90_000).toUTCString())).toBe('90')
  })

  it('passes nothing for a date in the past, a negative or unreadable value', async () => {
    expect(await passedOn(new Date(NOW.getTime() - 90_000).toUTCString())).toBeNull()
    await harness!.close()
    expect(await passedOn('-5')).toBeNull()
    await harness!.close()
    expect(await passedOn('soon')).toBeNull()
  })

  it('rounds fractions up and passes small values unchanged', async () => {
    expect(await passedOn('7')).toBe('7')
    expect(boundedRetryAfter(0.2, 600)).toBe('1')
    expect(boundedRetryAfter(Number.NaN, 600)).toBeUndefined()
    expect(boundedRetryAfter(Number.POSITIVE_INFINITY, 600)).toBeUndefined()
    expect(parseRetryAfter('1.5', 0)).toBe(1.5)
    expect(parseRetryAfter(null, 0)).toBeUndefined()
  })
})
