import * as v from 'valibot'

/** OpenRouter's `ModerationPlugin` has only its id; `enabled` is every plugin's switch. */
export const ModerationPluginSchema = v.strictObject({
  id: v.literal('moderation'),
  enabled: v.optional(v.boolean()),
})

export type ModerationPluginSettings = v.InferOutput<typeof ModerationPluginSchema>
