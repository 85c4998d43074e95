import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { UpstreamCall, UpstreamTarget } from '../../../src/providers/contract'
import { azureOpenAIAdapter, openAIChatAdapter } from '../../../src/providers/openai-chat'
import { AZURE_API_VERSION } from '../../../src/providers/openai-chat/azure'
import { UpstreamFailure } from '../../../src/core/upstream-failure'
import { AZURE_DESTINATION } from '../../../src/providers/azure/credentials'
import { DestinationRefusedError, createUpstreamGuard } from '../../../src/core/upstream-guard'
import type { OutputItem, ResponsesRequest } from '../../../src/providers/types'
import { assertValidEventSequence, chunked, collect } from '../../helpers/stream-events'
import { fixture, jsonFixture, sseFixture, startUpstream, type Upstream } from '../../helpers/upstream'

const KEY = '3f1c9a7e5b2d4c6a8e0f1b3d5c7a9e2f'

type Event = { type: string } & Record<string, any>

const callOf = (request: Partial<ResponsesRequest> = {}, extra: Partial<UpstreamCall> = {}): UpstreamCall => ({
  request: { model: 'openai/gpt-4.1-mini', input: 'Hi', ...request },
  upstreamModel: 'gpt-4.1-mini',
  stream: false,
  ...extra,
})

const plain = (options: Record<string, string>, baseURL = ''): UpstreamTarget => ({ baseURL, apiKey: KEY, options })

const byok = (entries: unknown[], baseURL = '', options?: Record<string, string>): UpstreamTarget => ({
  baseURL,
  apiKey: JSON.stringify(entries),
  ...(options ? { options } : {}),
})

const withoutIds = (items: OutputItem[]) => items.map(({ id: _id, ...rest }) => rest)

const doneItems = (events: Event[]) =>
  events
    .filter((event) => event.type === 'response.output_item.done')
    .sort((left, right) => left.output_index - right.output_index)
    .map((event) => event.item as OutputItem)

const json = (name: string) => JSON.parse(fixture('azure', name).toString('utf8'))

const failureOf = (call: UpstreamCall, target: UpstreamTarget): UpstreamFailure => {
  try {
    azureOpenAIAdapter.buildRequest(call, target)
  } catch (error) {
    return error as UpstreamFailure
  }
  throw new Error('buildRequest did not throw')
}

