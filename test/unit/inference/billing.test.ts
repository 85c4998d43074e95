/** Pricing of an answer (docs/decisions.md, POST /responses usage and cost; image output): tokens, requests and images. */

import { describe, expect, it } from 'vitest'
import { billUsage } from '../../../src/engine/billing'
import type { Usage } from '../../../src/providers/types'

const usage = (output: number, imageTokens?: number): Usage => ({
  input_tokens: 100,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: output,
  output_tokens_details: { reasoning_tokens: 0, ...(imageTokens === undefined ? {} : { image_tokens: imageTokens }) },
  total_tokens: 100 + output,
})

const SHARED = { isByok: false, byokFeeRate: 0.05 }

describe('billUsage with images', () => {
  it('adds images × the per-image price and leaves the image tokens out of the token price', () => {
    const billed = billUsage(usage(2_600, 2_580), { prompt: 0.000001, completion: 0.00001, image: 0.04 }, { ...SHARED, images: 2 })
    // 100 input tokens; 20 text tokens; two images.
    expect(billed.cost_details).toEqual({ upstream_inference_cost: null, upstream_inference_input_cost: 0.0001, upstream_inference_output_cost: 0.0802 })
    expect(billed.cost).toBe(0.0803)
  })

  it('bills every output token when the provider does not count image tokens apart (OpenAI’s image tool)', () => {
    const billed = billUsage(usage(50), { prompt: 0.000001, completion: 0.00001, image: 0.04 }, { ...SHARED, images: 1 })
    expect(billed.cost).toBe(0.0406)
  })

  it('prices image tokens as output tokens on an endpoint without a per-image price', () => {
    const billed = billUsage(usage(1_300, 1_290), { prompt: 0.000001, completion: 0.00003 }, { ...SHARED, images: 1 })
    expect(billed.cost).toBe(0.0391)
  })

  it('takes the BYOK fee on the images too', () => {
    const billed = billUsage(usage(1_300, 1_290), { prompt: 0.000001, completion: 0.00001, image: 0.04 }, { isByok: true, byokFeeRate: 0.05, images: 1 })
    expect(billed.cost_details.upstream_inference_cost).toBe(0.0402)
    expect(billed.cost).toBe(0.00201)
  })

  it('bills no image price without images', () => {
    expect(billUsage(usage(10), { prompt: 0.000001, completion: 0.00001, image: 0.04 }, SHARED).cost).toBe(0.0002)
  })
})

const textUsage = {
  input_tokens: 1_000,
  input_tokens_details: { cached_tokens: 400 },
  output_tokens: 50,
  output_tokens_details: { reasoning_tokens: 10 },
  total_tokens: 1_050,
}

describe('billUsage', () => {
  it("keeps the usage's own fields first and in their order, then cost, is_byok and cost_details", () => {
    const billed = billUsage(textUsage, { prompt: 2e-6, completion: 8e-6, cachedPrompt: 5e-7 }, { isByok: false, byokFeeRate: 0.05 })

    expect(JSON.stringify(billed)).toBe(
      JSON.stringify({
        ...textUsage,
        cost: 0.0018,
        is_byok: false,
        cost_details: { upstream_inference_cost: null, upstream_inference_input_cost: 0.0014, upstream_inference_output_cost: 0.0004 },
      }),
    )
    expect(billed.input_tokens_details).toEqual(textUsage.input_tokens_details)
  })

  it('bills a BYOK call at the fee rate and reports the list price as the upstream cost', () => {
    const billed = billUsage(textUsage, { prompt: 2e-6, completion: 8e-6, request: 0.001 }, { isByok: true, byokFeeRate: 0.05 })

    expect(billed.is_byok).toBe(true)
    expect(billed.cost_details).toEqual({ upstream_inference_cost: 0.0034, upstream_inference_input_cost: 0.003, upstream_inference_output_cost: 0.0004 })
    expect(billed.cost).toBe(0.00017)
  })
})
