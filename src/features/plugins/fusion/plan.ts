/**
 * Which models a fusion request runs (docs/decisions.md, "Plugins: routers and fusion"): the `fusion` plugin on any
 * request, or the model `service/fusion`. A panel of 1 to 8 analysis models answers the request in parallel; the
 * analyst (the plugin's `model`, else the judge) compares their answers; the judge, the request's own model, then
 * writes the answer from both. Everything is checked here, before
 * anything is sent, so a request that could not run as written is a 400 or 404 naming the field.
 */

import { InvalidRequestError, NotFoundError } from '../../../core/errors'
import type { ByokRecord } from '../../../repositories/byok-credentials'
import type { ResponsesRequestBody } from '../../../engine/request.schemas'
import { SERVER_TOOL_PREFIX, SUPPORTED_SERVER_TOOLS } from '../../server-tools/plan'
import type { InferenceService } from '../../../engine/service'
import { routableModels } from '../routers/candidates'
import { withoutCallerTools } from './conversation'
import { DEFAULT_FUSION_PRESET, FUSION_PRESETS } from './presets'
import { FUSION_MAX_TOOL_CALLS_DEFAULT, type FusionPlugin, type FusionPreset } from './schemas'

/** The model that stands for fusion with its defaults (OpenRouter's `openrouter/fusion`). */
export const FUSION_SLUG = 'service/fusion'

export interface FusionPlan {
  /** Where the plugin sits in `plugins` (for errors), or null when `service/fusion` runs on its defaults. */
  pluginIndex: number | null
  analysisModels: string[]
  /** The judge, or null: the request's own model (or the router's choice) judges. */
  judge: string | null
  /** The analyst, or null: the judge analyses too. */
  analyst: string | null
  /** The request each analysis model answers: the caller's conversation, without the caller's own tools. */
  panelBody(model: string): ResponsesRequestBody
}

const isFusionPlugin = (plugin: { id: string }): plugin is FusionPlugin => plugin.id === 'fusion'

/** The fusion plugin's settings (the last enabled one wins nothing: a second is refused) and where it sits. */
const findPlugin = (body: ResponsesRequestBody): { plugin: FusionPlugin; index: number } | undefined => {
  let found: { plugin: FusionPlugin; index: number } | undefined
  body.plugins?.forEach((plugin, index) => {
    if (!isFusionPlugin(plugin)) return
    if (found) throw new InvalidRequestError(`body.plugins.${index}: the "fusion" plugin is listed more than once`)
    found = { plugin, index }
  })
  return found
}

const presetPanel = (service: InferenceService, preset: FusionPreset, credentials: readonly ByokRecord[], where: string): string[] => {
  const reachable = new Set(routableModels(service, credentials).map((candidate) => candidate.slug))
  const panel = FUSION_PRESETS[preset].filter((slug) => reachable.has(slug))
  if (panel.length === 0) {
    throw new NotFoundError(
      `${where}: none of the models of fusion preset "${preset}" (${FUSION_PRESETS[preset].join(', ')}) is reachable on this gateway; name analysis_models instead`,
      { metadata: { error_type: 'not_found' } },
    )
  }
  return panel
}

/** Server tools a panel member may run: any but fusion itself. */
const PANEL_TOOLS = SUPPORTED_SERVER_TOOLS.filter((type) => type !== 'service:fusion')

/** The plugin's panel tools must be server tools this gateway runs: the panel has no client to run a function. */
const checkPanelTools = (plugin: FusionPlugin, index: number) => {
  plugin.tools?.forEach((tool, toolIndex) => {
    if (tool.type === 'service:fusion') throw new InvalidRequestError(`body.plugins.${index}.tools.${toolIndex}.type: a panel member cannot convene a panel of its own`)
    if (!tool.type.startsWith(SERVER_TOOL_PREFIX) || !PANEL_TOOLS.includes(tool.type)) {
      throw new InvalidRequestError(
        `body.plugins.${index}.tools.${toolIndex}.type: the panel runs server tools only; "${tool.type}" is not one this gateway runs (available: ${PANEL_TOOLS.join(', ')})`,
      )
    }
  })
  if (plugin.max_tool_calls !== undefined && !plugin.tools?.length) {
    throw new InvalidRequestError(`body.plugins.${index}.max_tool_calls: bounds the panel's tool calls, so it needs tools`)
  }
}

/**
 * The fusion plan of a request, or `undefined` when it asks for none. The judge is the request's model; with
 * `service/fusion` it is the plugin's `model`, or the preset's first reachable model. The analyst is the plugin's
 * `model`, else the judge.
 */
export const planFusion = (service: InferenceService, body: ResponsesRequestBody, credentials: readonly ByokRecord[]): FusionPlan | undefined => {
  const found = findPlugin(body)
  const isFusionModel = (body.model ?? body.models?.[0]) === FUSION_SLUG
  body.models?.forEach((slug, index) => {
    if (slug === FUSION_SLUG && !isFusionModel) throw new InvalidRequestError(`body.models.${index}: "${FUSION_SLUG}" runs a panel of models; name it in model, not among the fallbacks`)
  })
  const isEnabled = found !== undefined && found.plugin.enabled !== false
  if (!isEnabled && !isFusionModel) return undefined
  // A disabled plugin on service/fusion asks for nothing: fusion runs on its defaults.
  const plugin: Partial<FusionPlugin> = isEnabled ? found!.plugin : {}
  const index = isEnabled ? found!.index : null
  const where = index === null ? 'body.model' : `body.plugins.${index}`
  if (index !== null) checkPanelTools(found!.plugin, index)
  // The echo comes before the response starts, but a fusion response starts before its judge's upstream call exists.
  if (body.debug?.echo_upstream_body === true) throw new InvalidRequestError('body.debug.echo_upstream_body: is not supported with fusion, whose panel and judge make several upstream calls')
  if (plugin.analysis_models && plugin.preset) {
    throw new InvalidRequestError(`${where}.preset: a preset names the analysis models; give analysis_models or preset, not both`)
  }
  const preset = plugin.preset ?? DEFAULT_FUSION_PRESET
  const analysisModels = plugin.analysis_models ?? presetPanel(service, preset, credentials, plugin.preset ? `${where}.preset` : where)
  // With service/fusion there is no request model to judge: the plugin's model judges as well as analyses.
  const judge = isFusionModel ? (plugin.model ?? analysisModels[0]!) : null
  const analyst = isFusionModel ? null : (plugin.model ?? null)
  const panelTools = plugin.tools?.map((tool) => ({ type: tool.type, ...(tool.parameters ? { parameters: tool.parameters } : {}) }))
  return {
    pluginIndex: index,
    analysisModels,
    judge,
    analyst,
    panelBody: (model) => ({
      ...withoutCallerTools(body),
      model,
      stream: true,
      ...(panelTools?.length ? { tools: panelTools as ResponsesRequestBody['tools'], max_tool_calls: plugin.max_tool_calls ?? FUSION_MAX_TOOL_CALLS_DEFAULT } : {}),
    }),
  }
}
