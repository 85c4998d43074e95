/**
 * `createTestGateway` and the seam under it: keys ready, calls recorded for assertions, BYOK through scripted
 * providers, scripted providers beside ordinary ones, and the `adapter` option of a provider.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createGateway } from '../../../src/gateway/gateway'
import { createTestGateway, scriptedProvider, withScriptedProviders, TEST_MODEL, type TestGateway } from '../../../src/testing'
import { scriptedAdapter } from '../../../src/testing/scripted-adapter'
import { startUpstream, jsonFixture, type Upstream } from '../../helpers/upstream'

let testGateway: TestGateway | undefined
let upstream: Upstream | undefined
afterEach(async () => {
  await testGateway?.close()
  await upstream?.close()
  testGateway = upstream = undefined
})

describe('createTestGateway', () => {
  it('has the default account with a management and a regular key ready', async () => {
    testGateway = await createTestGateway()
    const keys = await testGateway.call('GET', '/keys')
    expect(keys.status).toBe(200)
    expect((await keys.json()).data.map((key: { hash: string }) => key.hash)).toContain(testGateway.regularKeyHash)
    const workspace = await testGateway.call('GET', `/workspaces/${testGateway.defaultWorkspaceId}`)
    expect((await workspace.json()).data).toMatchObject({ id: testGateway.defaultWorkspaceId, default_text_model: 'openai/gpt-4.1-mini' })
    const asRegular = await testGateway.call('GET', '/keys', { key: testGateway.regularKey })
    expect(asRegular.status).toBe(403)
    const anonymous = await testGateway.call('GET', '/keys', { key: null })
    expect(anonymous.status).toBe(401)
  })

  it('serves fetch-shaped calls (a URL and init) on its base URL, as SDK clients make them', async () => {
    testGateway = await createTestGateway({ providers: { scripted: scriptedProvider({ reply: 'Hi' }) }, basePath: '/ai/' })
    expect(testGateway.baseURL).toBe('http://modelgate.test/ai')
    const response = await testGateway.fetch(`${testGateway.baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${testGateway.regularKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: TEST_MODEL, input: 'hi' }),
    })
    expect(response.status).toBe(200)
    expect((await response.json()).model).toBe(TEST_MODEL)
  })

  it('records what the model was asked: model, input, tools, stream flag, key, and never the raw user', async () => {
    const model = scriptedProvider({ reply: 'ok' })
    testGateway = await createTestGateway({ providers: { scripted: model } })
    const tools = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: {} } }]
    const input = [{ type: 'message', role: 'user', content: 'Weather in Paris?' }]
    await testGateway.responses({ input, tools, instructions: 'Be brief', user: 'alice@example.com', stream: true })
    const call = model.lastCall!
    expect(call).toMatchObject({ provider: 'scripted', model: 'test-model', input, tools, stream: true, apiKey: 'scripted-shared-key' })
    expect(call.request.instructions).toBe('Be brief')
    expect(call.request).not.toHaveProperty('user')
    expect(call.endUserId).toMatch(/^mg_/)
    expect(JSON.stringify(call)).not.toContain('alice@example.com')
  })

  it('resolves nextCall with the call the gateway makes next', async () => {
    const model = scriptedProvider({ reply: 'ok' })
    testGateway = await createTestGateway({ providers: { scripted: model } })
    const next = model.nextCall()
    await testGateway.responses({ input: 'first' })
    expect((await next).input).toBe('first')
  })

  // BYOK credentials name built-in providers only, so the scripted provider takes a built-in id.
  it('calls a scripted provider without a shared key with the caller BYOK key', async () => {
    const model = scriptedProvider({ reply: 'with your key', apiKey: null })
    testGateway = await createTestGateway({ providers: { groq: model } })
    expect((await testGateway.responses({ input: 'hi' })).status).toBe(404)
    const stored = await testGateway.call('POST', '/byok', { json: { provider: 'groq', key: 'byok-key-0123456789abcdef' } })
    expect(stored.status).toBe(200)
    const response = await testGateway.responses({ input: 'hi' })
    expect(await response.json()).toMatchObject({ output: [{ content: [{ text: 'with your key' }] }], usage: { is_byok: true } })
    expect(model.calls.map((call) => call.apiKey)).toEqual(['byok-key-0123456789abcdef'])
  })

  it('keeps ordinary providers beside scripted ones, on the transport given', async () => {
    upstream = await startUpstream(() => jsonFixture('openai-chat', 'text.json'))
    const scripted = scriptedProvider({ reply: 'scripted' })
    testGateway = await createTestGateway({
      providers: { scripted, real: { api: 'openai-chat', baseURL: upstream.url, apiKey: 'sk-real-0123456789' } },
      models: [{ slug: 'test/real', name: 'Real', endpoints: [{ provider: 'real', model: 'real-model', contextLength: 8192, pricing: { prompt: 0, completion: 0 } }] }],
    })
    expect((await (await testGateway.responses({ model: 'test/real', input: 'hi' })).json()).status).toBe('completed')
    expect(upstream.requests.map((request) => request.json.model)).toEqual(['real-model'])
    expect((await (await testGateway.responses({ input: 'hi' })).json()).output[0].content[0].text).toBe('scripted')
  })
})

describe('a provider with its own adapter', () => {
  it('is refused at start when the adapter does not implement the contract, or disagrees with api', () => {
    expect(() => createGateway({ logger: false, providers: { mine: { adapter: { contractVersion: 1 } as never, baseURL: 'http://127.0.0.1:1' } } })).toThrow(
      'options.providers.mine.adapter: must implement the provider contract: contractVersion 1, api, buildRequest, readResult, readStream and toError',
    )
    expect(() => createGateway({ logger: false, providers: { mine: { adapter: scriptedAdapter, api: 'openai-chat', baseURL: 'http://127.0.0.1:1' } } })).toThrow(
      'modelgate: provider "mine" names api "openai-chat" but its adapter speaks "modelgate-scripted"; give one of them',
    )
    expect(() => createGateway({ logger: false, providers: { mine: { adapter: scriptedAdapter } } })).toThrow(
      'modelgate: provider "mine" is not built in, so it needs a baseURL',
    )
  })

  it('replaces a built-in provider adapter, and withScriptedProviders builds createGateway options', async () => {
    const openai = scriptedProvider({ reply: 'not really OpenAI' })
    const gateway = createGateway(
      withScriptedProviders({ logger: false, providers: { openai }, models: [{ slug: 'openai/gpt-4.1-mini', name: 'Mini', endpoints: [{ provider: 'openai', model: 'gpt-4.1-mini', contextLength: 8192, pricing: { prompt: 0, completion: 0 } }] }] }),
    )
    const { key } = await gateway.admin.createKey({ kind: 'regular' })
    const response = await gateway.fetch(
      new Request('http://modelgate.test/api/v1/responses', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'openai/gpt-4.1-mini', input: 'hi' }),
      }),
    )
    expect((await response.json()).output[0].content[0].text).toBe('not really OpenAI')
    expect(openai.lastCall).toMatchObject({ provider: 'openai', model: 'gpt-4.1-mini' })
    await gateway.close()
  })
})