describe('azureOpenAIAdapter.buildRequest', () => {
  it('builds the deployment URL from a plain key, resource name and deployment', () => {
    const request = azureOpenAIAdapter.buildRequest(
      callOf({ max_output_tokens: 100, text: { verbosity: 'low' } }),
      plain({ resourceName: 'contoso', deployment: 'gpt41-prod' }),
    )
    expect(request.url).toBe(`https://contoso.openai.azure.com/openai/deployments/gpt41-prod/chat/completions?api-version=${AZURE_API_VERSION}`)
    expect(request.headers).toEqual({ 'content-type': 'application/json', accept: 'application/json', 'api-key': KEY })
    expect(JSON.parse(request.body)).toEqual({
      model: 'gpt41-prod',
      messages: [{ role: 'user', content: 'Hi' }],
      max_completion_tokens: 100,
      verbosity: 'low',
    })
  })

  it('uses the upstream model as the deployment and honours apiVersion', () => {
    const request = azureOpenAIAdapter.buildRequest(callOf(), plain({ resourceName: 'contoso', apiVersion: '2025-04-01-preview' }))
    expect(request.url).toBe('https://contoso.openai.azure.com/openai/deployments/gpt-4.1-mini/chat/completions?api-version=2025-04-01-preview')
  })

  it('uses the v1 API for AI Foundry resources and for apiVersion v1', () => {
    const foundry = azureOpenAIAdapter.buildRequest(callOf({}, { stream: true }), plain({ resourceName: 'contoso', resourceType: 'ai_foundry' }))
    expect(foundry.url).toBe('https://contoso.services.ai.azure.com/openai/v1/chat/completions')
    expect(foundry.headers.accept).toBe('text/event-stream')
    expect(JSON.parse(foundry.body)).toMatchObject({ model: 'gpt-4.1-mini', stream: true, stream_options: { include_usage: true } })
    const v1 = azureOpenAIAdapter.buildRequest(callOf(), plain({ resourceName: 'contoso', apiVersion: 'v1' }))
    expect(v1.url).toBe('https://contoso.openai.azure.com/openai/v1/chat/completions')
  })

  it('reads resource credentials from BYOK JSON', () => {
    const request = azureOpenAIAdapter.buildRequest(callOf(), byok([{ api_key: 'resource-key-1', resource_name: 'fabrikam', resource_type: 'openai' }]))
    expect(request.url).toBe(`https://fabrikam.openai.azure.com/openai/deployments/gpt-4.1-mini/chat/completions?api-version=${AZURE_API_VERSION}`)
    expect(request.headers['api-key']).toBe('resource-key-1')
    const foundry = azureOpenAIAdapter.buildRequest(callOf(), byok([{ api_key: 'resource-key-2', resource_name: 'fabrikam', resource_type: 'ai_foundry' }]))
    expect(foundry.url).toBe('https://fabrikam.services.ai.azure.com/openai/v1/chat/completions')
  })

  const legacy = [
    {
      model_slug: 'openai/gpt-4o',
      endpoint_url: 'https://west.openai.azure.com/openai/deployments/gpt4o-west/chat/completions?api-version=2024-08-01-preview',
      api_key: 'legacy-key-4o',
      model_id: 'gpt4o-west',
    },
    {
      model_slug: 'openai/gpt-4.1-mini',
      endpoint_url: 'https://east.openai.azure.com/openai/deployments/mini-east/chat/completions?api-version=2024-10-21',
      api_key: 'legacy-key-mini',
      model_id: 'mini-east',
    },
    { api_key: 'resource-key', resource_name: 'fallback', resource_type: 'openai' },
  ]

  it('picks the legacy entry of the requested model and uses its endpoint as is', () => {
    const request = azureOpenAIAdapter.buildRequest(callOf(), byok(legacy))
    expect(request.url).toBe('https://east.openai.azure.com/openai/deployments/mini-east/chat/completions?api-version=2024-10-21')
    expect(request.headers['api-key']).toBe('legacy-key-mini')
    expect(JSON.parse(request.body).model).toBe('mini-east')
  })

  it('falls back to the resource entry when no legacy entry matches', () => {
    const request = azureOpenAIAdapter.buildRequest(callOf({ model: 'openai/o4-mini' }, { upstreamModel: 'o4-mini' }), byok(legacy))
    expect(request.url).toBe(`https://fallback.openai.azure.com/openai/deployments/o4-mini/chat/completions?api-version=${AZURE_API_VERSION}`)
    expect(request.headers['api-key']).toBe('resource-key')
  })

  it('completes legacy endpoints given without the chat path', () => {
    const request = azureOpenAIAdapter.buildRequest(
      callOf(),
      byok([{ model_slug: 'openai/gpt-4.1-mini', endpoint_url: 'https://east.openai.azure.com/openai/v1/', api_key: 'k', model_id: 'mini-east' }]),
    )
    expect(request.url).toBe('https://east.openai.azure.com/openai/v1/chat/completions')
  })

  it('lets a configured baseURL win over the resource-derived host', () => {
    const loopback = 'http://127.0.0.1:4010'
    const fromResource = azureOpenAIAdapter.buildRequest(
      callOf(),
      byok([{ api_key: 'resource-key', resource_name: 'fabrikam', resource_type: 'openai' }], loopback),
    )
    expect(fromResource.url).toBe(`${loopback}/openai/deployments/gpt-4.1-mini/chat/completions?api-version=${AZURE_API_VERSION}`)
    expect(fromResource.headers['api-key']).toBe('resource-key')
    expect(azureOpenAIAdapter.buildRequest(callOf(), byok(legacy, loopback)).url).toBe(
      `${loopback}/openai/deployments/mini-east/chat/completions?api-version=2024-10-21`,
    )
    expect(azureOpenAIAdapter.buildRequest(callOf(), plain({ resourceType: 'ai_foundry', resourceName: 'x' }, loopback)).url).toBe(
      `${loopback}/openai/v1/chat/completions`,
    )
    expect(azureOpenAIAdapter.buildRequest(callOf(), plain({}, 'https://gw.example.com/azure/openai/v1')).url).toBe(
      'https://gw.example.com/azure/openai/v1/chat/completions',
    )
    expect(azureOpenAIAdapter.buildRequest(callOf(), plain({}, 'https://contoso.openai.azure.com/openai/deployments/fixed')).url).toBe(
      `https://contoso.openai.azure.com/openai/deployments/fixed/chat/completions?api-version=${AZURE_API_VERSION}`,
    )
    expect(azureOpenAIAdapter.buildRequest(callOf(), plain({}, 'https://contoso.openai.azure.com/openai')).url).toBe(
      `https://contoso.openai.azure.com/openai/deployments/gpt-4.1-mini/chat/completions?api-version=${AZURE_API_VERSION}`,
    )
  })

  it('rebuilds a legacy endpoint from its deployment and api-version: no caller path or query goes out', () => {
    const entry = (endpoint_url: string) => byok([{ model_slug: 'openai/gpt-4.1-mini', endpoint_url, api_key: 'k', model_id: 'mini-east' }])
    const operator = (endpoint_url: string) =>
      byok([{ model_slug: 'openai/gpt-4.1-mini', endpoint_url, api_key: 'k', model_id: 'mini-east' }], 'http://127.0.0.1:4010')
    expect(azureOpenAIAdapter.buildRequest(callOf(), entry('https://east.openai.azure.com/internal/admin?api-version=2024-08-01-preview&x=1')).url).toBe(
      'https://east.openai.azure.com/openai/deployments/mini-east/chat/completions?api-version=2024-08-01-preview',
    )
    // `..` is resolved by URL parsing before the deployment is read, so it climbs nowhere.
    expect(azureOpenAIAdapter.buildRequest(callOf(), operator('https://east.openai.azure.com/openai/deployments/../../admin/chat/completions')).url).toBe(
      `http://127.0.0.1:4010/openai/deployments/mini-east/chat/completions?api-version=${AZURE_API_VERSION}`,
    )
    expect(azureOpenAIAdapter.buildRequest(callOf(), operator('https://east.openai.azure.com/openai/deployments/dep/chat/completions?api-version=../../x')).url).toBe(
      `http://127.0.0.1:4010/openai/deployments/dep/chat/completions?api-version=${AZURE_API_VERSION}`,
    )
    expect(() => azureOpenAIAdapter.buildRequest(callOf(), operator('https://east.openai.azure.com/openai/deployments/a%2F..%2F..%2Fadmin/chat/completions'))).toThrow(
      DestinationRefusedError,
    )
  })

  it('marks hosts that came from the credential, and only those, as the caller\'s', () => {
    const resource = [{ api_key: 'resource-key', resource_name: 'fabrikam', resource_type: 'openai' }]
    expect(azureOpenAIAdapter.buildRequest(callOf(), byok(resource)).callerDestination).toEqual(AZURE_DESTINATION)
    expect(azureOpenAIAdapter.buildRequest(callOf(), byok(legacy)).callerDestination).toEqual(AZURE_DESTINATION)
    expect(azureOpenAIAdapter.buildRequest(callOf(), byok(legacy, 'http://127.0.0.1:4010')).callerDestination).toBeUndefined()
    expect(azureOpenAIAdapter.buildRequest(callOf(), plain({ resourceName: 'contoso' })).callerDestination).toBeUndefined()
  })

  it('speaks the OpenAI dialect but sends developer messages as system unless configured', () => {
    const call = callOf({ input: [{ type: 'message', role: 'developer', content: 'Terse.' }], reasoning: { effort: 'max' } })
    const body = JSON.parse(azureOpenAIAdapter.buildRequest(call, plain({ resourceName: 'contoso' })).body)
    expect(body.messages).toEqual([{ role: 'system', content: 'Terse.' }])
    expect(body.reasoning_effort).toBe('xhigh')
    const developer = JSON.parse(azureOpenAIAdapter.buildRequest(call, plain({ resourceName: 'contoso', developerRole: 'true' })).body)
    expect(developer.messages).toEqual([{ role: 'developer', content: 'Terse.' }])
  })

  it('refuses broken credentials and missing endpoints without echoing the key', () => {
    const broken = failureOf(callOf(), { baseURL: '', apiKey: '[{"api_key":"secret-value-123"' })
    expect(broken).toBeInstanceOf(UpstreamFailure)
    expect(broken.errorType).toBe('authentication')
    expect(broken.message).not.toContain('secret-value-123')
    const unmatched = failureOf(callOf(), byok([legacy[0]]))
    expect(unmatched.errorType).toBe('not_found')
    const nowhere = failureOf(callOf(), plain({}))
    expect(nowhere.errorType).toBe('provider_unavailable')
  })
})

