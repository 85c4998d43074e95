/**
 * The `plugins` array's schema (spec: discriminated by `id`). A plugin this gateway runs has a strict schema of
 * its own in `<id>.schema.ts` (unknown fields refused); the others keep a loose one here until they run, and
 * the registry refuses them by name when enabled (registry.ts).
 */

import * as v from 'valibot'
import { passThroughObject } from '../../core/validation'
import { ContextCompressionPluginSchema } from './context-compression.schema'
import { FileParserPluginSchema } from './file-parser.schema'
import { ModerationPluginSchema } from './moderation.schema'
import { ResponseHealingPluginSchema } from './response-healing.schema'
import { WebFetchPluginSchema } from './web-fetch.schema'
import { WebPluginSchema } from './web.schema'

export const PLUGIN_IDS = [
  'auto-router', 'auto-beta-router', 'moderation', 'web', 'web-fetch', 'file-parser', 'response-healing',
  'context-compression', 'pareto-router', 'fusion', 'switchyard-router',
] as const

export type PluginId = (typeof PLUGIN_IDS)[number]

const RUN_IDS: readonly PluginId[] = ['moderation', 'web', 'web-fetch', 'file-parser', 'response-healing', 'context-compression']

export const PluginSchema = v.variant(
  'id',
  [
    ResponseHealingPluginSchema,
    ContextCompressionPluginSchema,
    ModerationPluginSchema,
    FileParserPluginSchema,
    WebPluginSchema,
    WebFetchPluginSchema,
    passThroughObject({
      id: v.picklist(['auto-router', 'auto-beta-router']),
      allowed_models: v.optional(v.array(v.string())),
      excluded_models: v.optional(v.array(v.string())),
      cost_tier: v.optional(v.string()),
      enabled: v.optional(v.boolean()),
      pin_model: v.optional(v.boolean()),
    }),
    passThroughObject({
      id: v.picklist(PLUGIN_IDS.filter((id) => id !== 'auto-router' && id !== 'auto-beta-router' && !RUN_IDS.includes(id))),
      enabled: v.optional(v.boolean()),
    }),
  ],
  `must have an id among ${PLUGIN_IDS.join(', ')}`,
)

export type PluginSettings = v.InferOutput<typeof PluginSchema>
