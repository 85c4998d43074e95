import * as v from 'valibot'
import { integer } from '../../core/validation'
import { DomainListSchema } from '../server-tools/domains'


/** OpenRouter's `WebFetchPlugin`: the limits of `service:web_fetch`, applied to URLs in the user's message. */
export const WebFetchPluginSchema = v.strictObject({
  id: v.literal('web-fetch'),
  enabled: v.optional(v.boolean()),
  max_uses: v.optional(integer(1, 100)),
  max_content_tokens: v.optional(integer(100, 1_000_000)),
  allowed_domains: v.optional(DomainListSchema),
  blocked_domains: v.optional(DomainListSchema),
})

export type WebFetchPluginSettings = v.InferOutput<typeof WebFetchPluginSchema>
