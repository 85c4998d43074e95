/**
 * The catalog routes (`GET /models`, `GET /models/{author}/{slug}/endpoints`, `GET /providers`) read
 * by the clients that call them: `@openrouter/sdk`, whose zod schemas reject a response of the wrong
 * shape, and the `openai` SDK's `models.list`, over a real node:http server.
 */

import { OpenRouter } from '@openrouter/sdk'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BUILT_IN_MODELS } from '../../src/engine/models'
import { createSdkHarness } from '../helpers/sdk-gateway'

const harness = createSdkHarness()
let url: string
let key: string
let openRouter: OpenRouter

beforeAll(async () => {
  await harness.start()
  ;({ url, key } = await harness.startGateway({
    providers: { 'my-vllm': { api: 'openai-chat', baseURL: 'http://127.0.0.1:9/v1', displayName: 'My vLLM' } },
    models: [{ slug: 'acme/local-7b', name: 'Local 7B', endpoints: [{ provider: 'my-vllm', model: 'local-7b', contextLength: 8_192, pricing: { prompt: 0, completion: 0 } }] }],
  }))
  openRouter = new OpenRouter({ serverURL: url, apiKey: key, retryConfig: { strategy: 'none' }, timeoutMs: 30_000 })
})

afterAll(() => harness.close())

const TEXT_MODELS = BUILT_IN_MODELS.filter((entry) => (entry.outputModalities ?? ['text']).includes('text')).length + 1

describe('@openrouter/sdk', () => {
  it('models.list parses every model, and pages with offset and limit', async () => {
    const page = await openRouter.models.list()
    expect(page.result.totalCount).toBe(TEXT_MODELS)
    expect(page.result.data.map((model) => model.id)).toContain('acme/local-7b')
    const mini = page.result.data.find((model) => model.id === 'openai/gpt-4.1-mini')!
    expect(mini.pricing).toMatchObject({ prompt: '0.0000004', completion: '0.0000016', inputCacheRead: '0.0000001' })
    expect(mini.topProvider).toEqual({ contextLength: 1_047_576, maxCompletionTokens: 32_768, isModerated: false })
    expect(mini.architecture.inputModalities).toEqual(['text', 'image'])
    // The SDK's names for the cache-write, per-image and per-request prices.
    const byId = (id: string) => page.result.data.find((model) => model.id === id)!
    expect(byId('anthropic/claude-sonnet-4.5').pricing).toMatchObject({ inputCacheRead: '0.0000003', inputCacheWrite: '0.00000375' })
    expect(byId('google/gemini-2.5-flash-image').pricing).toMatchObject({ imageOutput: '0.0387' })
    expect(byId('google/gemini-2.5-flash-image').pricing.image).toBeUndefined()
    expect(byId('perplexity/sonar').pricing).toMatchObject({ request: '0.012' })
    // The per-search price of the provider's own web search (`engine: "native"`).
    expect(byId('anthropic/claude-sonnet-4.5').pricing.webSearch).toBe('0.01')
    expect(byId('google/gemini-3-flash-preview').pricing.webSearch).toBe('0.014')

    // The SDK's pager asks for the next page while pages come back full.
    const ids: string[] = []
    let pages = 0
    for await (const result of await openRouter.models.list({ limit: 25, supportedParameters: 'tools' })) {
      expect(++pages).toBeLessThan(20)
      ids.push(...result.result.data.map((model) => model.id))
    }
    expect(pages).toBeGreaterThan(1)
    const withTools = (await openRouter.models.list({ supportedParameters: 'tools' })).result
    expect(ids).toEqual(withTools.data.map((model) => model.id))
  })

  it('models.list refuses a filter the gateway does not apply with a 400 naming it', async () => {
    await expect(openRouter.models.list({ category: 'programming' })).rejects.toMatchObject({ statusCode: 400, message: expect.stringContaining('query.category') })
  })

  it('endpoints.list parses a model with several providers, and 404s an unknown one', async () => {
    const { data } = await openRouter.endpoints.list({ author: 'meta-llama', slug: 'llama-3.3-70b-instruct' })
    expect(data.id).toBe('meta-llama/llama-3.3-70b-instruct')
    expect(data.endpoints.map((endpoint) => endpoint.providerName)).toEqual(['DeepInfra', 'Groq', 'Together', 'Fireworks'])
    expect(data.endpoints[1]).toMatchObject({ tag: 'groq', contextLength: 131_072, maxCompletionTokens: 32_768, pricing: { prompt: '0.00000059' } })
    await expect(openRouter.endpoints.list({ author: 'acme', slug: 'unknown' })).rejects.toMatchObject({ statusCode: 404 })
  })

  it('providers.list parses built-in and configured providers', async () => {
    const { data } = await openRouter.providers.list()
    expect(data.map((provider) => provider.slug)).toEqual(expect.arrayContaining(['openai', 'anthropic', 'groq', 'my-vllm']))
    expect(data.find((provider) => provider.slug === 'my-vllm')).toEqual({ name: 'My vLLM', slug: 'my-vllm', privacyPolicyUrl: null, termsOfServiceUrl: null, statusPageUrl: null })
  })
})

describe('openai SDK', () => {
  it('models.list reads the same models as OpenAI model objects', async () => {
    const client = new OpenAI({ baseURL: url, apiKey: key, maxRetries: 0 })
    const models = []
    for await (const model of client.models.list()) models.push(model)
    expect(models).toHaveLength(TEXT_MODELS)
    expect(models.find((model) => model.id === 'anthropic/claude-sonnet-4.5')).toMatchObject({ object: 'model', owned_by: 'anthropic', created: 0 })
  })
})

describe('HTTP caching over node:http', () => {
  it('revalidates with If-None-Match: 304 with no body', async () => {
    const first = await fetch(`${url}/models`)
    const etag = first.headers.get('etag')!
    expect(first.headers.get('cache-control')).toBe('public, max-age=60')
    await first.text()
    const second = await fetch(`${url}/models`, { headers: { 'if-none-match': etag } })
    expect(second.status).toBe(304)
    expect(second.headers.get('etag')).toBe(etag)
    expect(await second.text()).toBe('')
  })
})
