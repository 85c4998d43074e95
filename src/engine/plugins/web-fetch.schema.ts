import * as v from 'valibot'
import { DomainListSchema } from '../server-tools/domains'

const count = (minimum: number, maximum: number) =>
  v.pipe(v.number(), v.integer('must be an integer'), v.minValue(minimum, `must be at least ${minimum}`), v.maxValue(maximum, `must be at most ${maximum}`))

/** OpenRouter's `WebFetchPlugin`: the limits of `service:web_fetch`, applied to URLs in the user's message. */
export const WebFetchPluginSchema = v.strictObject({
  id: v.literal('web-fetch'),
  enabled: v.optional(v.boolean()),
  max_uses: v.optional(count(1, 100)),
  max_content_tokens: v.optional(count(100, 1_000_000)),
  allowed_domains: v.optional(DomainListSchema),
  blocked_domains: v.optional(DomainListSchema),
})

export type WebFetchPluginSettings = v.InferOutput<typeof WebFetchPluginSchema>
