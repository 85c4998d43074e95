import { calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { buildCatalog } from '../../../scripts/model-catalog/build'
import { CATALOG_TABLE, DATASET_PROVIDERS } from '../../../scripts/model-catalog/table'
import { MODEL_SLUG_PATTERN } from '../../../src/core/patterns'
import { BUILT_IN_MODELS, DEFAULT_TEXT_MODEL, type ModelEndpoint } from '../../../src/engine/models'
import { SNAPSHOT_DATE } from '../../../src/engine/models.snapshot'
import { BUILT_IN_PROVIDERS } from '../../../src/providers/catalog'

// The instant the snapshot resolved its prices at (scripts/generate-model-catalog.ts).
const SNAPSHOT_AT = new Date(`${SNAPSHOT_DATE}T12:00:00Z`)

const endpointOf = (slug: string, provider: string): ModelEndpoint | undefined =>
  BUILT_IN_MODELS.find((entry) => entry.slug === slug)?.endpoints.find((endpoint) => endpoint.provider === provider)

describe('the built-in catalog snapshot', () => {
  it('is exactly what the reviewed table and the installed datasets generate (run `npm run catalog:generate` after changing either)', () => {
    expect(BUILT_IN_MODELS).toEqual(buildCatalog(SNAPSHOT_AT))
  })

  it('keeps every slug served before the dataset catalog, the default text model among them', () => {
    const slugs = new Set(BUILT_IN_MODELS.map((entry) => entry.slug))
    for (const slug of [
      DEFAULT_TEXT_MODEL,
      'openai/gpt-4.1', 'openai/gpt-4o-mini', 'openai/gpt-4o', 'openai/o4-mini', 'openai/gpt-5', 'openai/gpt-5-mini',
      'anthropic/claude-sonnet-4.5', 'anthropic/claude-haiku-4.5', 'anthropic/claude-opus-4.1',
      'google/gemini-2.5-flash', 'google/gemini-2.5-pro', 'google/gemini-2.5-flash-image',
      'meta-llama/llama-3.3-70b-instruct', 'deepseek/deepseek-chat', 'deepseek/deepseek-r1', 'mistralai/mistral-large', 'x-ai/grok-4',
    ]) {
      expect(slugs.has(slug), slug).toBe(true)
    }
  })

  it('lists each slug once, OpenRouter-shaped, on built-in providers only', () => {
    const slugs = BUILT_IN_MODELS.map((entry) => entry.slug)
    expect(new Set(slugs).size).toBe(slugs.length)
    const providers = new Set(BUILT_IN_PROVIDERS.map((provider) => provider.id))
    for (const entry of BUILT_IN_MODELS) {
      expect(entry.slug, entry.slug).toMatch(MODEL_SLUG_PATTERN)
      expect(entry.endpoints.length, entry.slug).toBeGreaterThan(0)
      for (const endpoint of entry.endpoints) expect(providers.has(endpoint.provider), `${entry.slug} on ${endpoint.provider}`).toBe(true)
    }
  })

  it('covers the current generation of every family we speak', () => {
    const authors = new Set(BUILT_IN_MODELS.map((entry) => entry.slug.split('/')[0]))
    for (const author of ['openai', 'anthropic', 'google', 'meta-llama', 'deepseek', 'mistralai', 'x-ai', 'qwen', 'moonshotai', 'z-ai']) {
      expect(authors.has(author), author).toBe(true)
    }
    expect(BUILT_IN_MODELS.length).toBeGreaterThanOrEqual(90)
  })
})

// The reviewed mapping, per provider family: slug → the model id that provider's API expects.
const UPSTREAM_IDS: ReadonlyArray<[slug: string, provider: string, upstreamModel: string]> = [
  ['openai/gpt-4.1-mini', 'openai', 'gpt-4.1-mini'],
  ['openai/gpt-5.4-mini', 'openai', 'gpt-5.4-mini'],
  ['anthropic/claude-sonnet-4.5', 'anthropic', 'claude-sonnet-4-5'],
  ['anthropic/claude-opus-4', 'anthropic', 'claude-opus-4-0'],
  ['anthropic/claude-opus-5.5', 'anthropic', 'claude-opus-5-5'],
  ['google/gemini-2.5-flash', 'google-ai-studio', 'gemini-2.5-flash'],
  ['google/gemini-3-pro-image-preview', 'google-ai-studio', 'gemini-3-pro-image-preview'],
  ['meta-llama/llama-3.3-70b-instruct', 'groq', 'llama-3.3-70b-versatile'],
  ['meta-llama/llama-3.3-70b-instruct', 'together', 'meta-llama/Llama-3.3-70B-Instruct-Turbo'],
  ['meta-llama/llama-3.3-70b-instruct', 'deepinfra', 'meta-llama/Llama-3.3-70B-Instruct'],
  ['meta-llama/llama-4-maverick', 'fireworks', 'accounts/fireworks/models/llama4-maverick-instruct-basic'],
  ['openai/gpt-oss-120b', 'cerebras', 'gpt-oss-120b'],
  ['deepseek/deepseek-r1', 'deepseek', 'deepseek-reasoner'],
  ['mistralai/mistral-large', 'mistral', 'mistral-large-latest'],
  ['mistralai/mistral-medium-3.1', 'mistral', 'mistral-medium-2508'],
  ['x-ai/grok-4.1-fast', 'xai', 'grok-4-1-fast-reasoning'],
  ['qwen/qwen3-32b', 'groq', 'qwen/qwen3-32b'],
  ['moonshotai/kimi-k2.6', 'moonshotai', 'kimi-k2.6'],
  ['z-ai/glm-5.2', 'z-ai', 'glm-5.2'],
  ['perplexity/sonar-pro', 'perplexity', 'sonar-pro'],
]

// A usage that touches every token price; genai-prices counts cache reads and writes inside input_tokens.
const USAGE = { input_tokens: 10_000, cache_read_tokens: 2_000, cache_write_tokens: 1_000, output_tokens: 3_000 }

/** What the usage costs at our prices, as genai-prices prices it (no tiers: the usage stays under every threshold). */
const ourCost = (endpoint: ModelEndpoint): number => {
  const { pricing } = endpoint
  const hasReads = pricing.cachedPrompt !== undefined
  const hasWrites = pricing.cacheWritePrompt !== undefined
  const plain = USAGE.input_tokens - (hasReads ? USAGE.cache_read_tokens : 0) - (hasWrites ? USAGE.cache_write_tokens : 0)
  return (
    plain * pricing.prompt +
    (hasReads ? USAGE.cache_read_tokens * pricing.cachedPrompt! : 0) +
    (hasWrites ? USAGE.cache_write_tokens * pricing.cacheWritePrompt! : 0) +
    USAGE.output_tokens * pricing.completion +
    (pricing.request ?? 0)
  )
}

describe('the slug → provider endpoint mapping', () => {
  it.each(UPSTREAM_IDS)('%s on %s calls the upstream model %s', (slug, provider, upstreamModel) => {
    expect(endpointOf(slug, provider)?.model).toBe(upstreamModel)
  })

  it('prices every dataset-priced endpoint as the dataset prices its upstream model id, cache reads and writes and requests included', () => {
    let checked = 0
    for (const entry of BUILT_IN_MODELS) {
      for (const endpoint of entry.endpoints) {
        const providerId = DATASET_PROVIDERS[endpoint.provider]
        const dataset = providerId ? calcPrice(USAGE, endpoint.model, { providerId, timestamp: SNAPSHOT_AT }) : null
        const where = `${entry.slug} on ${endpoint.provider} (${endpoint.model})`
        const stated = CATALOG_TABLE.find((model) => model.slug === entry.slug)!.endpoints.find((one) => one.provider === endpoint.provider)!.statedPricing
        if (stated) {
          // A stated price is only for what the dataset lacks: it must never shadow a dataset price.
          expect(dataset, where).toBeNull()
          continue
        }
        expect(dataset, where).not.toBeNull()
        expect(ourCost(endpoint), where).toBeCloseTo(dataset!.total_price, 12)
        checked++
      }
    }
    expect(checked).toBeGreaterThan(100)
  })

  it('quotes the dataset’s list prices per token, with Anthropic’s five-minute and one-hour cache-write rates', () => {
    expect(endpointOf('anthropic/claude-sonnet-4.5', 'anthropic')?.pricing).toEqual({
      prompt: 0.000003,
      completion: 0.000015,
      cachedPrompt: 3e-7,
      cacheWritePrompt: 0.00000375,
      cacheWrite1hPrompt: 0.000006,
      webSearch: 0.01,
    })
    expect(endpointOf('openai/gpt-4.1-mini', 'openai')?.pricing).toEqual({ prompt: 4e-7, completion: 0.0000016, cachedPrompt: 1e-7, webSearch: 0.01 })
    expect(endpointOf('perplexity/sonar', 'perplexity')?.pricing.request).toBe(0.012)
  })

  it('derives a per-image price from the image-token price where the tokens per image are documented', () => {
    // $30 per million image tokens, 1290 tokens per 1024×1024 image.
    expect(endpointOf('google/gemini-2.5-flash-image', 'google-ai-studio')?.pricing.image).toBe(0.0387)
    // No documented tokens per image: no per-image price rather than a guessed one.
    expect(endpointOf('google/gemini-3.1-flash-image-preview', 'google-ai-studio')?.pricing.image).toBeUndefined()
  })

  it('prices the searches a provider runs itself where its adapter can search natively', () => {
    // The dataset's $10 per 1,000 web searches (OpenAI's web_search tool calls, Anthropic's web_search_20250305).
    expect(endpointOf('anthropic/claude-haiku-4.5', 'anthropic')?.pricing.webSearch).toBe(0.01)
    expect(endpointOf('openai/gpt-5', 'openai')?.pricing.webSearch).toBe(0.01)
    // The table's $14 per 1,000 Google Search queries on Gemini 3; Gemini 2.5 bills per grounded prompt, which billing does not count.
    expect(endpointOf('google/gemini-3-flash-preview', 'google-ai-studio')?.pricing.webSearch).toBe(0.014)
    expect(endpointOf('google/gemini-2.5-flash', 'google-ai-studio')?.pricing.webSearch).toBeUndefined()
    // The dataset prices Perplexity's deep research searches, but its Chat Completions adapter runs no native search.
    expect(calcPrice(USAGE, 'sonar-deep-research', { providerId: 'perplexity', timestamp: SNAPSHOT_AT })?.model_price).toHaveProperty('web_searches_kcount', 5)
    const [deepResearch] = buildCatalog(SNAPSHOT_AT, [{ slug: 'perplexity/sonar-deep-research', endpoints: [{ provider: 'perplexity', model: 'sonar-deep-research' }], contextLength: 128_000 }])
    expect(deepResearch!.endpoints[0]!.pricing.webSearch).toBeUndefined()
    for (const entry of BUILT_IN_MODELS) {
      for (const endpoint of entry.endpoints) {
        if (endpoint.pricing.webSearch === undefined) continue
        expect(['openai', 'anthropic', 'google-ai-studio'], `${entry.slug} on ${endpoint.provider}`).toContain(endpoint.provider)
      }
    }
  })

  it('refuses a stated search price for a provider that cannot search natively', () => {
    expect(() =>
      buildCatalog(SNAPSHOT_AT, [{ slug: 'meta-llama/llama-3.3-70b-instruct', endpoints: [{ provider: 'groq', model: 'llama-3.3-70b-versatile', webSearchPerThousand: 5 }] }]),
    ).toThrow('meta-llama/llama-3.3-70b-instruct on groq (llama-3.3-70b-versatile): a web search price for a provider that cannot search natively')
  })

  it('fills release dates and descriptions where the datasets have them', () => {
    const gpt41 = BUILT_IN_MODELS.find((entry) => entry.slug === 'openai/gpt-4.1')!
    expect(new Date(gpt41.created! * 1000).toISOString()).toBe('2025-04-14T00:00:00.000Z')
    expect(gpt41.description).toMatch(/^GPT-4\.1 is /)
    expect(BUILT_IN_MODELS.filter((entry) => entry.created !== undefined).length).toBeGreaterThan(30)
  })

  it('refuses a table endpoint whose id the dataset does not know and that states no price', () => {
    expect(() => buildCatalog(SNAPSHOT_AT, [{ slug: 'openai/gpt-9', endpoints: [{ provider: 'openai', model: 'gpt-9' }] }])).toThrow(
      'openai/gpt-9 on openai (gpt-9): the dataset does not price this model id; fix the id or state its prices',
    )
    expect(() => buildCatalog(SNAPSHOT_AT, [{ slug: 'meta-llama/llama-3.3-70b-instruct', endpoints: [{ provider: 'cerebras', model: 'llama-3.3-70b' }] }])).toThrow(
      'the dataset marks this model deprecated',
    )
  })
})
