/**
 * The fusion plugin's fields, as OpenRouter names them (docs/decisions.md, "Plugins: routers and fusion"). Strict, so a field
 * this gateway does not act on is a 400 naming it.
 */

import * as v from 'valibot'
import { ModelSlugSchema } from '../../../core/validation'

export const ANALYSIS_MODELS_MAX = 8
export const FUSION_TOOLS_MAX = 8
export const FUSION_MAX_TOOL_CALLS_MAX = 16
/** OpenRouter's documented default for each panel member's tool loop. */
export const FUSION_MAX_TOOL_CALLS_DEFAULT = 4

export const FUSION_PRESET_NAMES = ['general-high', 'general-budget', 'general-fast'] as const
export type FusionPreset = (typeof FUSION_PRESET_NAMES)[number]

/** The panel, as the plugin and the `service:fusion` tool both name it. */
export const AnalysisModelsSchema = v.pipe(
  v.array(ModelSlugSchema),
  v.minLength(1, 'must name at least 1 model'),
  v.maxLength(ANALYSIS_MODELS_MAX, `at most ${ANALYSIS_MODELS_MAX} models`),
  v.check((models) => new Set(models).size === models.length, 'must not name a model twice'),
)

const FusionToolSchema = v.strictObject({
  type: v.pipe(v.string(), v.minLength(1, 'must not be empty')),
  parameters: v.optional(v.nullable(v.record(v.string(), v.unknown()))),
})

export const FusionPluginSchema = v.strictObject({
  id: v.literal('fusion'),
  enabled: v.optional(v.boolean()),
  analysis_models: v.optional(AnalysisModelsSchema),
  model: v.optional(ModelSlugSchema),
  preset: v.optional(v.picklist(FUSION_PRESET_NAMES, `must be one of ${FUSION_PRESET_NAMES.join(', ')}`)),
  max_tool_calls: v.optional(
    v.pipe(v.number(), v.integer('must be an integer'), v.minValue(1, 'must be at least 1'), v.maxValue(FUSION_MAX_TOOL_CALLS_MAX, `must be at most ${FUSION_MAX_TOOL_CALLS_MAX}`)),
  ),
  tools: v.optional(v.pipe(v.array(FusionToolSchema), v.maxLength(FUSION_TOOLS_MAX, `at most ${FUSION_TOOLS_MAX} tools`))),
})

export type FusionPlugin = v.InferOutput<typeof FusionPluginSchema>
