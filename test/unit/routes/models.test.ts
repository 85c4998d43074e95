import { describe, expect, it } from 'vitest'
import { BUILT_IN_MODELS, type ModelEntry } from '../../../src/engine/models'
import { BUILT_IN_PROVIDERS } from '../../../src/providers/catalog'
import { createTestGateway } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'

// Never called: these routes only describe providers.
const SELF_HOSTED = { api: 'openai-chat', baseURL: 'http://127.0.0.1:9/v1', displayName: 'My vLLM' } as const
const SELF_HOSTED_MODEL: ModelEntry = {
  slug: 'acme/local-7b',
  name: 'Local 7B',
  description: 'A small model on our own GPUs.',
  created: 1_700_000_000,
  endpoints: [{ provider: 'my-vllm', model: 'local-7b', contextLength: 8_192, pricing: { prompt: 0, completion: 0, request: 0.001 }, supportedParameters: ['temperature', 'max_output_tokens'] }],
}

const gateway = () => createTestGateway({ logger: false, providers: { 'my-vllm': SELF_HOSTED }, models: [SELF_HOSTED_MODEL] })

type Gateway = Awaited<ReturnType<typeof gateway>>

const get = async (t: Gateway, path: string, headers: Record<string, string> = {}) => {
  const response = await t.call('GET', path, { key: null, headers })
  return { response, body: response.status === 304 ? null : await readJson(response) }
}

const ids = (body: { data: { id: string }[] }) => body.data.map((model) => model.id)

const expectError = async (t: Gateway, path: string, status: number, message: string) => {
  const { response, body } = await get(t, path)
  expect({ status: response.status, body }, path).toEqual({ status, body: { error: { code: status, message } } })
}

