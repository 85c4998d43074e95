/**
 * The shape of a catalog entry: slug `<author>/<name>[:variant]` → the endpoints that serve it (provider,
 * upstream model id, context length, prices, supported parameters). Its own module so the generated
 * snapshot (models.snapshot.ts) can be typed without importing the catalog that imports it.
 */

export interface EndpointPricing {
  /** USD per input token. */
  prompt: number
  /** USD per output token (reasoning included). */
  completion: number
  /** USD per cached input token read; `prompt` when absent. */
  cachedPrompt?: number
  /** USD per input token written to the provider's prompt cache (Anthropic's default five-minute rate); `prompt` when absent. */
  cacheWritePrompt?: number
  /**
   * USD per input token written to a prompt cache kept one hour (Anthropic's `ttl: "1h"`, twice the input price);
   * `cacheWritePrompt` when absent.
   */
  cacheWrite1hPrompt?: number
  /** USD per request. */
  request?: number
  /** USD per generated (output) image. */
  image?: number
  /** USD per web search the provider ran itself (a `web_search_call` it returned: `engine: "native"`). */
  webSearch?: number
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
  /** Whether the provider retains no prompt data (for `provider.zdr`); unknown when absent, which `zdr` excludes. */
  isZeroDataRetention?: boolean
  /**
   * Whether the provider may train on prompts (for `provider.data_collection: deny` and the guardrails'
   * `enable_*_model_training: false`); keeping them for abuse monitoring alone is the `isZeroDataRetention`
   * question. Unknown when absent, which those exclude: only `false` is known not to.
   */
  collectsData?: boolean
  /** The weights' number format the provider serves (for `provider.quantizations`); `unknown` when absent. */
  quantization?: Quantization
  /** Whether the model's author allows distilling its output (for `provider.enforce_distillable_text`); unknown when absent. */
  isDistillable?: boolean
}

/** Number formats of served weights, in OpenRouter's names. */
export type Quantization = 'int4' | 'int8' | 'fp4' | 'mxfp4' | 'nvfp4' | 'fp6' | 'fp8' | 'mxfp8' | 'fp16' | 'bf16' | 'fp32'

/** What a model reads or writes, in OpenRouter's modality names. */
export type Modality = 'text' | 'image' | 'file' | 'audio' | 'video'

/** What a model produces: a modality, or `embeddings` (vectors, served by `POST /embeddings` only). */
export type OutputModality = Modality | 'embeddings'

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
  /** What the model produces; `['text']` when absent. `['embeddings']` marks an embedding model. */
  outputModalities?: readonly OutputModality[]
}
