/**
 * Redirects carry provider keys: an upstream answering 3xx must not be followed to another origin (here a second
 * loopback server on another port), on any transport, and the caller gets a clean provider error without the key.
 */

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { TRANSPORTS, useTransport } from '../../helpers/transports'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import { startUpstream, type Upstream } from '../../helpers/upstream'

const SHARED_KEY = 'sk-ant-shared-redirect-0123456789abcdef'


describe.each(TRANSPORTS)('upstream redirects (%s transport)', (_name, makeTransport) => {
  const transport = useTransport(makeTransport)
  let elsewhere: Upstream
  let harness: ResponsesHarness | undefined

  beforeAll(async () => {
    elsewhere = await startUpstream(() => ({ status: 200, body: 'should never be asked' }))
  })
  afterAll(async () => {
    await elsewhere.close()
  })
  afterEach(async () => {
    await harness?.close()
    harness = undefined
  })

  for (const status of [301, 302, 303, 307, 308]) {
    for (const stream of [false, true]) {
      it(`${status}, ${stream ? 'streamed' : 'whole'}: not followed, a 502 naming the redirect, no key in it`, async () => {
        harness = await createResponsesHarness({ anthropic: { apiKey: SHARED_KEY } }, transport.options())
        const upstream = harness.upstreams.anthropic!
        upstream.setHandler(() => ({ status, headers: { location: `${elsewhere.url}/v1/messages` }, body: '' }))

        const response = await harness.post({ model: 'anthropic/claude-sonnet-4.5', input: 'hi', stream })

        expect(response.status).toBe(502)
        const text = await response.text()
        expect(JSON.parse(text)).toEqual({
          error: {
            code: 502,
            message: `Anthropic: The provider answered with a redirect (${status}), which the gateway does not follow`,
            metadata: { error_type: 'provider_unavailable', provider_name: 'anthropic' },
          },
        })
        expect(text).not.toContain(SHARED_KEY)
        expect(text).not.toContain(elsewhere.url)
        expect(upstream.requests).toHaveLength(1)
        expect(elsewhere.requests).toHaveLength(0)
      })
    }
  }

  it('a redirect is a failure before content: the next endpoint still answers', async () => {
    harness = await createResponsesHarness({ anthropic: { apiKey: SHARED_KEY }, openai: {} }, transport.options())
    harness.upstreams.anthropic!.setHandler(() => ({ status: 307, headers: { location: `${elsewhere.url}/v1/messages` }, body: '' }))
    harness.upstreams.openai!.setHandler(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'resp_1',
        object: 'response',
        status: 'completed',
        output: [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello', annotations: [] }] }],
        usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
      }),
    }))

    const response = await harness.post({ model: 'anthropic/claude-sonnet-4.5', models: ['openai/gpt-4.1'], input: 'hi' })

    expect(response.status).toBe(200)
    expect(((await response.json()) as { model: string }).model).toBe('openai/gpt-4.1')
    expect(elsewhere.requests).toHaveLength(0)
  })
})
