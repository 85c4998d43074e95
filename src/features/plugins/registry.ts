/**
 * The plugins this gateway runs, by id, and the plan of one request's plugins: each listed plugin is one the
 * registry runs, listed once, with settings it can honour, or the request gets a 400 naming it. Never a silent
 * drop (docs/decisions.md, "Plugins"). Adding a plugin: its module and `<id>.schema.ts` in this folder, one entry
 * in `PLUGINS`, its schema in schemas.ts.
 */

import { InvalidRequestError } from '../../core/errors'
import type { ResponsesRequestBody } from '../../engine/request.schemas'
import type { Attempt } from '../../engine/routing'
import type { InferenceService } from '../../engine/service'
import type { PluginDefinition, RequestPlugin } from './contract'
import { contextCompression, DEFAULT_ON_MAX_CONTEXT } from './context-compression'
import { fileParser } from './file-parser'
import { moderation } from './moderation'
import { responseHealing } from './response-healing'
import { web } from './web'
import { webFetch } from './web-fetch'
import { ROUTER_PLUGIN_IDS } from './routers/schemas'
import type { PluginId, PluginSettings } from './schemas'

// Settings are validated by their own schema (schemas.ts) before a definition sees them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDefinition = PluginDefinition<any>

const PLUGINS: Partial<Record<PluginId, AnyDefinition>> = {
  'response-healing': responseHealing,
  'context-compression': contextCompression,
  moderation,
  'file-parser': fileParser,
  web,
  'web-fetch': webFetch,
}

/**
 * Plugins that run unless the request turns them off: the settings they run with when not listed, and whether a
 * request's planned attempts need them at all (most never do, and then cost nothing).
 */
const IMPLICIT: Partial<Record<PluginId, { settings: PluginSettings; isNeeded(attempts: readonly Attempt[]): boolean }>> = {
  // On by default for small contexts (OpenRouter's rule); context-compression.ts decides per endpoint.
  'context-compression': {
    settings: { id: 'context-compression' },
    isNeeded: (attempts) => attempts.some((attempt) => attempt.endpoint.contextLength <= DEFAULT_ON_MAX_CONTEXT),
  },
}

/** Plugins that choose the models rather than act on a request: run while it is planned (model-choice.ts). */
const MODEL_CHOOSERS: ReadonlySet<string> = new Set([...ROUTER_PLUGIN_IDS, 'fusion'])

/** The plugin ids this gateway runs. */
export const runPluginIds = (): string[] => [...Object.keys(PLUGINS), ...MODEL_CHOOSERS]

/**
 * The request's listed plugins, in order (moderation first); throws `InvalidRequestError` naming the one at fault.
 * The implicit ones join once the attempts are planned (`withImplicitPlugins`).
 */
export const planPlugins = (service: InferenceService, body: ResponsesRequestBody): RequestPlugin[] => {
  const listed = (body.plugins ?? []) as PluginSettings[]
  const plugins: RequestPlugin[] = []
  const seen = new Set<string>()
  const context = { service, body }
  for (const [index, settings] of listed.entries()) {
    const where = `body.plugins.${index}`
    if (seen.has(settings.id)) throw new InvalidRequestError(`${where}: the "${settings.id}" plugin is listed more than once`)
    seen.add(settings.id)
    // A disabled plugin asks for nothing, whether or not this gateway runs it.
    if (settings.enabled === false || MODEL_CHOOSERS.has(settings.id)) continue
    const definition = PLUGINS[settings.id]
    if (!definition) throw new InvalidRequestError(`${where}: the "${settings.id}" plugin is not run by this gateway yet; leave it out or set enabled: false`)
    const plugin = definition.create(settings, { ...context, where })
    if (plugin) plugins.push(plugin)
  }
  // Moderation first, whatever its place in the list: no other plugin sends the text anywhere before it is checked.
  return plugins.sort((left, right) => Number(right.id === 'moderation') - Number(left.id === 'moderation'))
}

/** `plugins` with the implicit plugins the request did not list (or turn off) and whose work `attempts` may need. */
export const withImplicitPlugins = (service: InferenceService, body: ResponsesRequestBody, plugins: RequestPlugin[], attempts: readonly Attempt[]): RequestPlugin[] => {
  const listed = new Set(((body.plugins ?? []) as PluginSettings[]).map((settings) => settings.id))
  const implicit = (Object.entries(IMPLICIT) as Array<[PluginId, NonNullable<(typeof IMPLICIT)[PluginId]>]>).flatMap(([id, { settings, isNeeded }]) => {
    if (listed.has(id) || !isNeeded(attempts)) return []
    const plugin = PLUGINS[id]!.create(settings, { service, body, where: 'body.plugins' })
    return plugin ? [plugin] : []
  })
  return implicit.length === 0 ? plugins : [...plugins, ...implicit]
}
