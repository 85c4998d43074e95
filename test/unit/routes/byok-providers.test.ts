import { afterEach, describe, expect, it } from 'vitest'
import { silentLogger } from '../../../src/core/logger'
import { createTestGateway } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'
import { jsonFixture, startUpstream, type Upstream } from '../../helpers/upstream'

// Never called: the tests only store keys for it.
const SELF_HOSTED = { api: 'openai-chat', baseURL: 'http://127.0.0.1:9/v1', displayName: 'My vLLM' } as const

describe('POST /byok for the providers this gateway routes to', () => {
  it('accepts a provider the operator configured, named after its display name', async () => {
    const t = await createTestGateway({ logger: silentLogger, providers: { 'my-vllm': SELF_HOSTED } })
    const response = await t.call('POST', '/byok', { json: { provider: 'my-vllm', key: 'sk-self-hosted-0123456789abcdef' } })
    const body = await readJson(response)
    expect(response.status, JSON.stringify(body)).toBe(200)
    expect(body.data).toMatchObject({ provider: 'my-vllm', name: 'My vLLM key' })

    const listed = await readJson(await t.call('GET', '/byok?provider=my-vllm'))
    expect(listed.data.map((credential: { id: string }) => credential.id)).toEqual([body.data.id])
  })

  it('null as the name (which @openrouter/sdk allows) names it after the provider, on create and on update', async () => {
    const t = await createTestGateway({ logger: silentLogger, providers: { 'my-vllm': SELF_HOSTED } })
    const created = await readJson(await t.call('POST', '/byok', { json: { provider: 'my-vllm', key: 'sk-self-hosted-0123456789abcdef', name: null } }))
    expect(created.data.name).toBe('My vLLM key')
    const renamed = await readJson(await t.call('PATCH', `/byok/${created.data.id}`, { json: { name: 'Lab box' } }))
    expect(renamed.data.name).toBe('Lab box')
    const untouched = await readJson(await t.call('PATCH', `/byok/${created.data.id}`, { json: { disabled: true } }))
    expect(untouched.data).toMatchObject({ name: 'Lab box', disabled: true })
    const cleared = await t.call('PATCH', `/byok/${created.data.id}`, { json: { name: null } })
    expect(cleared.status).toBe(200)
    expect((await readJson(cleared)).data.name).toBe('My vLLM key')
  })

  it('still refuses a provider that is neither built in nor configured, naming the field and the rule, never the value', async () => {
    const t = await createTestGateway({ logger: silentLogger, providers: { 'my-vllm': SELF_HOSTED } })
    for (const provider of ['their-vllm', 'their-vllm/turbo']) {
      const response = await t.call('POST', '/byok', { json: { provider, key: 'sk-self-hosted-0123456789abcdef' } })
      expect({ status: response.status, body: await readJson(response) }).toEqual({
        status: 400,
        body: { error: { code: 400, message: 'body.provider: must be a provider this gateway routes to (GET /providers lists them)' } },
      })
    }
    const listed = await t.call('GET', '/byok?provider=their-vllm')
    expect(listed.status).toBe(400)
    expect((await readJson(listed)).error.message).toBe('query.provider: must be a provider this gateway routes to (GET /providers lists them)')
  })
})

describe('a BYOK key for a configured provider', () => {
  let upstream: Upstream | undefined
  afterEach(async () => {
    await upstream?.close()
    upstream = undefined
  })

  it('is the key routing sends to that provider when it has no shared key', async () => {
    upstream = await startUpstream(() => jsonFixture('openai-chat', 'text.json'))
    const t = await createTestGateway({
      logger: silentLogger,
      providers: { 'my-vllm': { api: 'openai-chat', baseURL: `${upstream.url}/v1` } },
      models: [{ slug: 'acme/local-7b', name: 'Local 7B', endpoints: [{ provider: 'my-vllm', model: 'local-7b', contextLength: 8_192, pricing: { prompt: 0, completion: 0 } }] }],
    })
    const rawKey = 'sk-self-hosted-0123456789abcdef'
    expect((await t.call('POST', '/byok', { json: { provider: 'my-vllm', key: rawKey } })).status).toBe(200)

    const response = await t.call('POST', '/chat/completions', { key: t.regularKey, json: { model: 'acme/local-7b', messages: [{ role: 'user', content: 'Hi' }] } })
    expect(response.status, await response.clone().text()).toBe(200)
    expect(upstream.requests.map((request) => request.headers.authorization)).toEqual([`Bearer ${rawKey}`])
  })
})
