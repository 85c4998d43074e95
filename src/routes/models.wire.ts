/**
 * The catalog in OpenRouter's wire shapes: the model object of `GET /models`, the endpoint object of
 * `GET /models/{author}/{slug}/endpoints` and the provider object of `GET /providers`, as the
 * `@openrouter/sdk` response schemas validate them (docs/decisions.md, "Model and provider catalog").
 */

import { roundedPercentiles, type EndpointFigures } from '../engine/endpoint-performance'
import type { EndpointPricing, Modality, ModelEndpoint, ModelEntry, OutputModality } from '../engine/models'
import type { RegisteredProvider } from '../engine/providers'
import type { ProviderAdapter } from '../providers/contract'

/** A catalog endpoint together with the provider that serves it. */
export interface ServedEndpoint {
  endpoint: ModelEndpoint
  provider: RegisteredProvider
  /** The provider's adapter, for what its wire format declares (src/providers/contract.ts). */
  adapter: ProviderAdapter
}

// Prices are per token, so tiny: written out in full (`0.0000004`), never in exponent form, as OpenRouter does.
const decimal = new Intl.NumberFormat('en-US', { useGrouping: false, maximumSignificantDigits: 15, maximumFractionDigits: 20 })

// OpenRouter's names (`@openrouter/sdk` PublicPricing): `image` there is per input image, so ours, per
// generated image, is `image_output`.
const toPricingWire = (pricing: EndpointPricing) => ({
  prompt: decimal.format(pricing.prompt),
  completion: decimal.format(pricing.completion),
  ...(pricing.request === undefined ? {} : { request: decimal.format(pricing.request) }),
  ...(pricing.image === undefined ? {} : { image_output: decimal.format(pricing.image) }),
  ...(pricing.webSearch === undefined ? {} : { web_search: decimal.format(pricing.webSearch) }),
  ...(pricing.cachedPrompt === undefined ? {} : { input_cache_read: decimal.format(pricing.cachedPrompt) }),
  ...(pricing.cacheWritePrompt === undefined ? {} : { input_cache_write: decimal.format(pricing.cacheWritePrompt) }),
})

/**
 * The catalog names request fields as the Responses API does; clients filter on OpenRouter's Chat
 * Completions names (`supported_parameters=max_tokens`). `include` has no OpenRouter counterpart.
 */
const PARAMETER_WIRE_NAMES: Readonly<Record<string, readonly string[]>> = {
  max_output_tokens: ['max_tokens'],
  text: ['response_format', 'structured_outputs'],
  include: [],
}

export const toParameterWireNames = (parameters: readonly string[] = []): string[] => [
  ...new Set(parameters.flatMap((parameter) => PARAMETER_WIRE_NAMES[parameter] ?? [parameter])),
]

// OpenRouter's tokenizer groups, by the author half of the slug; others are `Other`.
const TOKENIZERS: Readonly<Record<string, string>> = {
  openai: 'GPT',
  anthropic: 'Claude',
  google: 'Gemini',
  'meta-llama': 'Llama3',
  deepseek: 'DeepSeek',
  mistralai: 'Mistral',
  'x-ai': 'Grok',
  qwen: 'Qwen',
}

export const authorOf = (slug: string): string => slug.split('/', 1)[0]!

/** OpenRouter's `architecture.tokenizer`: the model family, which its `arch` filter names. */
export const tokenizerOf = (entry: ModelEntry): string => TOKENIZERS[authorOf(entry.slug)] ?? 'Other'

export const inputModalitiesOf = (entry: ModelEntry): readonly Modality[] => entry.inputModalities ?? ['text']
export const outputModalitiesOf = (entry: ModelEntry): readonly OutputModality[] => entry.outputModalities ?? ['text']

const toArchitectureWire = (entry: ModelEntry) => ({
  modality: `${inputModalitiesOf(entry).join('+')}->${outputModalitiesOf(entry).join('+')}`,
  input_modalities: inputModalitiesOf(entry),
  output_modalities: outputModalitiesOf(entry),
  tokenizer: tokenizerOf(entry),
  // Prompt templates are the upstream's business: every endpoint here takes structured messages.
  instruct_type: null,
})

const descriptionOf = (entry: ModelEntry, served: readonly ServedEndpoint[]): string =>
  entry.description ?? `${entry.name}, served by ${[...new Set(served.map(({ provider }) => provider.displayName))].join(', ')}.`

/** Every parameter some serving endpoint honours (OpenRouter lists the union too). */
export const modelParameters = (served: readonly ServedEndpoint[]): string[] => [
  ...new Set(served.flatMap(({ endpoint }) => toParameterWireNames(endpoint.supportedParameters))),
]

/**
 * One `GET /models` entry. Pricing, limits and `top_provider` are those of the first endpoint, the
 * one routing tries first. `object` and `owned_by` are there for OpenAI clients, which read them.
 */
