/**
 * Usage and cost of one response, from the catalog prices of the endpoint that served it. The same
 * tokens always cost the same, streamed or not. BYOK (docs/decisions.md, BYOK): the provider bills the caller
 * directly (`upstream_inference_cost`), and `cost` is the gateway's fee, a share of the list price.
 */

import type { EndpointPricing } from './models'
import type { Usage } from '../providers/types'
import type { Attempt } from './routing'

export interface BilledUsage extends Usage {
  cost: number
  is_byok: boolean
  cost_details: {
    upstream_inference_cost: number | null
    upstream_inference_input_cost: number
    upstream_inference_output_cost: number
  }
}

/** Dollar amounts kept to 12 decimal places: no binary-float tails such as 0.30000000000000004. */
const round = (amount: number) => Math.round(amount * 1e12) / 1e12

export const billUsage = (usage: Usage, pricing: EndpointPricing, options: { isByok: boolean; byokFeeRate: number }): BilledUsage => {
  const cached = Math.min(usage.input_tokens_details.cached_tokens, usage.input_tokens)
  const inputCost = (usage.input_tokens - cached) * pricing.prompt + cached * (pricing.cachedPrompt ?? pricing.prompt) + (pricing.request ?? 0)
  const outputCost = usage.output_tokens * pricing.completion
  const listCost = inputCost + outputCost
  // Object.assign rather than `{ ...usage, cost, … }`: on Node 20 a spread followed by more fields takes V8's slow
  // path, about 4 µs per request for this one object (bench/README.md). The keys and their order are the same.
  return Object.assign({}, usage, {
    cost: round(options.isByok ? listCost * options.byokFeeRate : listCost),
    is_byok: options.isByok,
    cost_details: {
      upstream_inference_cost: options.isByok ? round(listCost) : null,
      upstream_inference_input_cost: round(inputCost),
      upstream_inference_output_cost: round(outputCost),
    },
  })
}

/** The usage priced at the prices of the endpoint `attempt` called, as BYOK when it used the caller's key. */
export const billAttempt = (usage: Usage, attempt: Attempt, byokFeeRate: number): BilledUsage =>
  billUsage(usage, attempt.endpoint.pricing, { isByok: attempt.credential !== null, byokFeeRate })
