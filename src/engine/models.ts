/**
 * The model catalog: slug `<author>/<name>[:variant]` → the endpoints that serve it (provider,
 * upstream model id, context length, prices, supported parameters). Shipped with common models;
 * configuration adds entries or replaces them by slug.
 */

export interface EndpointPricing {
  /** USD per input token. */
  prompt: number
  /** USD per output token (reasoning included). */
  completion: number
  /** USD per input token read from the provider's prompt cache; `prompt` when absent. */
  cachedPrompt?: number
  /** USD per input token written to the provider's prompt cache (Anthropic: 1.25 × `prompt` for the 5-minute TTL); `prompt` when absent. */
  cacheWritePrompt?: number
  /** USD per request. */
  request?: number
  /** USD per output image (a generated image; its image tokens are then not billed as output tokens). */
  image?: number
}

export interface ModelEndpoint {
  /** Provider id from the provider catalog or configuration (`openai`, `groq`, `my-vllm`…). */
  provider: string
  /** The provider's own id for the model. */
  model: string
  contextLength: number
  maxOutputTokens?: number
  pricing: EndpointPricing
  /** Request parameters this endpoint honours (for `provider.require_parameters`). */
  supportedParameters?: readonly string[]
  /** Whether the provider retains no prompt data (for `provider.zdr`). */
  isZeroDataRetention?: boolean
  /** Whether the provider may store or train on prompts (for `provider.data_collection: deny`). */
  collectsData?: boolean
}

/** What a model reads or writes, in OpenRouter's modality names. */
export type Modality = 'text' | 'image' | 'file' | 'audio' | 'video'

export interface ModelEntry {
  slug: string
  name: string
  endpoints: ModelEndpoint[]
  /** For `GET /models`; the name and the providers serving it when absent. */
  description?: string
  /** When the model was released, in Unix seconds (`GET /models` `created`); 0 (unknown) when absent. */
  created?: number
  /** What the model accepts; `['text']` when absent. */
  inputModalities?: readonly Modality[]
  /** What the model produces; `['text']` when absent. */
  outputModalities?: readonly Modality[]
}

const perMillion = (prompt: number, completion: number, cachedPrompt?: number, cacheWritePrompt?: number): EndpointPricing => ({
  prompt: prompt / 1_000_000,
  completion: completion / 1_000_000,
  ...(cachedPrompt === undefined ? {} : { cachedPrompt: cachedPrompt / 1_000_000 }),
  ...(cacheWritePrompt === undefined ? {} : { cacheWritePrompt: cacheWritePrompt / 1_000_000 }),
})

