/**
 * Price overrides: the operator's corrections to catalog prices, given in configuration (`prices`) or in a
 * price document the gateway reloads (`priceSource`). Each one names a model, optionally one provider's
 * endpoint of it, and only the prices that change (docs/interface.md, "Model catalog and prices").
 */

import * as v from 'valibot'
import { MODEL_SLUG_MAX, MODEL_SLUG_PATTERN } from '../core/patterns'

/** More overrides than any catalog has endpoints; a document past it is refused rather than trimmed. */
export const PRICE_OVERRIDES_MAX = 10_000

// USD per token (or per request, per image, per web search): a price is a finite number, never negative.
const PriceSchema = v.pipe(v.number('must be a number'), v.finite('must be a finite number'), v.minValue(0, 'must not be negative'))

// `null` clears an optional price: the endpoint falls back to `prompt` (cache prices) or to no charge.
export const PricingOverrideSchema = v.pipe(
  v.strictObject(
    {
      prompt: v.optional(PriceSchema),
      completion: v.optional(PriceSchema),
      cachedPrompt: v.optional(v.nullable(PriceSchema)),
      cacheWritePrompt: v.optional(v.nullable(PriceSchema)),
      cacheWrite1hPrompt: v.optional(v.nullable(PriceSchema)),
      request: v.optional(v.nullable(PriceSchema)),
      image: v.optional(v.nullable(PriceSchema)),
      webSearch: v.optional(v.nullable(PriceSchema)),
    },
    'is not a price field (prompt, completion, cachedPrompt, cacheWritePrompt, cacheWrite1hPrompt, request, image, webSearch)',
  ),
  v.check((pricing) => Object.keys(pricing).length > 0, 'must set at least one price'),
)

export const PriceOverrideSchema = v.strictObject(
  {
    model: v.pipe(v.string(), v.maxLength(MODEL_SLUG_MAX), v.regex(MODEL_SLUG_PATTERN, 'must be a model slug <author>/<name>')),
    /** One endpoint's provider; every endpoint of the model when absent. */
    provider: v.optional(v.pipe(v.string(), v.regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'must be a provider id'))),
    pricing: PricingOverrideSchema,
  },
  'is not a field of a price override (model, provider, pricing)',
)
export type PriceOverride = v.InferOutput<typeof PriceOverrideSchema>

export const PriceOverridesSchema = v.pipe(v.array(PriceOverrideSchema), v.maxLength(PRICE_OVERRIDES_MAX, `must have at most ${PRICE_OVERRIDES_MAX} items`))

/** A price document, as a file or an HTTPS answer holds it: `{ "prices": [...] }`. */
export const PriceDocumentSchema = v.strictObject({ prices: PriceOverridesSchema }, 'is not a field of a price document (prices)')
export type PriceDocument = v.InferOutput<typeof PriceDocumentSchema>
