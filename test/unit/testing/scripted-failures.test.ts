/**
 * Scripted failures: HTTP errors before content (classified as a real provider's, Retry-After passed on, falling
 * back to the next provider), failures after content (in-band on a stream), and mistakes in the script itself.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, readEvents, scriptedProvider, type TestGateway, type TestGatewayOptions } from '../../../src/testing'

let testGateway: TestGateway | undefined
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

const start = async (options: TestGatewayOptions) => {
  testGateway = await createTestGateway(options)
  return testGateway
}

describe('an HTTP failure scripted before content', () => {
  it('answers 429 with the canonical type and the Retry-After the provider sent', async () => {
    const gateway = await start({ providers: { scripted: scriptedProvider({ reply: [{ type: 'http_error', status: 429, message: 'Slow down', retryAfter: 7 }] }) } })
    const response = await gateway.responses({ input: 'hi' })
    expect(response.status).toBe(429)
    expect(response.headers.get('retry-after')).toBe('7')
    expect(await response.json()).toEqual({
      error: { code: 429, message: 'scripted: Slow down', metadata: { error_type: 'rate_limit_exceeded', provider_name: 'scripted' } },
    })
  })

  it('takes the error type the script names over the status', async () => {
    const gateway = await start({
      providers: {
        scripted: scriptedProvider({ reply: [{ type: 'http_error', status: 400, errorType: 'context_length_exceeded', message: 'Too long' }], displayName: 'Scripted' }),
      },
    })
    const response = await gateway.responses({ input: 'hi', stream: true })
    expect(response.status).toBe(400)
    expect((await response.json()).error).toEqual({ code: 400, message: 'Scripted: Too long', metadata: { error_type: 'context_length_exceeded', provider_name: 'scripted' } })
  })

  it('falls back to the next scripted provider, whole and streamed, and the caller sees only the answer', async () => {
    const first = scriptedProvider({ reply: [{ type: 'http_error', status: 503 }] })
    const second = scriptedProvider({ reply: 'From the second' })
    const gateway = await start({ providers: { first, second } })
    const whole = await gateway.responses({ input: 'hi' }, { headers: { 'x-service-metadata': 'enabled' } })
    expect(await whole.json()).toMatchObject({
      output: [{ content: [{ text: 'From the second' }] }],
      service_metadata: { attempt: 2, summary: 'test/model via second on attempt 2 of 2' },
    })
    const events = await readEvents(await gateway.responses({ input: 'hi', stream: true }))
    expect(events.at(-1)).toMatchObject({ type: 'response.completed', response: { output: [{ content: [{ text: 'From the second' }] }] } })
    expect(first.calls.map((call) => call.stream)).toEqual([false, true])
    expect(second.calls.map((call) => call.stream)).toEqual([false, true])
  })
})

describe('a failure scripted after content', () => {
  it('ends a stream in-band with response.failed, after the content that came before', async () => {
    const gateway = await start({
      providers: { scripted: scriptedProvider({ reply: [{ type: 'text', text: 'Half' }, { type: 'error', errorType: 'provider_overloaded', message: 'Overloaded' }] }) },
    })
    const events = await readEvents(await gateway.responses({ input: 'hi', stream: true }))
    expect(events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta)).toEqual(['Half'])
    expect(events.at(-1)).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error: { code: 'server_error', message: 'scripted: Overloaded' }, error_type: 'provider_overloaded' },
    })
  })

  it('fails a whole answer, which then falls back like any failure before the answer is sent', async () => {
    const broken = scriptedProvider({ reply: [{ type: 'text', text: 'Half' }, { type: 'error', message: 'Broke off' }] })
    const gateway = await start({ providers: { broken } })
    const response = await gateway.responses({ input: 'hi' })
    expect(response.status).toBe(502)
    expect(await response.json()).toEqual({ error: { code: 502, message: 'broken: Broke off', metadata: { error_type: 'server', provider_name: 'broken' } } })
  })
})

describe('a scripted provider', () => {
  it('answers from its queue first, then its reply, and records each call', async () => {
    const model = scriptedProvider({ replies: ['one', 'two'], reply: (call) => `echo ${String(call.input)}` })
    const gateway = await start({ providers: { scripted: model } })
    const texts = []
    for (const input of ['a', 'b', 'c']) texts.push((await (await gateway.responses({ input })).json()).output[0].content[0].text)
    expect(texts).toEqual(['one', 'two', 'echo c'])
    expect(model.calls.map((call) => call.input)).toEqual(['a', 'b', 'c'])
  })

  it('fails a call past the end of its queue with a 502 that says so', async () => {
    const gateway = await start({ providers: { scripted: scriptedProvider({ replies: ['only one'] }) } })
    expect((await gateway.responses({ input: 'hi' })).status).toBe(200)
    const response = await gateway.responses({ input: 'hi' })
    expect(response.status).toBe(502)
    expect((await response.json()).error).toMatchObject({
      message: 'scripted: modelgate/testing: scripted provider "scripted" has no answer for call 2 (1 scripted, and no reply for the rest)',
      metadata: { error_type: 'provider_unavailable' },
    })
  })

  it('reports a mistake in an answer made by a function as the provider failure', async () => {
    const model = scriptedProvider({ reply: () => [{ type: 'text', text: 'late' }, { type: 'http_error', status: 500 }] })
    const gateway = await start({ providers: { scripted: model } })
    const response = await gateway.responses({ input: 'hi' })
    expect(response.status).toBe(502)
    expect((await response.json()).error.message).toBe(
      'scripted: modelgate/testing: step 1 (http_error) must come before any content; use an error step for a failure mid-answer',
    )
  })

  it('refuses a fixed answer with a mistake when it is made', () => {
    expect(() => scriptedProvider({ reply: [{ type: 'function_call_arguments', arguments: '{}' }] })).toThrow(
      new TypeError('modelgate/testing: step 0 (function_call_arguments) needs a function_call before it'),
    )
    expect(() => scriptedProvider({ replies: [[{ type: 'error', message: 'x' }, { type: 'text', text: 'after' }]] })).toThrow(
      new TypeError('modelgate/testing: step 1 (text) comes after the answer ended with error'),
    )
    expect(() => scriptedProvider({ reply: [{ type: 'http_error', status: 200 }] })).toThrow(new TypeError('modelgate/testing: http_error status must be 400 to 599, got 200'))
    expect(() => scriptedProvider({ reply: [{ type: 'error', message: 'x', errorType: 'nope' as never }] })).toThrow(/errorType "nope" is not one of context_length_exceeded, /)
    expect(() => scriptedProvider({ reply: [{ type: 'usage', inputTokens: 1.5 }] })).toThrow(
      new TypeError('modelgate/testing: usage.inputTokens must be a whole number of tokens, got 1.5'),
    )
    expect(() => scriptedProvider({ reply: [{ type: 'wait', ms: -1 }] })).toThrow(new TypeError('modelgate/testing: step 0 (wait) needs ms >= 0 or a promise in until'))
  })
})
