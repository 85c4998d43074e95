import * as v from 'valibot'

/** OpenRouter's `ContextCompressionPlugin`: one engine, `middle-out`. */
export const ContextCompressionPluginSchema = v.strictObject({
  id: v.literal('context-compression'),
  engine: v.optional(v.literal('middle-out', 'must be "middle-out"')),
  enabled: v.optional(v.boolean()),
})

export type ContextCompressionPluginSettings = v.InferOutput<typeof ContextCompressionPluginSchema>