describe('azureOpenAIAdapter results and streams', () => {
  it('reads a non-streaming body with content filter annotations', () => {
    const result = azureOpenAIAdapter.readResult(json('text.json'), callOf())
    const openAI = openAIChatAdapter.readResult(JSON.parse(fixture('openai-chat', 'text.json').toString('utf8')), callOf())
    expect(withoutIds(result.output)).toEqual(withoutIds(openAI.output))
    expect(result.usage).toEqual(openAI.usage)
  })

  for (const size of [1, 7]) {
    it(`skips the prompt-filter preamble and streams the same items in ${size}-byte chunks`, async () => {
      const events: Event[] = await collect(azureOpenAIAdapter.readStream(chunked(fixture('azure', 'text.sse'), size), callOf({}, { stream: true })))
      assertValidEventSequence(events)
      const result = azureOpenAIAdapter.readResult(json('text.json'), callOf())
      expect(withoutIds(doneItems(events))).toEqual(withoutIds(result.output))
      expect(events.slice(-2)).toEqual([
        { type: 'upstream.usage', usage: result.usage },
        { type: 'upstream.finish', status: 'completed', incompleteDetails: null },
      ])
    })
  }

  it('marks output cut by the content filter as incomplete', () => {
    const result = azureOpenAIAdapter.readResult(json('content-filter.json'), callOf())
    expect(result.status).toBe('incomplete')
    expect(result.incompleteDetails).toEqual({ reason: 'content_filter' })
    expect(result.output).toMatchObject([{ type: 'message', status: 'incomplete', content: [{ text: 'The duel began at dawn, and' }] }])
  })
})

