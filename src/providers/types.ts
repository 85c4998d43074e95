/**
 * Canonical shapes of the Responses API as modelgate speaks it on both sides. Item and event kinds
 * beyond these stay loose (`Record<string, unknown>`): a new upstream field must never break us.
 */

export type Role = 'user' | 'assistant' | 'system' | 'developer'

export type InputContentPart =
  | { type: 'input_text'; text: string }
  | { type: 'input_image'; image_url?: string | null; file_id?: string | null; detail?: 'auto' | 'low' | 'high' }
  | { type: 'input_file'; file_data?: string; file_url?: string; file_id?: string | null; filename?: string }
  | { type: 'output_text'; text: string; annotations?: unknown[] }
  | { type: 'refusal'; refusal: string }
  | ({ type: string } & Record<string, unknown>)

export type MessageItem = {
  type: 'message'
  role: Role
  content: string | InputContentPart[]
  id?: string
  status?: string
}

export type FunctionCallItem = {
  type: 'function_call'
  id?: string
  call_id: string
  name: string
  arguments: string
  status?: string
}

export type FunctionCallOutputItem = {
  type: 'function_call_output'
  call_id: string
  output: string | InputContentPart[]
  id?: string
  status?: string
}

export type ReasoningItem = {
  type: 'reasoning'
  id?: string
  summary: Array<{ type: 'summary_text'; text: string }>
  content?: Array<{ type: 'reasoning_text'; text: string }>
  encrypted_content?: string | null
  signature?: string
  format?: string
  status?: string
}

export type InputItem = MessageItem | FunctionCallItem | FunctionCallOutputItem | ReasoningItem | ({ type?: string } & Record<string, unknown>)

export type OutputText = { type: 'output_text'; text: string; annotations: unknown[]; logprobs?: unknown[] }

export type OutputMessage = {
  id: string
  type: 'message'
  role: 'assistant'
  status: 'in_progress' | 'completed' | 'incomplete'
  content: Array<OutputText | { type: 'refusal'; refusal: string }>
}

export type OutputFunctionCall = {
  id: string
  type: 'function_call'
  status: 'in_progress' | 'completed' | 'incomplete'
  call_id: string
  name: string
  arguments: string
}

export type OutputReasoning = {
  id: string
  type: 'reasoning'
  summary: Array<{ type: 'summary_text'; text: string }>
  content?: Array<{ type: 'reasoning_text'; text: string }>
  encrypted_content?: string | null
  /** Provider signature needed to send the reasoning back (Anthropic, Gemini). */
  signature?: string
  /** Which provider family produced it (docs/decisions.md, POST /responses `format`). */
  format?: string
  status?: 'in_progress' | 'completed' | 'incomplete'
}

/**
 * A generated image, as OpenAI's Responses API returns what its `image_generation` tool made. Every family's
 * image output takes this shape (a Gemini `inlineData` part too), so each writer has one kind to encode.
 */
export type OutputImage = {
  id: string
  type: 'image_generation_call'
  status: 'in_progress' | 'generating' | 'completed' | 'failed'
  /** The image, base64 without a `data:` prefix; null until it is generated. */
  result: string | null
  /** Its format (`png`, `jpeg`, `webp`…): the subtype of its media type, as OpenAI names it. */
  output_format?: string
  [key: string]: unknown
}

/** Output items modelgate builds, plus kinds a provider runs itself (`web_search_call`, …) passed through. */
export type OutputItem = OutputMessage | OutputFunctionCall | OutputReasoning | OutputImage | ({ type: string; id?: string } & Record<string, unknown>)

/** The `image/<format>` media type of a generated image; OpenAI's default format, PNG, when it names none. */
export const imageMediaType = (image: { output_format?: unknown }): string =>
  `image/${typeof image.output_format === 'string' && image.output_format !== '' ? image.output_format : 'png'}`

/** The generated images of an answer that were completed with their data: what an answer is billed for per image. */
export const completedImages = (output: readonly OutputItem[]): OutputImage[] =>
  output.filter((item): item is OutputImage => {
    if (item.type !== 'image_generation_call') return false
    const image = item as OutputImage
    return image.status === 'completed' && typeof image.result === 'string' && image.result !== ''
  })

export type FunctionTool = {
  type: 'function'
  name: string
  description?: string | null
  parameters?: Record<string, unknown> | null
  strict?: boolean | null
}

export type Tool = FunctionTool | ({ type: string } & Record<string, unknown>)

export type ToolChoice =
  | 'auto'
  | 'none'
  | 'required'
  | { type: 'function'; name: string }
  | ({ type: string } & Record<string, unknown>)

export type TextFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: Record<string, unknown>; description?: string; strict?: boolean | null }

/** The request fields adapters translate (validated by src/engine/request.schemas.ts). */
export interface ResponsesRequest {
  model: string
  input: string | InputItem[]
  instructions?: string | null
  stream?: boolean
  tools?: Tool[]
  tool_choice?: ToolChoice
  parallel_tool_calls?: boolean | null
  temperature?: number | null
  top_p?: number | null
  top_k?: number
  frequency_penalty?: number | null
  presence_penalty?: number | null
  max_output_tokens?: number | null
  top_logprobs?: number | null
  reasoning?: { effort?: string | null; summary?: string | null; enabled?: boolean; max_tokens?: number | null } | null
  text?: { format?: TextFormat; verbosity?: string | null } | null
  metadata?: Record<string, string> | null
  service_tier?: string | null
  cache_control?: { type: 'ephemeral'; ttl?: string }
  prompt_cache_key?: string | null
  include?: string[] | null
  /** What the answer may hold: text, generated images or both (docs/decisions.md, image output). */
  modalities?: Array<'text' | 'image'>
  /** Provider-specific image options (OpenRouter's keys: `aspect_ratio`, `image_size`, `quality`…). */
  image_config?: Record<string, string | number | unknown[]>
  [key: string]: unknown
}

