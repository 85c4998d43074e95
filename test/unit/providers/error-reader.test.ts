import { describe, expect, it } from 'vitest'
import { readInBandError, readUpstreamError, type ErrorProfile } from '../../../src/providers/shared/error-reader'
import { classifyUpstreamError } from '../../../src/providers/shared/errors'
import { UpstreamFailure } from '../../../src/core/upstream-failure'
import { parseRetryAfter, retryAfterInMessage } from '../../../src/providers/shared/retry-after'

type TestError = { kind?: string; text?: string; waitSeconds?: number }

/** What the profile was asked to classify, so a test can see what the reader passed on. */
const classified: Array<{ status: number; error: TestError | undefined; message: string }> = []

/** A minimal wire format: `{problem: {kind, text, waitSeconds}}`; `kind: "broke"` is always a server fault. */
const testProfile: ErrorProfile<TestError> = {
  find: (body) => (body as { problem?: TestError } | null)?.problem,
  fields: (error) => ({ message: error.text, code: error.kind }),
  classify: (status, error, message) => {
    classified.push({ status, error, message })
    return error?.kind === 'broke' ? 'server' : classifyUpstreamError(status, message, error?.kind)
  },
  inBandStatus: (error) => (error?.kind === 'slow_down' ? 429 : 500),
  retryAfterSeconds: (error) => error?.waitSeconds,
  fallbackMessage: (status, isEmptyBody) => `Test upstream returned HTTP ${status}${isEmptyBody ? ' with an empty body' : ''}`,
}

const read = (status: number, bodyText: string, context?: Parameters<typeof readUpstreamError>[3]) => {
  classified.length = 0
  return readUpstreamError(testProfile, status, bodyText, context)
}

const NOW = Date.parse('2026-03-01T12:00:00Z')

describe('readUpstreamError', () => {
  it('reads the profile’s error object: message, provider code and class', () => {
    const failure = read(400, JSON.stringify({ problem: { kind: 'bad_field', text: 'field x is wrong' } }))
    expect(failure).toBeInstanceOf(UpstreamFailure)
    expect(failure).toMatchObject({ status: 400, message: 'field x is wrong', errorType: 'invalid_request', upstreamStatus: 400, providerCode: 'bad_field' })
    expect(failure.metadata).toEqual({ error_type: 'invalid_request', provider_code: 'bad_field' })
    expect(read(500, JSON.stringify({ problem: { kind: 'broke', text: 'oops' } })).errorType).toBe('server')
  })

  it('survives an empty or blank body with the profile’s fallback, classified by the status', () => {
    for (const body of ['', '  \n ']) {
      const failure = read(503, body)
      expect(failure).toMatchObject({ status: 529, message: 'Test upstream returned HTTP 503 with an empty body', errorType: 'provider_overloaded' })
      expect(failure.providerCode).toBeUndefined()
    }
  })

  it('quotes a plain-text body, and JSON that is not the profile’s shape, as the message', () => {
    expect(read(504, 'upstream request timeout\n')).toMatchObject({ status: 524, message: 'upstream request timeout', errorType: 'timeout' })
    expect(classified).toEqual([{ status: 504, error: undefined, message: 'upstream request timeout' }])
    expect(read(400, '{"detail":"nope"}')).toMatchObject({ message: '{"detail":"nope"}', errorType: 'invalid_request' })
    expect(read(400, '{"problem":{"kind":"bad_fi')).toMatchObject({ message: '{"problem":{"kind":"bad_fi', errorType: 'invalid_request' })
  })

  it('never quotes an HTML page, nor classifies on its words', () => {
    const page = '<html><head><title>403 Forbidden</title></head><body>Sorry, you have been blocked (safety)</body></html>'
    const failure = read(403, page)
    expect(failure).toMatchObject({ status: 403, message: 'Test upstream returned HTTP 403', errorType: 'permission_denied' })
    expect(read(502, '<!DOCTYPE html><p>Bad gateway</p>').message).toBe('Test upstream returned HTTP 502')
  })

  it('falls back when the error object has no message', () => {
    expect(read(429, JSON.stringify({ problem: { kind: 'slow_down', text: '   ' } }))).toMatchObject({ message: 'Test upstream returned HTTP 429', providerCode: 'slow_down' })
    expect(read(429, JSON.stringify({ problem: {} })).message).toBe('Test upstream returned HTTP 429')
  })

  it('caps a huge message at 500 characters but classifies on the whole of it', () => {
    const text = `${'blah '.repeat(400)}maximum context length exceeded`
    const failure = read(400, JSON.stringify({ problem: { text } }))
    expect(failure.message).toHaveLength(500)
    expect(text.startsWith(failure.message)).toBe(true)
    expect(failure.errorType).toBe('context_length_exceeded')
    expect(classified[0]!.message).toBe(text)
  })

  it('redacts every secret sent and anything key-like, even where the cap cuts through a key', () => {
    const secret = 'correct-horse-battery-staple'
    const failure = read(401, JSON.stringify({ problem: { kind: 'denied', text: `credential ${secret} refused; also saw sk-live0123456789abcdef` } }), { secrets: [secret] })
    expect(failure.message).toBe('credential [redacted] refused; also saw [redacted]')
    const key = 'sk-proj-0123456789abcdefghijklmnop'
    const straddling = read(401, `${'a'.repeat(495)} ${key}`)
    expect(straddling.message).toHaveLength(500)
    expect(straddling.message).not.toContain('sk-proj')
    expect(straddling.message.endsWith(' [red')).toBe(true)
  })

  it('takes the wait from a Retry-After header in seconds, before any delay the body names', () => {
    const body = JSON.stringify({ problem: { kind: 'slow_down', text: 'slow down', waitSeconds: 30 } })
    expect(read(429, body).retryAfterSeconds).toBe(30)
    expect(read(429, body, { headers: new Headers({ 'retry-after': '7' }), nowMs: NOW }).retryAfterSeconds).toBe(7)
    expect(read(429, '', { headers: new Headers({ 'retry-after': '1.5' }), nowMs: NOW }).retryAfterSeconds).toBe(1.5)
  })

  it('reads an HTTP-date Retry-After against the given clock, and ignores past or unreadable values', () => {
    const inNinety = new Headers({ 'retry-after': new Date(NOW + 90_000).toUTCString() })
    expect(read(503, '', { headers: inNinety, nowMs: NOW }).retryAfterSeconds).toBe(90)
    const past = new Headers({ 'retry-after': new Date(NOW - 90_000).toUTCString() })
    expect(read(503, '', { headers: past, nowMs: NOW }).retryAfterSeconds).toBeUndefined()
    expect(read(503, '', { headers: new Headers({ 'retry-after': 'soon' }), nowMs: NOW }).retryAfterSeconds).toBeUndefined()
    expect(read(503, '', { headers: new Headers({ 'retry-after': '-5' }), nowMs: NOW }).retryAfterSeconds).toBeUndefined()
  })
})