describe('GET /models', () => {
  it('lists every text model with its OpenRouter fields, prices as decimal strings, without a key', async () => {
    const t = await gateway()
    const { response, body } = await get(t, '/models')
    expect(response.status).toBe(200)
    const textModels = [...BUILT_IN_MODELS, SELF_HOSTED_MODEL].filter((entry) => (entry.outputModalities ?? ['text']).includes('text'))
    expect(ids(body).sort()).toEqual(textModels.map((entry) => entry.slug).sort())
    expect(body.total_count).toBe(textModels.length)
    expect(body.links).toEqual({ next: null })

    const mini = body.data.find((model: { id: string }) => model.id === 'openai/gpt-4.1-mini')
    expect(mini).toEqual({
      id: 'openai/gpt-4.1-mini',
      canonical_slug: 'openai/gpt-4.1-mini',
      object: 'model',
      owned_by: 'openai',
      name: 'GPT-4.1 mini',
      // The dataset's release date (2025-04-14) and description.
      created: 1_744_588_800,
      description: expect.stringMatching(/^GPT-4\.1 Mini is /),
      context_length: 1_047_576,
      architecture: { modality: 'text+image->text', input_modalities: ['text', 'image'], output_modalities: ['text'], tokenizer: 'GPT', instruct_type: null },
      // web_search: OpenAI's $10 per 1,000 web_search tool calls.
      pricing: { prompt: '0.0000004', completion: '0.0000016', input_cache_read: '0.0000001', web_search: '0.01' },
      top_provider: { context_length: 1_047_576, max_completion_tokens: 32_768, is_moderated: false },
      per_request_limits: null,
      supported_parameters: ['max_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'structured_outputs', 'logprobs', 'prompt'],
      default_parameters: null,
      supported_voices: null,
      links: { details: '/api/v1/models/openai/gpt-4.1-mini/endpoints' },
    })
    for (const model of body.data) {
      for (const price of Object.values(model.pricing)) expect(price, model.id).toMatch(/^\d+(\.\d+)?$/)
    }
  })

  it('describes configured models and their metadata, with a default for what the entry leaves out', async () => {
    const t = await gateway()
    const { body } = await get(t, '/models')
    const local = body.data.find((model: { id: string }) => model.id === 'acme/local-7b')
    expect(local).toMatchObject({
      created: 1_700_000_000,
      description: 'A small model on our own GPUs.',
      owned_by: 'acme',
      architecture: { modality: 'text->text', input_modalities: ['text'], output_modalities: ['text'], tokenizer: 'Other' },
      pricing: { prompt: '0', completion: '0', request: '0.001' },
      top_provider: { context_length: 8_192, max_completion_tokens: null, is_moderated: false },
      supported_parameters: ['temperature', 'max_tokens'],
    })
    // The dataset has no description for it: the name and the providers serving it stand in.
    const llama = body.data.find((model: { id: string }) => model.id === 'meta-llama/llama-3.3-70b-instruct')
    expect(llama.description).toBe('Llama 3.3 70B Instruct, served by DeepInfra, Groq, Together, Fireworks.')
  })

  it('keeps the models supporting every listed parameter', async () => {
    const t = await gateway()
    const { body } = await get(t, '/models?supported_parameters=top_k,tools')
    expect(ids(body).length).toBeGreaterThan(0)
    for (const model of body.data) expect(model.supported_parameters, model.id).toEqual(expect.arrayContaining(['top_k', 'tools']))
    // GPT models take tools but not top_k.
    expect(ids(body)).not.toContain('openai/gpt-4.1')
    expect(ids((await get(t, '/models?supported_parameters=tools')).body)).toContain('openai/gpt-4.1')
    expect((await get(t, '/models?supported_parameters=no_such_parameter')).body).toEqual({ data: [], total_count: 0, links: { next: null } })
  })

  it('filters on output modalities as OpenRouter does: text by default, any listed one, or all', async () => {
    const t = await gateway()
    const imageModels = BUILT_IN_MODELS.filter((entry) => entry.outputModalities?.includes('image')).map((entry) => entry.slug)
    expect(imageModels).toContain('google/gemini-2.5-flash-image')
    expect(ids((await get(t, '/models?output_modalities=image')).body)).toEqual(imageModels)
    const all = (await get(t, '/models?output_modalities=all')).body
    expect(all.total_count).toBe(BUILT_IN_MODELS.length + 1)
    // Embedding models are the only ones that write neither text nor images.
    const embeddingModels = BUILT_IN_MODELS.filter((entry) => entry.outputModalities?.includes('embeddings')).length
    expect(embeddingModels).toBeGreaterThan(0)
    expect((await get(t, '/models?output_modalities=text,image')).body.total_count).toBe(all.total_count - embeddingModels)
    expect((await get(t, '/models?output_modalities=embeddings')).body.total_count).toBe(embeddingModels)
    expect((await get(t, '/models?output_modalities=audio')).body.data).toEqual([])
  })

  it('pages with offset and limit, linking to the next page until the last', async () => {
    const t = await gateway()
    const everything = ids((await get(t, '/models')).body)
    const seen: string[] = []
    let path: string | null = '/models?limit=4&supported_parameters=temperature'
    let pages = 0
    while (path) {
      expect(++pages, 'the pages never end').toBeLessThan(20)
      const { body } = await get(t, path)
      expect(body.data.length).toBeLessThanOrEqual(4)
      seen.push(...ids(body))
      path = body.links.next === null ? null : body.links.next.replace(/^\/api\/v1/, '')
    }
    const withTemperature = ids((await get(t, '/models?supported_parameters=temperature')).body)
    expect(seen).toEqual(withTemperature)
    expect(withTemperature.length).toBeGreaterThan(4)
    expect(withTemperature.length).toBeLessThan(everything.length)
    expect((await get(t, `/models?offset=${everything.length}`)).body).toEqual({ data: [], total_count: everything.length, links: { next: null } })
  })

  it('answers 400 naming an unknown or malformed query parameter', async () => {
    const t = await gateway()
    await expectError(t, '/models?no_such_filter=1', 400, 'query.no_such_filter: unknown field')
    await expectError(t, '/models?output_modalities=smell', 400, 'query.output_modalities.0: must be a comma-separated list of text, image, audio, video, embeddings, rerank, speech, transcription, decisions, all')
    await expectError(t, '/models?supported_parameters=tools,', 400, 'query.supported_parameters.1: must be a comma-separated list of parameter names')
    await expectError(t, '/models?limit=0', 400, 'query.limit: must be at least 1')
    await expectError(t, '/models?limit=1001', 400, 'query.limit: must be at most 1000')
    await expectError(t, '/models?offset=-1', 400, 'query.offset: must be a whole number')
  })
})

describe('GET /models filters and orders', () => {
  // Two configured models beside the built-ins, on a fixed clock: one a year old, served with zero data retention,
  // reading images; the self-hosted one (created 1_700_000_000, November 2023).
  const NOW = new Date('2025-01-01T00:00:00Z')
  const VISION_MODEL: ModelEntry = {
    slug: 'acme/vision-zdr',
    name: 'Acme Vision',
    created: Math.floor(NOW.getTime() / 1000) - 365 * 86_400,
    inputModalities: ['text', 'image'],
    endpoints: [{ provider: 'my-vllm', model: 'vision', contextLength: 4_000_000, pricing: { prompt: 0.00009, completion: 0.00018 }, isZeroDataRetention: true }],
  }
  const filtered = () => createTestGateway({ logger: false, now: () => NOW, providers: { 'my-vllm': SELF_HOSTED }, models: [SELF_HOSTED_MODEL, VISION_MODEL] })

  type WireModel = { id: string; name: string; owned_by: string; created: number; context_length: number; pricing: { prompt: string; completion: string }; architecture: { input_modalities: string[]; tokenizer: string } }

  /** Every filter is checked against the unfiltered list: the answer holds exactly the models for which `keep` holds. */
  const expectFilter = async (t: Gateway, query: string, keep: (model: WireModel) => boolean) => {
    const everything: WireModel[] = (await get(t, '/models?output_modalities=all')).body.data
    const { response, body } = await get(t, `/models?output_modalities=all&${query}`)
    expect(response.status, query).toBe(200)
    const expected = everything.filter(keep).map((model) => model.id)
    expect(ids(body), query).toEqual(expected)
    expect(body.total_count, query).toBe(expected.length)
    return expected
  }
  const perMillion = (price: string) => Number(price) * 1_000_000

  it('applies each derivable filter: input modalities (all listed), q, context, prices, authors, arch', async () => {
    const t = await filtered()
    expect(await expectFilter(t, 'input_modalities=text,image', (model) => ['text', 'image'].every((kind) => model.architecture.input_modalities.includes(kind)))).toContain('acme/vision-zdr')
    expect(await expectFilter(t, 'input_modalities=audio,video', (model) => model.architecture.input_modalities.includes('audio') && model.architecture.input_modalities.includes('video'))).not.toContain('acme/vision-zdr')
    expect(await expectFilter(t, 'q=ACME%20vis', (model) => `${model.id}\n${model.name}`.toLowerCase().includes('acme vis'))).toEqual(['acme/vision-zdr'])
    expect(await expectFilter(t, 'q=local', (model) => `${model.id}\n${model.name}`.toLowerCase().includes('local'))).toEqual(['acme/local-7b'])
    expect(await expectFilter(t, 'context=1500000', (model) => model.context_length >= 1_500_000)).toContain('acme/vision-zdr')
    await expectFilter(t, 'min_price=1&max_price=3', (model) => perMillion(model.pricing.prompt) >= 1 && perMillion(model.pricing.prompt) <= 3)
    await expectFilter(t, 'max_output_price=2.5', (model) => perMillion(model.pricing.completion) <= 2.5)
    expect(await expectFilter(t, 'min_output_price=100', (model) => perMillion(model.pricing.completion) >= 100)).toContain('acme/vision-zdr')
    expect(await expectFilter(t, 'model_authors=acme,Anthropic', (model) => ['acme', 'anthropic'].includes(model.owned_by))).toContain('acme/local-7b')
    expect(await expectFilter(t, 'arch=claude', (model) => model.architecture.tokenizer === 'Claude')).not.toHaveLength(0)
  })

  it('filters on providers by slug or name, zero data retention and age in days on the gateway clock', async () => {
    const t = await filtered()
    expect(ids((await get(t, '/models?providers=my-vllm')).body)).toEqual(['acme/local-7b', 'acme/vision-zdr'])
    expect(ids((await get(t, '/models?providers=MY%20VLLM,nobody')).body)).toEqual(['acme/local-7b', 'acme/vision-zdr'])
    expect(ids((await get(t, '/models?providers=anthropic')).body)).toEqual(
      BUILT_IN_MODELS.filter((entry) => entry.endpoints.some((endpoint) => endpoint.provider === 'anthropic')).map((entry) => entry.slug),
    )
    expect(await expectFilter(t, 'zdr=true', (model) => model.id === 'acme/vision-zdr')).toEqual(['acme/vision-zdr'])
    // Ages on the gateway's clock; models of unknown release date (created 0) have no age, so an age filter leaves them out.
    const ageDays = (model: WireModel) => (NOW.getTime() / 1000 - model.created) / 86_400
    expect(await expectFilter(t, 'max_age_days=400', (model) => model.created > 0 && ageDays(model) <= 400)).toContain('acme/vision-zdr')
    const older = await expectFilter(t, 'min_age_days=366', (model) => model.created > 0 && ageDays(model) >= 366)
    expect(older).toContain('acme/local-7b')
    expect(older).not.toContain('acme/vision-zdr')
    expect(await expectFilter(t, 'min_age_days=365&max_age_days=365', (model) => model.created > 0 && ageDays(model) >= 365 && ageDays(model) <= 365)).toContain('acme/vision-zdr')
  })

  it('orders by price, context or release date, ties in catalog order, and pages the order it chose', async () => {
    const t = await filtered()
    const everything: WireModel[] = (await get(t, '/models')).body.data
    // Whole millionths of a dollar per million tokens, so prices equal on paper tie as the gateway ties them.
    const average = (model: WireModel) => Math.round((Number(model.pricing.prompt) + Number(model.pricing.completion)) * 500_000_000_000)
    const byOrder = async (sort: string, compare: (left: WireModel, right: WireModel) => number) => {
      const { body } = await get(t, `/models?sort=${sort}`)
      expect(ids(body), sort).toEqual([...everything].sort(compare).map((model) => model.id))
      return ids(body)
    }
    expect((await byOrder('pricing-low-to-high', (left, right) => average(left) - average(right)))[0]).toBe('acme/local-7b')
    expect((await byOrder('pricing-high-to-low', (left, right) => average(right) - average(left)))[0]).toBe('acme/vision-zdr')
    expect((await byOrder('context-high-to-low', (left, right) => right.context_length - left.context_length))[0]).toBe('acme/vision-zdr')
    const newest = await byOrder('newest', (left, right) => right.created - left.created)
    expect(newest.indexOf('acme/vision-zdr')).toBeLessThan(newest.indexOf('acme/local-7b'))

    const seen: string[] = []
    let path: string | null = '/models?sort=pricing-high-to-low&limit=5&q=a'
    while (path) {
      const { body } = await get(t, path)
      seen.push(...ids(body))
      path = body.links.next === null ? null : body.links.next.replace(/^\/api\/v1/, '')
    }
    expect(seen).toEqual(ids((await get(t, '/models?sort=pricing-high-to-low&q=a')).body))
  })

  it('refuses by name the filters and orders that need data this gateway does not have', async () => {
    const t = await filtered()
    await expectError(t, '/models?category=programming', 400, "query.category: cannot be applied: this gateway has no use-case categories (OpenRouter's come from its usage rankings)")
    await expectError(t, '/models?min_intelligence_index=40', 400, 'query.min_intelligence_index: cannot be applied: this gateway has no benchmark scores')
    await expectError(t, '/models?region=eu', 400, 'query.region: cannot be applied: this gateway has no data regions for its endpoints')
    await expectError(t, '/models?min_tool_success_rate=0.9', 400, 'query.min_tool_success_rate: cannot be applied: this gateway has no tool-calling statistics')
    await expectError(t, '/models?sort=most-popular', 400, 'query.sort: cannot be applied: this gateway keeps no usage rankings or benchmark scores to sort by')
    await expectError(t, '/models?sort=alphabetical', 400, 'query.sort: must be one of pricing-low-to-high, pricing-high-to-low, context-high-to-low, newest, throughput-high-to-low, latency-low-to-high')
    await expectError(t, '/models?input_modalities=smell', 400, 'query.input_modalities.0: must be a comma-separated list of text, image, audio, file, video')
    await expectError(t, '/models?zdr=false', 400, 'query.zdr: must be true (leave it out for every model)')
    await expectError(t, '/models?min_price=-1', 400, 'query.min_price: must be a non-negative decimal number')
    await expectError(t, '/models?min_price=3&max_price=1', 400, 'query: min_price is above max_price')
    await expectError(t, '/models?model_authors=acme,', 400, 'query.model_authors.1: must be a comma-separated list of slugs')
  })
})

describe('GET /models/{author}/{slug}/endpoints', () => {
  it('lists each endpoint of a model with its provider, prices and limits', async () => {
    const t = await gateway()
    const { response, body } = await get(t, '/models/meta-llama/llama-3.3-70b-instruct/endpoints')
    expect(response.status).toBe(200)
    expect(body.data).toMatchObject({
      id: 'meta-llama/llama-3.3-70b-instruct',
      name: 'Llama 3.3 70B Instruct',
      created: 1_733_443_200,
      architecture: { modality: 'text->text', tokenizer: 'Llama3', instruct_type: null },
    })
    expect(body.data.endpoints.map((endpoint: { tag: string }) => endpoint.tag)).toEqual(['deepinfra', 'groq', 'together', 'fireworks'])
    expect(body.data.endpoints[1]).toEqual({
      name: 'Groq | meta-llama/llama-3.3-70b-instruct',
      model_id: 'meta-llama/llama-3.3-70b-instruct',
      model_name: 'Llama 3.3 70B Instruct',
      context_length: 131_072,
      pricing: { prompt: '0.00000059', completion: '0.00000079' },
      provider_name: 'Groq',
      tag: 'groq',
      quantization: null,
      max_completion_tokens: 32_768,
      max_prompt_tokens: null,
      supported_parameters: ['max_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'response_format', 'structured_outputs', 'frequency_penalty', 'presence_penalty', 'stop', 'seed'],
      supports_implicit_caching: false,
      supports_tool_choice: { auto: true, none: true, required: true, function: true },
      uptime_last_30m: null,
      uptime_last_5m: null,
      uptime_last_1d: null,
      latency_last_30m: null,
      throughput_last_30m: null,
    })
  })

  it('serves configured models and variants as routing resolves them, and 404s an unknown model', async () => {
    const t = await gateway()
    const local = (await get(t, '/models/acme/local-7b/endpoints')).body.data
    expect(local.endpoints).toMatchObject([{ provider_name: 'My vLLM', tag: 'my-vllm', pricing: { prompt: '0', completion: '0', request: '0.001' } }])
    // No `:free` entry in the catalog: the variant is served by the base model, as a request for it would be.
    expect((await get(t, '/models/openai/gpt-4.1:free/endpoints')).body.data.id).toBe('openai/gpt-4.1')
    await expectError(t, '/models/acme/unknown/endpoints', 404, 'Model "acme/unknown" not found')
    await expectError(t, '/models/acme/local-7b/endpoints?x=1', 400, 'query.x: unknown field')
  })
})

describe('GET /providers', () => {
  it('lists built-in and configured providers, with null policy links', async () => {
    const t = await gateway()
    const { response, body } = await get(t, '/providers')
    expect(response.status).toBe(200)
    expect(body.data.map((provider: { slug: string }) => provider.slug)).toEqual([...BUILT_IN_PROVIDERS.map((provider) => provider.id), 'my-vllm'])
    expect(body.data.at(-1)).toEqual({ name: 'My vLLM', slug: 'my-vllm', privacy_policy_url: null, terms_of_service_url: null, status_page_url: null })
  })
})

describe('catalog caching', () => {
  it('answers with a strong ETag and public caching, and 304 without a body when the client has it', async () => {
    const t = await gateway()
    for (const path of ['/models', '/models?supported_parameters=tools', '/models/openai/gpt-4.1/endpoints', '/providers']) {
      const first = await t.call('GET', path, { key: null })
      const text = await first.text()
      const etag = first.headers.get('etag')!
      expect(etag, path).toMatch(/^"[0-9a-f]{64}"$/)
      expect(first.headers.get('cache-control')).toBe('public, max-age=60')

      const again = await t.call('GET', path, { key: null })
      expect(again.headers.get('etag')).toBe(etag)
      expect(await again.text()).toBe(text)

      for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const revalidated = await t.call('GET', path, { key: null, headers: { 'if-none-match': ifNoneMatch } })
        expect(revalidated.status, ifNoneMatch).toBe(304)
        expect(revalidated.headers.get('etag')).toBe(etag)
        expect(await revalidated.text()).toBe('')
      }
      const changed = await t.call('GET', path, { key: null, headers: { 'if-none-match': '"other"' } })
      expect(changed.status).toBe(200)
      expect(await changed.text()).toBe(text)
    }
    const filtered = await t.call('GET', '/models?supported_parameters=tools', { key: null })
    const unfiltered = await t.call('GET', '/models', { key: null })
    expect(filtered.headers.get('etag')).not.toBe(unfiltered.headers.get('etag'))
  })

  it('serves the same answer to callers with or without a key', async () => {
    const t = await gateway()
    const anonymous = await (await t.call('GET', '/models', { key: null })).text()
    expect(await (await t.call('GET', '/models', { key: t.regularKey })).text()).toBe(anonymous)
    expect(await (await t.call('GET', '/models', { key: 'not-a-key' })).text()).toBe(anonymous)
  })
})