export const toModelWire = (entry: ModelEntry, served: readonly ServedEndpoint[], basePath: string) => {
  const top = served[0]!.endpoint
  return {
    id: entry.slug,
    canonical_slug: entry.slug,
    object: 'model',
    owned_by: authorOf(entry.slug),
    name: entry.name,
    created: entry.created ?? 0,
    description: descriptionOf(entry, served),
    context_length: Math.max(...served.map(({ endpoint }) => endpoint.contextLength)),
    architecture: toArchitectureWire(entry),
    pricing: toPricingWire(top.pricing),
    top_provider: { context_length: top.contextLength, max_completion_tokens: top.maxOutputTokens ?? null, is_moderated: false },
    per_request_limits: null,
    supported_parameters: modelParameters(served),
    default_parameters: null,
    supported_voices: null,
    links: { details: `${basePath}/models/${entry.slug}/endpoints` },
  }
}

/**
 * One endpoint of `GET /models/{author}/{slug}/endpoints`. Latency (ms to the first token) and throughput (output
 * tokens per second) are the gateway's measured `figures`, null while the endpoint is unmeasured; they follow the
 * recent traffic's decayed window rather than exactly 30 minutes (docs/decisions.md, "Model and provider catalog").
 * Uptime is not kept, so it is null.
 */
export const toEndpointWire = (entry: ModelEntry, { endpoint, provider, adapter }: ServedEndpoint, figures: EndpointFigures | undefined) => {
  const parameters = toParameterWireNames(endpoint.supportedParameters)
  const toolChoice = parameters.includes('tool_choice')
  return {
    name: `${provider.displayName} | ${entry.slug}`,
    model_id: entry.slug,
    model_name: entry.name,
    context_length: endpoint.contextLength,
    pricing: toPricingWire(endpoint.pricing),
    provider_name: provider.displayName,
    tag: endpoint.provider,
    quantization: endpoint.quantization ?? null,
    max_completion_tokens: endpoint.maxOutputTokens ?? null,
    max_prompt_tokens: null,
    supported_parameters: parameters,
    // Caching without markers in the request, as the provider bills it: a cached-input price, and no `cache_control` needed.
    supports_implicit_caching: endpoint.pricing.cachedPrompt !== undefined && adapter.cachesOnlyMarkedPrompts !== true,
    supports_tool_choice: { auto: toolChoice, none: toolChoice, required: toolChoice, function: toolChoice },
    uptime_last_30m: null,
    uptime_last_5m: null,
    uptime_last_1d: null,
    latency_last_30m: figures ? roundedPercentiles(figures.latencyMs, 1) : null,
    throughput_last_30m: figures?.tokensPerSecond ? roundedPercentiles(figures.tokensPerSecond, 1) : null,
  }
}

/** The `data` of `GET /models/{author}/{slug}/endpoints`. */
export const toModelEndpointsWire = (entry: ModelEntry, served: readonly ServedEndpoint[], figuresOf: (one: ServedEndpoint) => EndpointFigures | undefined) => {
  const architecture = toArchitectureWire(entry)
  return {
    id: entry.slug,
    name: entry.name,
    created: entry.created ?? 0,
    description: descriptionOf(entry, served),
    architecture,
    endpoints: served.map((one) => toEndpointWire(entry, one, figuresOf(one))),
  }
}

/**
 * The request parameters of an image model as `@openrouter/sdk`'s capability descriptors: the output
 * `modalities` it can be asked for, and the sampling ranges and output cap the gateway validates, where
 * an endpoint honours them.
 */
const imageParameters = (entry: ModelEntry, served: readonly ServedEndpoint[]) => {
  const parameters = new Set(modelParameters(served))
  const maxOutput = Math.max(0, ...served.map(({ endpoint }) => endpoint.maxOutputTokens ?? endpoint.contextLength))
  return {
    modalities: { type: 'enum' as const, values: [...outputModalitiesOf(entry)] },
    ...(parameters.has('temperature') ? { temperature: { type: 'range' as const, min: 0, max: 2 } } : {}),
    ...(parameters.has('top_p') ? { top_p: { type: 'range' as const, min: 0, max: 1 } } : {}),
    ...(parameters.has('max_tokens') ? { max_tokens: { type: 'range' as const, min: 1, max: maxOutput } } : {}),
  }
}

/**
 * One `GET /images/models` entry. Images are drawn through `/responses`, `/chat/completions` and
 * `/messages` with `modalities` (docs/decisions.md, Image output); there is no separate image API to
 * stream from, so `supports_streaming` is false and `endpoints` links the catalog's endpoint listing.
 */
export const toImageModelWire = (entry: ModelEntry, served: readonly ServedEndpoint[], basePath: string) => ({
  id: entry.slug,
  name: entry.name,
  created: entry.created ?? 0,
  description: descriptionOf(entry, served),
  architecture: { input_modalities: inputModalitiesOf(entry), output_modalities: outputModalitiesOf(entry) },
  endpoints: `${basePath}/models/${entry.slug}/endpoints`,
  supported_parameters: imageParameters(entry, served),
  supports_streaming: false,
})

/** One `GET /providers` entry; the policy pages are the operator's to know, so they are null. */
export const toProviderWire = (provider: RegisteredProvider) => ({
  name: provider.displayName,
  slug: provider.id,
  privacy_policy_url: null,
  terms_of_service_url: null,
  status_page_url: null,
})
