import { describe, expect, it } from 'vitest'
import { billUsage } from '../../../src/engine/billing'

const usage = {
  input_tokens: 1_000,
  input_tokens_details: { cached_tokens: 400 },
  output_tokens: 50,
  output_tokens_details: { reasoning_tokens: 10 },
  total_tokens: 1_050,
}

describe('billUsage', () => {
  it("keeps the usage's own fields first and in their order, then cost, is_byok and cost_details", () => {
    const billed = billUsage(usage, { prompt: 2e-6, completion: 8e-6, cachedPrompt: 5e-7 }, { isByok: false, byokFeeRate: 0.05 })

    expect(JSON.stringify(billed)).toBe(
      JSON.stringify({
        ...usage,
        cost: 0.0018,
        is_byok: false,
        cost_details: { upstream_inference_cost: null, upstream_inference_input_cost: 0.0014, upstream_inference_output_cost: 0.0004 },
      }),
    )
    expect(billed.input_tokens_details).toEqual(usage.input_tokens_details)
  })

  it('bills a BYOK call at the fee rate and reports the list price as the upstream cost', () => {
    const billed = billUsage(usage, { prompt: 2e-6, completion: 8e-6, request: 0.001 }, { isByok: true, byokFeeRate: 0.05 })

    expect(billed.is_byok).toBe(true)
    expect(billed.cost_details).toEqual({ upstream_inference_cost: 0.0034, upstream_inference_input_cost: 0.003, upstream_inference_output_cost: 0.0004 })
    expect(billed.cost).toBe(0.00017)
  })
})
