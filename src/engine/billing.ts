/**
 * Usage and cost of one response, from the catalog prices of the endpoint that served it. The same
 * tokens and images always cost the same, streamed or not. Prompt tokens read from or written to the provider's
 * prompt cache are priced at the endpoint's own cache rates (writes cost more than plain input at
 * Anthropic, reads less almost everywhere). BYOK (docs/decisions.md, BYOK): the provider bills the caller
 * directly (`upstream_inference_cost`), and `cost` is the gateway's fee, a share of the list price.
 */

import type { EndpointPricing } from './models'
import { completedImages, inputTokensDetails, type OutputItem, type Usage } from '../providers/types'
import type { Attempt } from './routing'

export interface BilledUsage extends Usage {
  cost: number
  is_byok: boolean
  /** Present on an answer served from the response cache (docs/decisions.md, Response cache): no provider was paid. */
  is_cache_hit?: true
  cost_details: {
    upstream_inference_cost: number | null
    upstream_inference_input_cost: number
    upstream_inference_output_cost: number
  }
}

/** Dollar amounts kept to 12 decimal places: no binary-float tails such as 0.30000000000000004. */
const round = (amount: number) => Math.round(amount * 1e12) / 1e12

/** `input_tokens_details` as clients see it: the one-hour share of the cache writes is for pricing only. */
const publicInputDetails = ({ input_tokens_details: details }: Usage): Usage['input_tokens_details'] =>
  inputTokensDetails(details.cached_tokens, details.cache_write_tokens ?? 0)

/**
 * Output is billed per token, and per image at the endpoint's `image` price (docs/decisions.md, image output):
 * with such a price, the tokens a provider counts for the images (`image_tokens`) are left out of the
 * token price, since the per-image price is what those images cost.
 */
export const billUsage = (usage: Usage, pricing: EndpointPricing, options: { isByok: boolean; byokFeeRate: number; images?: number; webSearches?: number }): BilledUsage => {
  const cached = Math.min(usage.input_tokens_details.cached_tokens, usage.input_tokens)
  const written = Math.min(usage.input_tokens_details.cache_write_tokens ?? 0, usage.input_tokens - cached)
  const writtenFor1h = Math.min(usage.input_tokens_details.cache_write_1h_tokens ?? 0, written)
  const writePrice = pricing.cacheWritePrompt ?? pricing.prompt
  const inputCost =
    (usage.input_tokens - cached - written) * pricing.prompt +
    cached * (pricing.cachedPrompt ?? pricing.prompt) +
    (written - writtenFor1h) * writePrice +
    writtenFor1h * (pricing.cacheWrite1hPrompt ?? writePrice) +
    (pricing.request ?? 0) +
    // The provider's own searches are read into the prompt: their fee goes with the input, as the request fee does.
    (options.webSearches ?? 0) * (pricing.webSearch ?? 0)
  const images = options.images ?? 0
  const imageTokens = pricing.image === undefined ? 0 : Math.min(usage.output_tokens_details.image_tokens ?? 0, usage.output_tokens)
  const outputCost = (usage.output_tokens - imageTokens) * pricing.completion + images * (pricing.image ?? 0)
  const listCost = inputCost + outputCost
  // Object.assign rather than `{ ...usage, cost, … }`: on Node 20 a spread followed by more fields takes V8's slow
  // path, about 4 µs per request for this one object (bench/README.md). The keys and their order are the same.
  return Object.assign({}, usage, writtenFor1h > 0 ? { input_tokens_details: publicInputDetails(usage) } : undefined, {
    cost: round(options.isByok ? listCost * options.byokFeeRate : listCost),
    is_byok: options.isByok,
    cost_details: {
      upstream_inference_cost: options.isByok ? round(listCost) : null,
      upstream_inference_input_cost: round(inputCost),
      upstream_inference_output_cost: round(outputCost),
    },
  })
}

/**
 * The usage of an answer whose output is `output`, priced at the prices of the endpoint `attempt` called, as BYOK
 * when it used the caller's key. Whole and streamed answers both pass their final output items here.
 */
export const billAttempt = (usage: Usage, attempt: Attempt, byokFeeRate: number, output: readonly OutputItem[]): BilledUsage =>
  billUsage(usage, attempt.endpoint.pricing, {
    isByok: attempt.credential !== null,
    byokFeeRate,
    images: completedImages(output).length,
    webSearches: providerSearches(output),
  })

/** The web searches the provider ran itself in `output` (its `web_search_call` items), each billed at `webSearch`. */
const providerSearches = (output: readonly OutputItem[]): number => output.filter((item) => item.type === 'web_search_call' && item.status !== 'failed').length
