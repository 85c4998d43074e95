import * as v from 'valibot'
import { integer } from '../../core/validation'
import { DomainListSchema } from '../server-tools/domains'

const WEB_MODES = ['instant', 'fast', 'auto', 'deep-lite', 'deep', 'deep-reasoning', 'turbo', 'basic', 'advanced'] as const


/**
 * OpenRouter's `WebSearchPlugin` (docs/decisions.md, "Plugins"). `engine` names one of the operator's search
 * engines (`auto` means the default one; `native` is refused, see web.ts); the engine must honour the fields sent, or they are refused.
 */
export const WebPluginSchema = v.pipe(
  v.strictObject({
    id: v.literal('web'),
    enabled: v.optional(v.boolean()),
    engine: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'))),
    max_results: v.optional(integer(1, 25)),
    // One search a request: the plugin runs once, so any max_uses of at least 1 is honoured.
    max_uses: v.optional(integer(1, 30)),
    search_prompt: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(2000, 'must be at most 2000 characters'))),
    include_domains: v.optional(DomainListSchema),
    exclude_domains: v.optional(DomainListSchema),
    mode: v.optional(v.picklist(WEB_MODES, `must be one of ${WEB_MODES.join(', ')}`)),
    user_location: v.optional(
      v.nullable(
        v.strictObject({
          type: v.literal('approximate'),
          city: v.optional(v.nullable(v.string())),
          country: v.optional(v.nullable(v.string())),
          region: v.optional(v.nullable(v.string())),
          timezone: v.optional(v.nullable(v.string())),
        }),
      ),
    ),
  }),
  v.check((plugin) => !(plugin.include_domains && plugin.exclude_domains), 'include_domains and exclude_domains cannot be used together'),
)

export type WebPluginSettings = v.InferOutput<typeof WebPluginSchema>
