/**
 * The reviewed half of the built-in catalog: which models modelgate lists, under which slug, and which
 * upstream model id each provider we speak expects for it. Prices, context windows, names and descriptions
 * come from the dataset (docs/decisions.md, "Model catalog"); this table never guesses an id. A change here
 * takes effect after `npm run catalog:generate`, which rewrites src/engine/models.snapshot.ts.
 */

/** What a model reads or writes, in OpenRouter's modality names (as `Modality` in src/engine/models.ts). */
export type TableModality = 'text' | 'image' | 'file' | 'audio' | 'video'

/** Prices in USD per million tokens (per request for `request`), for endpoints the dataset does not price. */
export interface StatedPricing {
  prompt: number
  completion: number
  cachedPrompt?: number
}

export interface TableEndpoint {
  /** Provider id from src/providers/catalog.ts. */
  provider: string
  /** The id the provider's API expects in `model`; the dataset's own match rules must recognise it. */
  model: string
  /**
   * Prices for an endpoint the dataset does not list (checked by hand against the provider's price page
   * when added). Without it, the dataset must price `model`, or generation fails.
   */
  statedPricing?: StatedPricing
  /**
   * USD per 1,000 web searches the provider runs itself (`engine: "native"`), where the dataset has no such
   * price; generation fails when the provider's adapter cannot search natively.
   */
  webSearchPerThousand?: number
  /** Overrides the dataset's context window where the provider serves less. */
  contextLength?: number
  maxOutputTokens?: number
}

export interface TableModel {
  /** `<author>/<name>`, OpenRouter's slug where OpenRouter lists the model. */
  slug: string
  /** Display name; the dataset's (first endpoint) when absent. */
  name?: string
  /** In routing order: the first endpoint is the one `GET /models` describes. */
  endpoints: TableEndpoint[]
  /** Request parameters every endpoint honours; the provider family's set when absent. */
  parameters?: readonly string[]
  /** Inputs; models.dev's where it knows the model, else the provider family's. */
  input?: readonly TableModality[]
  /** Outputs; `['text']` when absent; `['embeddings']` for an embedding model (output tokens then cost nothing). */
  output?: readonly (TableModality | 'embeddings')[]
  /** Output tokens one generated image costs, to derive a per-image price from the dataset's image-token price. */
  tokensPerImage?: number
  maxOutputTokens?: number
  contextLength?: number
}

/** The dataset's provider id for each provider of ours that it prices. */
export const DATASET_PROVIDERS: Readonly<Record<string, string>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  'google-ai-studio': 'google',
  groq: 'groq',
  together: 'together',
  fireworks: 'fireworks',
  mistral: 'mistral',
  xai: 'x-ai',
  deepseek: 'deepseek',
  cerebras: 'cerebras',
  perplexity: 'perplexity',
  moonshotai: 'moonshotai',
  'z-ai': 'zai',
}

/** models.dev's provider id for each provider of ours it describes (release dates, output limits, inputs). */
export const REFERENCE_PROVIDERS: Readonly<Record<string, string>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  'google-ai-studio': 'google',
  groq: 'groq',
  together: 'togetherai',
  fireworks: 'fireworks-ai',
  deepinfra: 'deepinfra',
  mistral: 'mistral',
  xai: 'xai',
  deepseek: 'deepseek',
  cerebras: 'cerebras',
  perplexity: 'perplexity',
  moonshotai: 'moonshotai',
  'z-ai': 'zai',
}

/**
 * What a first-party API provider states for all of its API traffic, applied to every endpoint of that provider
 * (docs/providers.md, "Data policies and distillation" names each source). `collectsData`: whether the provider
 * trains on (improves its models with) prompts sent to its API by default; storage for abuse monitoring alone is
 * not collection, which is the zero-retention question (`isZeroDataRetention`), left unknown. `isDistillable`:
 * whether the terms let a customer use the outputs to develop competing models. Quantization stays unknown: none
 * of them says how its closed weights are served. Only providers that author the models they serve are here: an
 * open host's distillation terms are each model's licence, not the host's.
 */
export const PROVIDER_FACTS: Readonly<Record<string, { collectsData: boolean; isDistillable: boolean }>> = {
  openai: { collectsData: false, isDistillable: false },
  anthropic: { collectsData: false, isDistillable: false },
  // The paid tier's terms, as the catalog's prices are the paid tier's: free-tier traffic is used to improve Google's products.
  'google-ai-studio': { collectsData: false, isDistillable: false },
}

