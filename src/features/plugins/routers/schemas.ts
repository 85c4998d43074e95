/**
 * The router plugins' fields (docs/decisions.md, "Plugins: routers and fusion"): `auto-router`, `auto-beta-router`,
 * `pareto-router` and `switchyard-router`. Strict objects: a field this gateway does not act on is a 400 naming it,
 * never a silent no-op.
 */

import * as v from 'valibot'

// The auto-router's pattern limits, as OpenRouter publishes them.
export const MODEL_PATTERNS_MAX = 1024
export const MODEL_PATTERN_LENGTH_MAX = 1024
export const MODEL_PATTERNS_TOTAL_MAX = 65_536

/** spec cost_tier bands, cheapest first (docs/decisions.md: each is a fifth of the candidates' price percentiles). */
export const COST_TIERS = ['low', 'medium', 'high', 'xhigh', 'max'] as const
export type CostTier = (typeof COST_TIERS)[number]

const ModelPatternsSchema = v.pipe(
  v.array(v.pipe(v.string(), v.minLength(1, 'patterns must not be empty'), v.maxLength(MODEL_PATTERN_LENGTH_MAX, `patterns must be at most ${MODEL_PATTERN_LENGTH_MAX} characters`))),
  v.maxLength(MODEL_PATTERNS_MAX, `at most ${MODEL_PATTERNS_MAX} patterns`),
  v.check((patterns) => patterns.reduce((total, pattern) => total + pattern.length, 0) <= MODEL_PATTERNS_TOTAL_MAX, `at most ${MODEL_PATTERNS_TOTAL_MAX} characters of patterns in total`),
)

const autoRouterFields = {
  enabled: v.optional(v.boolean()),
  allowed_models: v.optional(ModelPatternsSchema),
  excluded_models: v.optional(ModelPatternsSchema),
  cost_tier: v.optional(v.picklist(COST_TIERS, `must be one of ${COST_TIERS.join(', ')}`)),
}

export const AutoRouterPluginSchema = v.strictObject({
  id: v.literal('auto-router'),
  ...autoRouterFields,
  pin_model: v.optional(v.boolean()),
})

// OpenRouter's auto-beta-router has no pin_model (its SDK's AutoBetaRouterPlugin).
export const AutoBetaRouterPluginSchema = v.strictObject({ id: v.literal('auto-beta-router'), ...autoRouterFields })

export const PRICE_SOURCES = ['prompt', 'weighted_avg'] as const

export const ParetoRouterPluginSchema = v.strictObject({
  id: v.literal('pareto-router'),
  enabled: v.optional(v.boolean()),
  min_coding_score: v.optional(v.pipe(v.number(), v.minValue(0, 'must be at least 0'), v.maxValue(1, 'must be at most 1'))),
  /** USD per million input tokens (or of the weighted average, with `price_source: weighted_avg`). */
  max_price: v.optional(v.pipe(v.number(), v.minValue(0, 'must be at least 0'))),
  price_source: v.optional(v.picklist(PRICE_SOURCES, `must be one of ${PRICE_SOURCES.join(', ')}`)),
})

/** OpenRouter publishes no schema for it: `{id, enabled}` only. */
export const SwitchyardRouterPluginSchema = v.strictObject({ id: v.literal('switchyard-router'), enabled: v.optional(v.boolean()) })

export type AutoRouterPlugin = v.InferOutput<typeof AutoRouterPluginSchema>
export type AutoBetaRouterPlugin = v.InferOutput<typeof AutoBetaRouterPluginSchema>
export type ParetoRouterPlugin = v.InferOutput<typeof ParetoRouterPluginSchema>
export type SwitchyardRouterPlugin = v.InferOutput<typeof SwitchyardRouterPluginSchema>

/** The router plugins' schemas, as members of the request's `plugins` variant. */
export const ROUTER_PLUGIN_SCHEMAS = [AutoRouterPluginSchema, AutoBetaRouterPluginSchema, ParetoRouterPluginSchema, SwitchyardRouterPluginSchema] as const

export const ROUTER_PLUGIN_IDS = ['auto-router', 'auto-beta-router', 'pareto-router', 'switchyard-router'] as const
