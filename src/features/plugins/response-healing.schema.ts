import * as v from 'valibot'

/** OpenRouter's `ResponseHealingPlugin`: nothing to set but whether it runs. */
export const ResponseHealingPluginSchema = v.strictObject({
  id: v.literal('response-healing'),
  enabled: v.optional(v.boolean()),
})

export type ResponseHealingPluginSettings = v.InferOutput<typeof ResponseHealingPluginSchema>