describe('azureOpenAIAdapter.toError', () => {
  const errorOf = (status: number, name: string) => azureOpenAIAdapter.toError(status, fixture('azure', name).toString('utf8')) as UpstreamFailure

  it.each([
    [400, 'error-400-content-filter.json', 400, 'content_policy_violation'],
    [401, 'error-401.json', 401, 'authentication'],
    [429, 'error-429.json', 429, 'rate_limit_exceeded'],
    [404, 'error-404-deployment.json', 404, 'not_found'],
  ])('maps HTTP %i %s to %i %s', (status, name, clientStatus, errorType) => {
    const error = errorOf(status, name)
    expect(error.status).toBe(clientStatus)
    expect(error.metadata).toMatchObject({ error_type: errorType })
  })

  it('reads the retry delay and the Azure code', () => {
    const limited = errorOf(429, 'error-429.json')
    expect(limited.retryAfterSeconds).toBe(6)
    expect(limited.providerCode).toBe('429')
    expect(errorOf(404, 'error-404-deployment.json').providerCode).toBe('DeploymentNotFound')
    expect(errorOf(400, 'error-400-content-filter.json').message).toMatch(/^The response was filtered/)
  })
})

describe('azureOpenAIAdapter against a loopback upstream', () => {
  let upstream: Upstream
  beforeAll(async () => {
    upstream = await startUpstream()
  })
  afterAll(() => upstream.close())

  const send = async (call: UpstreamCall) => {
    const target = byok([{ api_key: 'resource-key', resource_name: 'fabrikam', resource_type: 'openai' }], upstream.url)
    const request = azureOpenAIAdapter.buildRequest(call, target)
    return fetch(request.url, { method: request.method, headers: request.headers, body: request.body })
  }

  it('sends the request to the loopback host and streams the reply', async () => {
    upstream.setHandler(() => sseFixture('azure', 'text.sse', 5))
    const response = await send(callOf({}, { stream: true }))
    const recorded = upstream.requests.at(-1)!
    expect(recorded.url).toBe(`/openai/deployments/gpt-4.1-mini/chat/completions?api-version=${AZURE_API_VERSION}`)
    expect(recorded.headers['api-key']).toBe('resource-key')
    expect(recorded.json).toMatchObject({ model: 'gpt-4.1-mini', stream: true })
    const events: Event[] = await collect(azureOpenAIAdapter.readStream(response.body as unknown as AsyncIterable<Uint8Array>, callOf({}, { stream: true })))
    assertValidEventSequence(events)
    expect(doneItems(events)[0]).toMatchObject({ content: [{ text: 'Bonjour ! 👋 Hello! How can I help you today?' }] })
  })

  it('turns an error reply into an UpstreamFailure', async () => {
    upstream.setHandler(() => jsonFixture('azure', 'error-429.json', 429))
    const response = await send(callOf())
    const error = azureOpenAIAdapter.toError(response.status, await response.text()) as UpstreamFailure
    expect(error.errorType).toBe('rate_limit_exceeded')
  })
})

