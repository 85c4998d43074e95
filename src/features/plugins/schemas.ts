/**
 * The `plugins` array's schema (spec: discriminated by `id`). Every plugin has a strict schema of its own (unknown
 * fields refused): `<id>.schema.ts` for the plugins of the registry (registry.ts), routers/schemas.ts and
 * fusion/schemas.ts for the ones that choose the models.
 */

import * as v from 'valibot'
import { ContextCompressionPluginSchema } from './context-compression.schema'
import { FileParserPluginSchema } from './file-parser.schema'
import { ModerationPluginSchema } from './moderation.schema'
import { ResponseHealingPluginSchema } from './response-healing.schema'
import { WebFetchPluginSchema } from './web-fetch.schema'
import { WebPluginSchema } from './web.schema'
import { FusionPluginSchema } from './fusion/schemas'
import { ROUTER_PLUGIN_SCHEMAS } from './routers/schemas'

export const PLUGIN_IDS = [
  'auto-router', 'auto-beta-router', 'moderation', 'web', 'web-fetch', 'file-parser', 'response-healing',
  'context-compression', 'pareto-router', 'fusion', 'switchyard-router',
] as const

export type PluginId = (typeof PLUGIN_IDS)[number]

export const PluginSchema = v.variant(
  'id',
  [
    ResponseHealingPluginSchema,
    ContextCompressionPluginSchema,
    ModerationPluginSchema,
    FileParserPluginSchema,
    WebPluginSchema,
    WebFetchPluginSchema,
    // The routers and fusion choose the models (src/features/plugins/routers/, fusion/), before plugins run.
    ...ROUTER_PLUGIN_SCHEMAS,
    FusionPluginSchema,
  ],
  `must have an id among ${PLUGIN_IDS.join(', ')}`,
)

export type PluginSettings = v.InferOutput<typeof PluginSchema>
