/**
 * Every secret placed in an upstream request (headers, query, the raw BYOK key and, for Azure's JSON keys, each
 * inner `api_key`) is removed from whatever reaches the caller or the logs, whatever the secret looks like.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import type { UpstreamTransport } from '../../../src/transport/contract'
import { sentSecrets } from '../../../src/engine/sent-secrets'
import { azureOpenAIAdapter, openAIChatAdapter } from '../../../src/providers/openai-chat'
import { createRecordingLogger, type RecordingLogger } from '../../helpers/logger'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { fixture, type RecordedRequest, type UpstreamReply } from '../../helpers/upstream'

// Not shaped like any known key prefix, so the key-like pattern cannot be what hides them.
const RESOURCE_KEY = 'correct-horse-battery-staple-42'
const LEGACY_KEY = 'tr0ub4dor-and-3-more-words'

const MODEL = 'test/azure-model'
const MODELS: ModelEntry[] = [
  { slug: MODEL, name: 'Azure test model', endpoints: [{ provider: 'azure', model: 'gpt-4.1-mini', contextLength: 8192, pricing: { prompt: 0.000001, completion: 0.000002 } }] },
]

let harness: ResponsesHarness | undefined
let recorder: RecordingLogger
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

/** Azure with no shared key, its operator baseURL on loopback; the caller's workspace holds the BYOK key. */
const azureWithByok = async (key: unknown) => {
  recorder = createRecordingLogger()
  harness = await createResponsesHarness({ azure: { apiKey: null } }, { models: MODELS, logger: recorder.logger })
  await harness.addByok({ provider: 'azure', key: JSON.stringify(key) })
  return harness.upstreams.azure!
}

/** An upstream that quotes back the credential it received, as some providers' error messages do. */
const quoting = (status: number, quote: (request: RecordedRequest) => string) => (request: RecordedRequest): UpstreamReply => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ error: { code: String(status), message: `Access denied: ${quote(request)} is not valid here` } }),
})

const expectNoTrace = (text: string, secret: string) => {
  expect(text).not.toContain(secret)
  expect(recorder.text()).not.toContain(secret)
}

describe('secrets sent upstream never come back', () => {
  it('hides the inner api-key of an Azure resource credential that a 401 quotes', async () => {
    const azure = await azureWithByok([{ api_key: RESOURCE_KEY, resource_name: 'fabrikam', resource_type: 'openai' }])
    azure.setHandler(quoting(401, (request) => String(request.headers['api-key'])))
    const response = await harness!.post({ model: MODEL, input: 'hi' })
    const text = await response.text()
    expect(azure.requests[0]!.headers['api-key']).toBe(RESOURCE_KEY)
    // A refused BYOK key keeps its 401: it is the caller's key.
    expect(response.status).toBe(401)
    expect(JSON.parse(text).error).toMatchObject({ code: 401, message: 'Azure OpenAI: Access denied: [redacted] is not valid here' })
    expectNoTrace(text, RESOURCE_KEY)
  })

  it('hides the key of a legacy Azure deployment credential from answers and logs', async () => {
    const azure = await azureWithByok([
      {
        model_slug: MODEL,
        endpoint_url: 'https://contoso.openai.azure.com/openai/deployments/mini/chat/completions?api-version=2024-10-21',
        api_key: LEGACY_KEY,
        model_id: 'mini',
      },
    ])
    // A 5xx is logged with its cause; the message quotes both the header and the URL it was sent to.
    azure.setHandler(quoting(500, (request) => `${request.headers['api-key']} at ${request.url}`))
    const response = await harness!.post({ model: MODEL, input: 'hi' })
    const text = await response.text()
    expect(azure.requests[0]!.headers['api-key']).toBe(LEGACY_KEY)
    expect(response.status).toBe(502)
    expect(JSON.parse(text).error.message).toContain('Access denied: [redacted] at /openai/deployments/mini/chat/completions?api-version=2024-10-21')
    expect(recorder.entries.some((entry) => entry.level === 'error')).toBe(true)
    expectNoTrace(text, LEGACY_KEY)
  })

  it('hides the key from the logged cause of a transport error that quotes what it was sent', async () => {
    recorder = createRecordingLogger()
    // Deno: "error sending request for url (<url>): <reason>".
    const transport: UpstreamTransport = async (request) => {
      throw new TypeError(`error sending request for url (${request.url}) with api-key ${request.headers['api-key']}: connection refused`)
    }
    harness = await createResponsesHarness({ azure: { apiKey: null } }, { models: MODELS, logger: recorder.logger, transport })
    await harness.addByok({ provider: 'azure', key: JSON.stringify([{ model_slug: MODEL, endpoint_url: 'https://contoso.openai.azure.com/openai/deployments/mini/chat/completions?api-version=2024-10-21', api_key: LEGACY_KEY, model_id: 'mini' }]) })
    const response = await harness.post({ model: MODEL, input: 'hi' })
    const text = await response.text()
    expect(response.status).toBe(502)
    expect(JSON.parse(text).error.message).toBe('Azure OpenAI: Could not reach the provider')
    expect(recorder.text()).toContain('error sending request for url')
    expectNoTrace(text, LEGACY_KEY)
  })

  it('hides a key quoted by an in-band error after content, in response.failed', async () => {
    const azure = await azureWithByok([{ api_key: RESOURCE_KEY, resource_name: 'fabrikam', resource_type: 'openai' }])
    const lines = fixture('azure', 'text.sse').toString('utf8').split('\n\n').slice(0, 3)
    azure.setHandler((request) => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [...lines.map((line) => `${line}\n\n`), `data: {"error":{"message":"Quota exceeded for key ${request.headers['api-key']}","type":"server_error","code":null}}\n\n`],
    }))
    const response = await harness!.post({ model: MODEL, input: 'hi', stream: true })
    const { events, text } = await readSseEvents(response)
    const failed = events.at(-2)!.data
    expect(failed.type).toBe('response.failed')
    expect(failed.response.error.message).toContain('Quota exceeded for key [redacted]')
    expectNoTrace(text, RESOURCE_KEY)
  })
})

describe('sentSecrets', () => {
  const request = (url: string, headers: Record<string, string>) => ({ url, method: 'POST' as const, headers, body: '{}' })

  it('collects credential headers with and without their scheme, userinfo and credential query parameters', () => {
    const secrets = sentSecrets(
      request('https://user-name:pass%20word-123@upstream.test/v1?key=query-key-value&api-version=2024-10-21', {
        authorization: 'Bearer bearer-token-value',
        'x-goog-api-key': 'google-key-value',
        'content-type': 'application/json',
      }),
      'raw-credential-value',
      openAIChatAdapter,
    )
    for (const secret of ['raw-credential-value', 'Bearer bearer-token-value', 'bearer-token-value', 'google-key-value', 'query-key-value', 'pass word-123', 'user-name']) {
      expect(secrets).toContain(secret)
    }
    expect(secrets).not.toContain('application/json')
    expect(secrets).not.toContain('2024-10-21')
  })

  it("includes each inner api_key of an Azure JSON credential, and the forms an upstream may quote them in", () => {
    const raw = JSON.stringify([{ api_key: 'inner"key\\value', resource_name: 'fabrikam', resource_type: 'openai' }])
    const secrets = sentSecrets(request('https://fabrikam.test/', {}), raw, azureOpenAIAdapter)
    expect(secrets).toEqual(expect.arrayContaining([raw, 'inner"key\\value', 'inner\\"key\\\\value', encodeURIComponent('inner"key\\value')]))
  })
})