describe('azureOpenAIAdapter.credential', () => {
  const credential = azureOpenAIAdapter.credential!
  const guard = createUpstreamGuard()
  const resource = { api_key: 'resource-key-0123456789', resource_name: 'contoso', resource_type: 'openai' }
  const legacy = (endpoint_url: string) => ({ model_slug: 'openai/gpt-4.1-mini', endpoint_url, api_key: 'legacy-key-0123456789', model_id: 'mini' })

  it('accepts a JSON list of resources or deployments, its first api_key standing for it in the label', () => {
    expect(credential.check(JSON.stringify([resource, legacy('https://east.openai.azure.com/openai/deployments/mini')]), guard)).toEqual({
      ok: true,
      labelled: 'resource-key-0123456789',
    })
  })

  it('refuses anything else with the message BYOK has always given, quoting nothing of the key', () => {
    const refusal = {
      ok: false,
      reason: 'an Azure key must be a JSON array of {api_key, resource_name, resource_type} or {model_slug, endpoint_url, api_key, model_id}',
    }
    for (const key of [KEY, '[]', '{}', JSON.stringify([{ ...resource, resource_type: 'bogus' }])]) expect(credential.check(key, guard)).toEqual(refusal)
  })

  it("refuses a legacy endpoint the operator's guard refuses, naming the entry", () => {
    const key = JSON.stringify([resource, legacy('http://east.openai.azure.com/openai/deployments/mini')])
    expect(credential.check(key, guard)).toEqual({ ok: false, path: '1.endpoint_url', reason: 'must use https' })
  })

  it('names each inner api_key as a secret of its own, and none in a plain key', () => {
    expect(credential.innerSecrets(JSON.stringify([resource, legacy('https://east.openai.azure.com/openai/v1')]))).toEqual([
      'resource-key-0123456789',
      'legacy-key-0123456789',
    ])
    expect(credential.innerSecrets(KEY)).toEqual([])
  })

  it('is Azure\'s alone: the Chat Completions adapter sends a key as it is', () => {
    expect(openAIChatAdapter.credential).toBeUndefined()
  })
})