const COMMON = ['max_output_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'parallel_tool_calls', 'text'] as const
const REASONING = ['max_output_tokens', 'tools', 'tool_choice', 'parallel_tool_calls', 'reasoning', 'text', 'include'] as const
// Anthropic caches only what it is told to: explicit prompt caching is its only mode.
const ANTHROPIC = ['max_output_tokens', 'temperature', 'top_p', 'top_k', 'tools', 'tool_choice', 'reasoning', 'text', 'prompt_cache_options'] as const
const GEMINI = ['max_output_tokens', 'temperature', 'top_p', 'top_k', 'tools', 'tool_choice', 'reasoning', 'text', 'frequency_penalty', 'presence_penalty'] as const
const OPEN = ['max_output_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'text', 'frequency_penalty', 'presence_penalty'] as const

const model = (slug: string, name: string, endpoints: ModelEndpoint[], inputModalities?: readonly Modality[], outputModalities?: readonly Modality[]): ModelEntry => ({
  slug,
  name,
  endpoints,
  ...(inputModalities ? { inputModalities } : {}),
  ...(outputModalities ? { outputModalities } : {}),
})

// As each provider documents the model's inputs.
const VISION: readonly Modality[] = ['text', 'image']
const GEMINI_INPUTS: readonly Modality[] = ['text', 'image', 'file', 'audio', 'video']

/** The text model of new workspaces unless `workspaceDefaults.textModel` says otherwise. */
export const DEFAULT_TEXT_MODEL = 'openai/gpt-4.1-mini'

/** List prices as published by each provider (USD). Override them in configuration as they change. */
export const BUILT_IN_MODELS: readonly ModelEntry[] = [
  model('openai/gpt-4.1-mini', 'GPT-4.1 mini', [
    { provider: 'openai', model: 'gpt-4.1-mini', contextLength: 1_047_576, maxOutputTokens: 32_768, pricing: perMillion(0.4, 1.6, 0.1), supportedParameters: COMMON },
  ], VISION),
  model('openai/gpt-4.1', 'GPT-4.1', [
    { provider: 'openai', model: 'gpt-4.1', contextLength: 1_047_576, maxOutputTokens: 32_768, pricing: perMillion(2, 8, 0.5), supportedParameters: COMMON },
  ], VISION),
  model('openai/gpt-4o-mini', 'GPT-4o mini', [
    { provider: 'openai', model: 'gpt-4o-mini', contextLength: 128_000, maxOutputTokens: 16_384, pricing: perMillion(0.15, 0.6, 0.075), supportedParameters: COMMON },
  ], VISION),
  model('openai/gpt-4o', 'GPT-4o', [
    { provider: 'openai', model: 'gpt-4o', contextLength: 128_000, maxOutputTokens: 16_384, pricing: perMillion(2.5, 10, 1.25), supportedParameters: COMMON },
  ], VISION),
  model('openai/o4-mini', 'o4-mini', [
    { provider: 'openai', model: 'o4-mini', contextLength: 200_000, maxOutputTokens: 100_000, pricing: perMillion(1.1, 4.4, 0.275), supportedParameters: REASONING },
  ], VISION),
  model('openai/gpt-5', 'GPT-5', [
    { provider: 'openai', model: 'gpt-5', contextLength: 400_000, maxOutputTokens: 128_000, pricing: perMillion(1.25, 10, 0.125), supportedParameters: REASONING },
  ], VISION),
  model('openai/gpt-5-mini', 'GPT-5 mini', [
    { provider: 'openai', model: 'gpt-5-mini', contextLength: 400_000, maxOutputTokens: 128_000, pricing: perMillion(0.25, 2, 0.025), supportedParameters: REASONING },
  ], VISION),
  model('anthropic/claude-sonnet-4.5', 'Claude Sonnet 4.5', [
    { provider: 'anthropic', model: 'claude-sonnet-4-5', contextLength: 200_000, maxOutputTokens: 64_000, pricing: perMillion(3, 15, 0.3, 3.75), supportedParameters: ANTHROPIC },
  ], VISION),
  model('anthropic/claude-haiku-4.5', 'Claude Haiku 4.5', [
    { provider: 'anthropic', model: 'claude-haiku-4-5', contextLength: 200_000, maxOutputTokens: 64_000, pricing: perMillion(1, 5, 0.1, 1.25), supportedParameters: ANTHROPIC },
  ], VISION),
  model('anthropic/claude-opus-4.1', 'Claude Opus 4.1', [
    { provider: 'anthropic', model: 'claude-opus-4-1', contextLength: 200_000, maxOutputTokens: 32_000, pricing: perMillion(15, 75, 1.5, 18.75), supportedParameters: ANTHROPIC },
  ], VISION),
  model('google/gemini-2.5-flash', 'Gemini 2.5 Flash', [
    { provider: 'google-ai-studio', model: 'gemini-2.5-flash', contextLength: 1_048_576, maxOutputTokens: 65_535, pricing: perMillion(0.3, 2.5, 0.03), supportedParameters: GEMINI },
  ], GEMINI_INPUTS),
  model('google/gemini-2.5-pro', 'Gemini 2.5 Pro', [
    { provider: 'google-ai-studio', model: 'gemini-2.5-pro', contextLength: 1_048_576, maxOutputTokens: 65_536, pricing: perMillion(1.25, 10, 0.125), supportedParameters: GEMINI },
  ], GEMINI_INPUTS),
  // Google prices an output image at 1,290 image tokens × $30 per million: $0.039 each.
  model('google/gemini-2.5-flash-image', 'Gemini 2.5 Flash Image', [
    { provider: 'google-ai-studio', model: 'gemini-2.5-flash-image', contextLength: 32_768, maxOutputTokens: 32_768, pricing: { ...perMillion(0.3, 2.5), image: 0.039 }, supportedParameters: GEMINI },
  ], VISION, ['image', 'text']),
  model('meta-llama/llama-3.3-70b-instruct', 'Llama 3.3 70B Instruct', [
    { provider: 'deepinfra', model: 'meta-llama/Llama-3.3-70B-Instruct', contextLength: 131_072, pricing: perMillion(0.23, 0.4), supportedParameters: OPEN },
    { provider: 'groq', model: 'llama-3.3-70b-versatile', contextLength: 131_072, maxOutputTokens: 32_768, pricing: perMillion(0.59, 0.79), supportedParameters: OPEN },
    { provider: 'cerebras', model: 'llama-3.3-70b', contextLength: 65_536, pricing: perMillion(0.85, 1.2), supportedParameters: OPEN },
    { provider: 'together', model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', contextLength: 131_072, pricing: perMillion(0.88, 0.88), supportedParameters: OPEN },
    { provider: 'fireworks', model: 'accounts/fireworks/models/llama-v3p3-70b-instruct', contextLength: 131_072, pricing: perMillion(0.9, 0.9), supportedParameters: OPEN },
  ]),
  model('deepseek/deepseek-chat', 'DeepSeek V3.2', [
    { provider: 'deepseek', model: 'deepseek-chat', contextLength: 128_000, maxOutputTokens: 8_192, pricing: perMillion(0.28, 0.42, 0.028), supportedParameters: OPEN },
  ]),
  model('deepseek/deepseek-r1', 'DeepSeek R1', [
    { provider: 'deepseek', model: 'deepseek-reasoner', contextLength: 128_000, maxOutputTokens: 64_000, pricing: perMillion(0.28, 0.42, 0.028), supportedParameters: ['max_output_tokens', 'tools', 'reasoning'] },
  ]),
  model('mistralai/mistral-large', 'Mistral Large', [
    { provider: 'mistral', model: 'mistral-large-latest', contextLength: 131_072, pricing: perMillion(2, 6), supportedParameters: OPEN },
  ]),
  model('x-ai/grok-4', 'Grok 4', [
    { provider: 'xai', model: 'grok-4', contextLength: 256_000, pricing: perMillion(3, 15, 0.75), supportedParameters: REASONING },
  ], VISION),
]

/** A catalog lookup that honours a `:variant` suffix by falling back to the base slug. */
export const createModelCatalog = (entries: readonly ModelEntry[]) => {
  const bySlug = new Map(entries.map((entry) => [entry.slug, entry]))
  return {
    find(slug: string): ModelEntry | undefined {
      return bySlug.get(slug) ?? bySlug.get(slug.split(':', 1)[0]!)
    },
    list: (): ModelEntry[] => [...bySlug.values()],
  }
}

export type ModelCatalog = ReturnType<typeof createModelCatalog>

/** Built-ins, with configured entries added or replacing built-ins of the same slug. */
export const mergeModels = (configured: readonly ModelEntry[] = []): ModelEntry[] => {
  const merged = new Map(BUILT_IN_MODELS.map((entry) => [entry.slug, entry]))
  for (const entry of configured) merged.set(entry.slug, entry)
  return [...merged.values()]
}
