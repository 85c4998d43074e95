/**
 * Usage and cost of a response that took several turns: each turn priced on its own (billing.ts, the
 * endpoint that served that turn), then added up with what the server tools cost. The same function
 * prices a streamed and a whole answer.
 */

import { emptyUsage, inputTokensDetails } from '../../providers/types'
import type { BilledUsage } from '../../engine/billing'

/** OpenRouter's usage detail for server tools (docs/decisions.md, "Server tools"). */
export interface ServerToolUseDetails {
  tool_calls_requested: number
  tool_calls_executed: number
  web_search_requests: number
}

export interface LoopUsage extends BilledUsage {
  server_tool_use_details: ServerToolUseDetails
}

// As billing.ts: dollars kept to 12 decimal places, so sums carry no binary-float tails.
const round = (amount: number) => Math.round(amount * 1e12) / 1e12

/** Every turn's usage added up, the tools' cost on top. `is_byok` when any turn used the caller's key. */
export const sumLoopUsage = (turns: readonly BilledUsage[], toolCost: number, details: ServerToolUseDetails): LoopUsage => {
  const base = emptyUsage()
  let cached = 0
  let written = 0
  let cost = toolCost
  let upstream: number | null = null
  let inputCost = 0
  let outputCost = 0
  let isByok = false
  for (const turn of turns) {
    base.input_tokens += turn.input_tokens
    base.output_tokens += turn.output_tokens
    base.total_tokens += turn.total_tokens
    base.output_tokens_details.reasoning_tokens += turn.output_tokens_details.reasoning_tokens
    cached += turn.input_tokens_details.cached_tokens
    written += turn.input_tokens_details.cache_write_tokens ?? 0
    cost += turn.cost
    if (turn.cost_details.upstream_inference_cost !== null) upstream = (upstream ?? 0) + turn.cost_details.upstream_inference_cost
    inputCost += turn.cost_details.upstream_inference_input_cost
    outputCost += turn.cost_details.upstream_inference_output_cost
    isByok ||= turn.is_byok
  }
  return {
    ...base,
    input_tokens_details: inputTokensDetails(cached, written),
    cost: round(cost),
    is_byok: isByok,
    cost_details: {
      upstream_inference_cost: upstream === null ? null : round(upstream),
      upstream_inference_input_cost: round(inputCost),
      upstream_inference_output_cost: round(outputCost),
    },
    server_tool_use_details: details,
  }
}