describe('readInBandError', () => {
  it('classifies with the status the profile says the error stands for, and records it', () => {
    const failure = readInBandError(testProfile, { kind: 'slow_down', text: 'too fast', waitSeconds: 4 }, 'The stream failed')
    expect(failure).toMatchObject({ status: 429, message: 'too fast', errorType: 'rate_limit_exceeded', upstreamStatus: 429, providerCode: 'slow_down', retryAfterSeconds: 4 })
  })

  it('falls back to the caller’s message for a missing or silent error', () => {
    expect(readInBandError(testProfile, null, 'The stream failed')).toMatchObject({ message: 'The stream failed', upstreamStatus: 500, errorType: 'provider_unavailable' })
    expect(readInBandError(testProfile, { kind: 'broke' }, 'The stream failed')).toMatchObject({ message: 'The stream failed', errorType: 'server' })
  })

  it('redacts key-like text', () => {
    expect(readInBandError(testProfile, { text: 'bad key sk-abcdefghijklmnop' }, 'x').message).toBe('bad key [redacted]')
  })
})

describe('retry delays', () => {
  it('reads the delay an error message names, in whole seconds', () => {
    expect(retryAfterInMessage('Please try again in 20ms.')).toBe(1)
    expect(retryAfterInMessage('Please try again in 2.5s.')).toBe(3)
    expect(retryAfterInMessage('Please try again in 1m30s.')).toBe(90)
    expect(retryAfterInMessage('Please try again in 114h18m0s.')).toBe(411_480)
    expect(retryAfterInMessage('Please try again in 5.63 s')).toBe(6)
    expect(retryAfterInMessage('Please retry after 6 seconds.')).toBe(6)
    expect(retryAfterInMessage('Rate limit reached for requests')).toBeUndefined()
    expect(retryAfterInMessage('try again in a minute')).toBeUndefined()
  })

  it('parses both Retry-After forms', () => {
    expect(parseRetryAfter('120', NOW)).toBe(120)
    expect(parseRetryAfter(new Date(NOW + 5_000).toUTCString(), NOW)).toBe(5)
    expect(parseRetryAfter(null, NOW)).toBeUndefined()
    expect(parseRetryAfter('0', NOW)).toBeUndefined()
  })
})