/**
 * The upstream provider's own web search (`service:web_search` with `engine: "native"`), in one canonical form
 * every adapter that can run it renders as its provider's tool (OpenAI's `web_search`, Anthropic's
 * `web_search_20250305`). It rides beside the body (`UpstreamCall.nativeWebSearch`), never in `tools`, so a
 * caller cannot smuggle it to an adapter that did not declare it.
 */
export interface NativeWebSearch {
  /** Searches one answer may make at most. */
  maxUses?: number
  /** Hosts (subdomains included), each optionally with a path prefix; results only from these. */
  allowedDomains?: readonly string[]
  /** Hosts (subdomains included), each optionally with a path prefix; never results from these. */
  blockedDomains?: readonly string[]
  searchContextSize?: 'low' | 'medium' | 'high'
  userLocation?: { type: 'approximate'; city?: string; country?: string; region?: string; timezone?: string }
}

/**
 * The parts of a native web search an adapter may honour (`ProviderAdapter.nativeWebSearch`): each field of
 * `NativeWebSearch` that is set, and `domain_paths` when a domain entry has a path.
 */
export const NATIVE_WEB_SEARCH_PARAMETERS = ['max_uses', 'allowed_domains', 'blocked_domains', 'domain_paths', 'search_context_size', 'user_location'] as const
export type NativeWebSearchParameter = (typeof NATIVE_WEB_SEARCH_PARAMETERS)[number]

/** The parameters `search` sets, by name. */
export const nativeWebSearchParameters = (search: NativeWebSearch): NativeWebSearchParameter[] => {
  const used: NativeWebSearchParameter[] = []
  if (search.maxUses !== undefined) used.push('max_uses')
  if (search.allowedDomains !== undefined) used.push('allowed_domains')
  if (search.blockedDomains !== undefined) used.push('blocked_domains')
  if ([...(search.allowedDomains ?? []), ...(search.blockedDomains ?? [])].some((entry) => entry.includes('/'))) used.push('domain_paths')
  if (search.searchContextSize !== undefined) used.push('search_context_size')
  if (search.userLocation !== undefined) used.push('user_location')
  return used
}

/** The names routing and the catalog know the request extensions by (OpenRouter's `supported_parameters` names). */
export const REQUEST_EXTENSION_NAMES = ['stop', 'seed', 'logprobs', 'logit_bias'] as const
export type RequestExtensionName = (typeof REQUEST_EXTENSION_NAMES)[number]

/**
 * Settings only some inbound formats carry (Chat Completions `stop`, `seed`, `logprobs` / `top_logprobs`,
 * `logit_bias`; Messages `stop_sequences`). The public Responses body has no such fields, so they ride
 * beside it (`UpstreamCall.extensions`) rather than in it: a `/responses` caller cannot set them by
 * sending an unknown key. Routing hands a call that uses one only to an adapter that declares it
 * (`ProviderAdapter.requestExtensions`).
 */
export interface RequestExtensions {
  /** Sequences that end the answer when generated (not included in it). */
  stop?: readonly string[]
  /** Asks for deterministic sampling, as far as the upstream offers it. */
  seed?: number
  /** Log probabilities of the output tokens, each with its `topLogprobs` most likely alternatives (0–20). */
  logprobs?: { topLogprobs: number }
  /** Token id (as the upstream's tokenizer numbers it) → bias from -100 to 100. */
  logitBias?: Readonly<Record<string, number>>
}

/** The extensions `extensions` sets, by name. */
export const extensionsUsed = (extensions: RequestExtensions | undefined): RequestExtensionName[] => {
  if (!extensions) return []
  const names: RequestExtensionName[] = []
  if (extensions.stop !== undefined) names.push('stop')
  if (extensions.seed !== undefined) names.push('seed')
  if (extensions.logprobs !== undefined) names.push('logprobs')
  if (extensions.logitBias !== undefined) names.push('logit_bias')
  return names
}

export type Usage = {
  input_tokens: number
  /**
   * `cached_tokens` were read from the provider's prompt cache; `cache_write_tokens` were written to it (present
   * only when the provider reported writes). Both are part of `input_tokens` and priced at their own rates.
   */
  input_tokens_details: {
    cached_tokens: number
    cache_write_tokens?: number
    /**
     * The part of `cache_write_tokens` written to a cache kept one hour (Anthropic's `ttl: "1h"`), which costs more
     * than a five-minute write. Only for pricing: billing drops it, so clients never see it.
     */
    cache_write_1h_tokens?: number
  }
  output_tokens: number
  /**
   * `image_tokens`: the part of `output_tokens` that encodes generated images, where the provider counts it apart
   * (Gemini); present only then. An endpoint with a per-image price bills those tokens per image instead.
   */
  output_tokens_details: { reasoning_tokens: number; image_tokens?: number }
  total_tokens: number
}

/** `input_tokens_details` with `cache_write_tokens` only when there were writes (most answers have none). */
export const inputTokensDetails = (cached: number, written: number, writtenFor1h = 0): Usage['input_tokens_details'] =>
  written > 0
    ? writtenFor1h > 0
      ? { cached_tokens: cached, cache_write_tokens: written, cache_write_1h_tokens: Math.min(writtenFor1h, written) }
      : { cached_tokens: cached, cache_write_tokens: written }
    : { cached_tokens: cached }

export const emptyUsage = (): Usage => ({
  input_tokens: 0,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 0,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 0,
})
