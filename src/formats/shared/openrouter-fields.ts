/**
 * OpenRouter's additions to the Chat Completions and Anthropic Messages bodies, checked alike on both routes:
 * routing (`provider`, `session_id`), plugins and `transforms`, image output and `trace`. Each takes the effect it has
 * on `/responses` once the route translates its body (docs/decisions.md, POST /chat/completions and POST /messages).
 */

import * as v from 'valibot'
import { boundedJson } from '../../core/validation'
import { ImageConfigSchema, ModalitiesSchema, ProviderPreferencesSchema, SESSION_ID_MAX } from '../../engine/request.schemas'
import { PluginSchema } from '../../features/plugins/schemas'
import { TransformsSchema } from './transforms'

export const OPENROUTER_REQUEST_ENTRIES = {
  session_id: v.optional(v.pipe(v.string(), v.maxLength(SESSION_ID_MAX, `must be at most ${SESSION_ID_MAX} characters`))),
  provider: v.optional(v.nullable(ProviderPreferencesSchema)),
  // Checked as on /responses; the engine refuses by name a plugin it does not run (src/features/plugins/registry.ts).
  plugins: v.optional(v.nullable(v.array(PluginSchema))),
  transforms: TransformsSchema,
  // Image output; `audio` (OpenRouter's third modality) fails the schema, naming the values it takes.
  modalities: v.optional(v.nullable(ModalitiesSchema)),
  image_config: v.optional(v.nullable(ImageConfigSchema)),
  // Kept in the usage ledger, as on /responses.
  trace: v.optional(v.nullable(boundedJson(v.record(v.string(), v.unknown())))),
}