// Request fields (Responses API names) each wire format honours.
export const PARAMETERS = {
  // Log probabilities come from the Responses API's `include` for models without reasoning only.
  // `prompt`: OpenAI's stored prompt templates, which only OpenAI resolves.
  openai: ['max_output_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'parallel_tool_calls', 'text', 'logprobs', 'prompt'],
  openaiReasoning: ['max_output_tokens', 'tools', 'tool_choice', 'parallel_tool_calls', 'reasoning', 'text', 'include', 'prompt'],
  // GPT-5.6 and newer take OpenAI's explicit prompt caching (`prompt_cache_options`, `prompt_cache_breakpoint`).
  openaiExplicitCache: ['max_output_tokens', 'tools', 'tool_choice', 'parallel_tool_calls', 'reasoning', 'text', 'include', 'prompt', 'prompt_cache_options'],
  // Anthropic caches only what it is told to: explicit prompt caching is its only mode.
  anthropic: ['max_output_tokens', 'temperature', 'top_p', 'top_k', 'tools', 'tool_choice', 'reasoning', 'text', 'prompt_cache_options', 'stop'],
  gemini: ['max_output_tokens', 'temperature', 'top_p', 'top_k', 'tools', 'tool_choice', 'reasoning', 'text', 'frequency_penalty', 'presence_penalty', 'stop', 'seed'],
  open: ['max_output_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'text', 'frequency_penalty', 'presence_penalty', 'stop', 'seed'],
  // Mistral calls its seed `random_seed` and rejects `seed`; DeepSeek documents no seed.
  openWithoutSeed: ['max_output_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'text', 'frequency_penalty', 'presence_penalty', 'stop'],
  openReasoning: ['max_output_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'reasoning', 'text', 'frequency_penalty', 'presence_penalty', 'stop', 'seed'],
  openReasoningWithoutSeed: ['max_output_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'reasoning', 'text', 'frequency_penalty', 'presence_penalty', 'stop'],
  // xAI's reasoning models refuse stop sequences.
  xai: ['max_output_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'reasoning', 'text', 'frequency_penalty', 'presence_penalty', 'seed'],
  deepseekReasoner: ['max_output_tokens', 'tools', 'reasoning'],
  search: ['max_output_tokens', 'temperature', 'top_p', 'text', 'frequency_penalty', 'presence_penalty'],
  // Embedding models (`POST /embeddings`): `dimensions` shortens the vectors, `input_type` names the task
  // (Gemini's `taskType`), `token_input` takes input as token ids; each only where the upstream does.
  openaiEmbeddings: ['dimensions', 'token_input'],
  openaiLegacyEmbeddings: ['token_input'],
  geminiEmbeddings: ['dimensions', 'input_type'],
  embeddings: [],
} as const satisfies Record<string, readonly string[]>

/** Parameters by the provider of a model's first endpoint, when the model states none. */
export const FAMILY_PARAMETERS: Readonly<Record<string, readonly string[]>> = {
  openai: PARAMETERS.openaiReasoning,
  anthropic: PARAMETERS.anthropic,
  'google-ai-studio': PARAMETERS.gemini,
  xai: PARAMETERS.xai,
  perplexity: PARAMETERS.search,
}

const VISION = ['text', 'image'] as const
const GEMINI_INPUTS = ['text', 'image', 'file', 'audio', 'video'] as const

/** Inputs by the provider of a model's first endpoint, when neither the model nor models.dev says. */
export const FAMILY_INPUTS: Readonly<Record<string, readonly TableModality[]>> = {
  openai: VISION,
  anthropic: VISION,
  'google-ai-studio': GEMINI_INPUTS,
}

const openai = (name: string, extra: Partial<TableModel> = {}): TableModel => ({
  slug: `openai/${name}`,
  endpoints: [{ provider: 'openai', model: name }],
  ...extra,
})
const anthropic = (slug: string, model: string): TableModel => ({ slug: `anthropic/${slug}`, endpoints: [{ provider: 'anthropic', model }] })
/**
 * Grounding with Google Search on Gemini 3 models: $14 per 1,000 search queries, each of a response's
 * `webSearchQueries` (one `web_search_call` here), after 5,000 free prompts a month per project
 * (ai.google.dev/gemini-api/docs/pricing, read 2026-11-23). The free allowance is the operator's account's,
 * which the gateway cannot see, so every search is billed at the paid rate. Gemini 2.5 bills per grounded
 * prompt ($35 per 1,000) whatever the number of queries, a unit billing does not count: no price there.
 */
const GEMINI_3_SEARCH_PER_THOUSAND = 14
const gemini = (name: string, extra: Partial<TableModel> = {}): TableModel => ({
  slug: `google/${name}`,
  endpoints: [{ provider: 'google-ai-studio', model: name, ...(name.startsWith('gemini-3') ? { webSearchPerThousand: GEMINI_3_SEARCH_PER_THOUSAND } : {}) }],
  ...extra,
})
const fireworks = (name: string): TableEndpoint => ({ provider: 'fireworks', model: `accounts/fireworks/models/${name}` })

export const CATALOG_TABLE: readonly TableModel[] = [
  // OpenAI, first party (the Responses API).
  openai('gpt-4.1-mini', { name: 'GPT-4.1 mini', parameters: PARAMETERS.openai }),
  openai('gpt-4.1', { name: 'GPT-4.1', parameters: PARAMETERS.openai }),
  openai('gpt-4.1-nano', { name: 'GPT-4.1 nano', parameters: PARAMETERS.openai }),
  openai('gpt-4o-mini', { name: 'GPT-4o mini', parameters: PARAMETERS.openai }),
  openai('gpt-4o', { name: 'GPT-4o', parameters: PARAMETERS.openai }),
  openai('o3'),
  openai('o3-mini', { input: ['text'] }),
  openai('o3-pro'),
  openai('o4-mini', { name: 'o4-mini' }),
  openai('gpt-5', { name: 'GPT-5' }),
  openai('gpt-5-mini', { name: 'GPT-5 mini' }),
  openai('gpt-5-nano', { name: 'GPT-5 nano' }),
  openai('gpt-5-pro', { name: 'GPT-5 Pro' }),
  openai('gpt-5.1'),
  openai('gpt-5.1-codex-mini'),
  openai('gpt-5.2'),
  openai('gpt-5.2-pro', { name: 'GPT-5.2 Pro' }),
  openai('gpt-5.3-codex'),
  openai('gpt-5.4'),
  openai('gpt-5.4-mini'),
  openai('gpt-5.4-nano'),
  openai('gpt-5.4-pro'),
  openai('gpt-5.5'),
  openai('gpt-5.5-pro'),
  openai('gpt-5.6-luna', { parameters: PARAMETERS.openaiExplicitCache }),
  openai('gpt-5.6-sol', { parameters: PARAMETERS.openaiExplicitCache }),
  openai('gpt-5.6-terra', { parameters: PARAMETERS.openaiExplicitCache }),
  openai('gpt-6-luna', { parameters: PARAMETERS.openaiExplicitCache }),
  openai('gpt-6-sol', { parameters: PARAMETERS.openaiExplicitCache }),
  // OpenAI's open-weight models, on the open hosts.
  {
    slug: 'openai/gpt-oss-120b',
    name: 'gpt-oss-120b',
    endpoints: [{ provider: 'groq', model: 'openai/gpt-oss-120b' }, { provider: 'cerebras', model: 'gpt-oss-120b' }, fireworks('gpt-oss-120b')],
    parameters: PARAMETERS.openReasoning,
    input: ['text'],
  },
  {
    slug: 'openai/gpt-oss-20b',
    name: 'gpt-oss-20b',
    endpoints: [{ provider: 'groq', model: 'openai/gpt-oss-20b' }, fireworks('gpt-oss-20b')],
    parameters: PARAMETERS.openReasoning,
    input: ['text'],
  },

  // Anthropic (the Messages API). Ids without a date follow Anthropic's current snapshot of each model.
  anthropic('claude-sonnet-4.5', 'claude-sonnet-4-5'),
  anthropic('claude-haiku-4.5', 'claude-haiku-4-5'),
  anthropic('claude-opus-4.1', 'claude-opus-4-1'),
  anthropic('claude-opus-4', 'claude-opus-4-0'),
  anthropic('claude-sonnet-4', 'claude-sonnet-4-0'),
  anthropic('claude-opus-4.5', 'claude-opus-4-5'),
  anthropic('claude-opus-4.6', 'claude-opus-4-6'),
  anthropic('claude-opus-4.7', 'claude-opus-4-7'),
  anthropic('claude-opus-4.8', 'claude-opus-4-8'),
  anthropic('claude-sonnet-4.6', 'claude-sonnet-4-6'),
  anthropic('claude-sonnet-5', 'claude-sonnet-5'),
  anthropic('claude-opus-5', 'claude-opus-5'),
  anthropic('claude-opus-5.5', 'claude-opus-5-5'),
  anthropic('claude-fable-5', 'claude-fable-5'),
  anthropic('claude-fable-5.1', 'claude-fable-5-1'),

  // Google (the Gemini API on AI Studio).
  gemini('gemini-2.5-flash'),
  gemini('gemini-2.5-pro'),
  gemini('gemini-2.5-flash-lite'),
  // Google documents 1290 output tokens per 1024×1024 image.
  gemini('gemini-2.5-flash-image', { input: VISION, output: ['image', 'text'], tokensPerImage: 1290, contextLength: 32_768, maxOutputTokens: 32_768 }),
  gemini('gemini-3-flash-preview'),
  // The dataset gives no context window for the Pro previews: Google documents 1,048,576 tokens in, 65,536 out.
  gemini('gemini-3-pro-preview', { contextLength: 1_048_576, maxOutputTokens: 65_536 }),
  gemini('gemini-3.1-pro-preview', { contextLength: 1_048_576, maxOutputTokens: 65_536 }),
  gemini('gemini-3.1-flash-lite'),
  gemini('gemini-3.5-flash'),
  gemini('gemini-3.5-flash-lite'),
  // Google documents 1120 output tokens per 1K or 2K image.
  gemini('gemini-3-pro-image-preview', { input: VISION, output: ['image', 'text'], tokensPerImage: 1120 }),
  // No published tokens-per-image figure: image output is priced per token only.
  gemini('gemini-3.1-flash-image-preview', { input: VISION, output: ['image', 'text'] }),

  // Meta's Llama, on the open hosts.
  {
    slug: 'meta-llama/llama-3.3-70b-instruct',
    name: 'Llama 3.3 70B Instruct',
    endpoints: [
      // DeepInfra and Fireworks' Llama 3.3 are not in the dataset: their list prices are stated here.
      { provider: 'deepinfra', model: 'meta-llama/Llama-3.3-70B-Instruct', statedPricing: { prompt: 0.23, completion: 0.4 }, contextLength: 131_072 },
      { provider: 'groq', model: 'llama-3.3-70b-versatile', contextLength: 131_072, maxOutputTokens: 32_768 },
      { provider: 'together', model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', contextLength: 131_072 },
      { provider: 'fireworks', model: 'accounts/fireworks/models/llama-v3p3-70b-instruct', statedPricing: { prompt: 0.9, completion: 0.9 }, contextLength: 131_072 },
    ],
    parameters: PARAMETERS.open,
    input: ['text'],
  },
  {
    slug: 'meta-llama/llama-4-maverick',
    name: 'Llama 4 Maverick',
    endpoints: [
      { provider: 'groq', model: 'meta-llama/llama-4-maverick-17b-128e-instruct' },
      { provider: 'together', model: 'meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8', contextLength: 1_048_576 },
      fireworks('llama4-maverick-instruct-basic'),
    ],
    parameters: PARAMETERS.open,
    input: VISION,
  },
  {
    slug: 'meta-llama/llama-4-scout',
    name: 'Llama 4 Scout',
    endpoints: [
      { provider: 'groq', model: 'meta-llama/llama-4-scout-17b-16e-instruct', contextLength: 131_072 },
      { provider: 'together', model: 'meta-llama/Llama-4-Scout-17B-16E-Instruct', contextLength: 1_048_576 },
    ],
    parameters: PARAMETERS.open,
    input: VISION,
  },
  {
    slug: 'meta-llama/llama-3.1-8b-instruct',
    name: 'Llama 3.1 8B Instruct',
    endpoints: [{ provider: 'groq', model: 'llama-3.1-8b-instant', contextLength: 131_072 }, { ...fireworks('llama-v3p1-8b-instruct') }],
    parameters: PARAMETERS.open,
    input: ['text'],
  },

  // DeepSeek, first party and on Fireworks.
  {
    slug: 'deepseek/deepseek-chat',
    name: 'DeepSeek Chat',
    endpoints: [{ provider: 'deepseek', model: 'deepseek-chat', maxOutputTokens: 8_192 }],
    parameters: PARAMETERS.openWithoutSeed,
    input: ['text'],
  },
  {
    slug: 'deepseek/deepseek-r1',
    name: 'DeepSeek R1',
    endpoints: [{ provider: 'deepseek', model: 'deepseek-reasoner', maxOutputTokens: 64_000 }],
    parameters: PARAMETERS.deepseekReasoner,
    input: ['text'],
  },
  { slug: 'deepseek/deepseek-v3.2', name: 'DeepSeek V3.2', endpoints: [fireworks('deepseek-v3p2')], parameters: PARAMETERS.open, input: ['text'] },
  {
    slug: 'deepseek/deepseek-v4-flash',
    endpoints: [{ provider: 'deepseek', model: 'deepseek-v4-flash' }, fireworks('deepseek-v4-flash')],
    parameters: PARAMETERS.openReasoningWithoutSeed,
    input: ['text'],
  },
  {
    slug: 'deepseek/deepseek-v4-pro',
    endpoints: [{ provider: 'deepseek', model: 'deepseek-v4-pro' }, fireworks('deepseek-v4-pro')],
    parameters: PARAMETERS.openReasoningWithoutSeed,
    input: ['text'],
  },

  // Mistral, first party. `mistral-large` follows Mistral's `-latest` alias, as OpenRouter's slug does.
  { slug: 'mistralai/mistral-large', name: 'Mistral Large', endpoints: [{ provider: 'mistral', model: 'mistral-large-latest', contextLength: 131_072 }], parameters: PARAMETERS.openWithoutSeed, input: ['text'] },
  { slug: 'mistralai/mistral-large-2512', endpoints: [{ provider: 'mistral', model: 'mistral-large-2512' }], parameters: PARAMETERS.openWithoutSeed, input: VISION },
  { slug: 'mistralai/mistral-medium-3.1', name: 'Mistral Medium 3.1', endpoints: [{ provider: 'mistral', model: 'mistral-medium-2508' }], parameters: PARAMETERS.openWithoutSeed, input: VISION },
  { slug: 'mistralai/mistral-medium-3-5', endpoints: [{ provider: 'mistral', model: 'mistral-medium-3.5' }], parameters: PARAMETERS.openWithoutSeed, input: VISION },
  { slug: 'mistralai/mistral-small-2603', endpoints: [{ provider: 'mistral', model: 'mistral-small-2603' }], parameters: PARAMETERS.openWithoutSeed, input: VISION },
  { slug: 'mistralai/devstral-2512', endpoints: [{ provider: 'mistral', model: 'devstral-2512' }], parameters: PARAMETERS.openWithoutSeed, input: ['text'] },
  { slug: 'mistralai/codestral-2508', endpoints: [{ provider: 'mistral', model: 'codestral-2508' }], parameters: PARAMETERS.openWithoutSeed, input: ['text'] },
  { slug: 'mistralai/ministral-14b-2512', endpoints: [{ provider: 'mistral', model: 'ministral-14b-2512' }], parameters: PARAMETERS.openWithoutSeed, input: VISION },
  { slug: 'mistralai/ministral-8b-2512', endpoints: [{ provider: 'mistral', model: 'ministral-8b-2512' }], parameters: PARAMETERS.openWithoutSeed, input: VISION },
  { slug: 'mistralai/ministral-3b-2512', endpoints: [{ provider: 'mistral', model: 'ministral-3b-2512' }], parameters: PARAMETERS.openWithoutSeed, input: VISION },

  // xAI, first party. OpenRouter's `grok-4-fast` and `grok-4.1-fast` are the reasoning variants.
  { slug: 'x-ai/grok-4', name: 'Grok 4', endpoints: [{ provider: 'xai', model: 'grok-4' }], input: VISION },
  { slug: 'x-ai/grok-4-fast', name: 'Grok 4 Fast', endpoints: [{ provider: 'xai', model: 'grok-4-fast-reasoning' }], input: VISION },
  { slug: 'x-ai/grok-4.1-fast', name: 'Grok 4.1 Fast', endpoints: [{ provider: 'xai', model: 'grok-4-1-fast-reasoning' }], input: VISION },
  { slug: 'x-ai/grok-4.20', endpoints: [{ provider: 'xai', model: 'grok-4.20' }], input: VISION },
  { slug: 'x-ai/grok-4.3', endpoints: [{ provider: 'xai', model: 'grok-4.3' }], input: VISION },
  { slug: 'x-ai/grok-4.5', endpoints: [{ provider: 'xai', model: 'grok-4.5' }], input: VISION },
  { slug: 'x-ai/grok-4.6', endpoints: [{ provider: 'xai', model: 'grok-4.6' }], input: VISION },
  { slug: 'x-ai/grok-code-fast-1', endpoints: [{ provider: 'xai', model: 'grok-code-fast-1' }], input: ['text'] },
  { slug: 'x-ai/grok-3', endpoints: [{ provider: 'xai', model: 'grok-3' }], parameters: PARAMETERS.open, input: ['text'] },
  { slug: 'x-ai/grok-3-mini', endpoints: [{ provider: 'xai', model: 'grok-3-mini' }], input: ['text'] },

  // Qwen, on the open hosts.
  { slug: 'qwen/qwen3-32b', name: 'Qwen3 32B', endpoints: [{ provider: 'groq', model: 'qwen/qwen3-32b' }], parameters: PARAMETERS.openReasoning, input: ['text'] },
  { slug: 'qwen/qwen3-235b-a22b', endpoints: [fireworks('qwen3-235b-a22b')], parameters: PARAMETERS.openReasoning, input: ['text'] },
  { slug: 'qwen/qwen3.7-plus', endpoints: [fireworks('qwen3p7-plus')], parameters: PARAMETERS.openReasoning, input: ['text'] },

  // Moonshot AI, first party and on the open hosts.
  { slug: 'moonshotai/kimi-k2', name: 'Kimi K2', endpoints: [{ provider: 'groq', model: 'moonshotai/kimi-k2-instruct' }], parameters: PARAMETERS.open, input: ['text'] },
  { slug: 'moonshotai/kimi-k2.5', endpoints: [{ provider: 'moonshotai', model: 'kimi-k2.5' }, fireworks('kimi-k2p5')], parameters: PARAMETERS.openReasoning, input: ['text'] },
  { slug: 'moonshotai/kimi-k2.6', endpoints: [{ provider: 'moonshotai', model: 'kimi-k2.6' }, { ...fireworks('kimi-k2p6'), contextLength: 262_144 }], parameters: PARAMETERS.openReasoning, input: ['text'] },
  { slug: 'moonshotai/kimi-k3', endpoints: [{ provider: 'moonshotai', model: 'kimi-k3' }, fireworks('kimi-k3')], parameters: PARAMETERS.openReasoning, input: ['text'] },

  // Z.AI's GLM, first party and on Fireworks.
  { slug: 'z-ai/glm-5.2', name: 'GLM-5.2', endpoints: [{ provider: 'z-ai', model: 'glm-5.2' }, fireworks('glm-5p2')], parameters: PARAMETERS.openReasoning, input: ['text'] },
  { slug: 'z-ai/glm-5.3', name: 'GLM-5.3', endpoints: [{ provider: 'z-ai', model: 'glm-5.3' }], parameters: PARAMETERS.openReasoning, input: ['text'] },
  { slug: 'z-ai/glm-5.3-flash', name: 'GLM-5.3 Flash', endpoints: [{ provider: 'z-ai', model: 'glm-5.3-flash' }], parameters: PARAMETERS.openReasoning, input: ['text'] },

  // Embedding models: input tokens are all they cost. The dataset prices them; Google's context window is 2,048 tokens.
  openai('text-embedding-3-small', { name: 'Text Embedding 3 Small', output: ['embeddings'], input: ['text'], parameters: PARAMETERS.openaiEmbeddings }),
  openai('text-embedding-3-large', { name: 'Text Embedding 3 Large', output: ['embeddings'], input: ['text'], parameters: PARAMETERS.openaiEmbeddings }),
  openai('text-embedding-ada-002', { name: 'Text Embedding Ada 002', output: ['embeddings'], input: ['text'], parameters: PARAMETERS.openaiLegacyEmbeddings }),
  gemini('gemini-embedding-001', { name: 'Gemini Embedding 001', output: ['embeddings'], input: ['text'], parameters: PARAMETERS.geminiEmbeddings, contextLength: 2_048 }),
  { slug: 'mistralai/mistral-embed-2312', name: 'Mistral Embed', endpoints: [{ provider: 'mistral', model: 'mistral-embed' }], output: ['embeddings'], input: ['text'], parameters: PARAMETERS.embeddings },

  // Perplexity's search models: a price per request on top of tokens.
  { slug: 'perplexity/sonar', endpoints: [{ provider: 'perplexity', model: 'sonar' }], input: ['text'] },
  { slug: 'perplexity/sonar-pro', endpoints: [{ provider: 'perplexity', model: 'sonar-pro' }], input: ['text'] },
  { slug: 'perplexity/sonar-reasoning-pro', endpoints: [{ provider: 'perplexity', model: 'sonar-reasoning-pro' }], input: ['text'] },
]
