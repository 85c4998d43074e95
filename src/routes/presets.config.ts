/**
 * What a preset keeps of an inference request, and how a request uses a preset (docs/decisions.md,
 * Presets). Both sides work on the engine's request (the Responses API's field names), so a preset
 * saved from a Chat Completions body serves a Messages request alike.
 */

import { InvalidRequestError, NotFoundError } from '../core/errors'
import type { ModelCatalog } from '../engine/models'
import type { RouteExtensions } from '../engine/request'
import { extensionsUsed } from '../providers/types'
import type { ResponsesRequestBody } from '../engine/request.schemas'
import type { Caller } from '../pipeline/auth'
import type { Repositories } from '../repositories'
import type { JsonObject } from '../storage/contract'

/** The configuration a preset stores: model choice, routing, sampling, reasoning, tools and output format. */
export const PRESET_CONFIG_FIELDS = [
  'model',
  'models',
  'provider',
  'temperature',
  'top_p',
  'top_k',
  'frequency_penalty',
  'presence_penalty',
  'max_output_tokens',
  'reasoning',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'text',
] as const

/**
 * The request's own fields, never stored (OpenRouter: "messages, input, prompt, stream are ignored"): the
 * conversation, streaming, and the constants the translations set. The system prompt is taken apart from them.
 */
const REQUEST_OWN_FIELDS = new Set(['input', 'instructions', 'stream', 'store', 'service_tier', 'preset'])

const KEPT = `a preset keeps ${PRESET_CONFIG_FIELDS.join(', ')} and the system prompt`

/** What a save stores: the configuration fields the body set, and its system prompt. */
export interface PresetContent {
  config: JsonObject
  systemPrompt: string | null
}

/**
 * The preset content of a translated request body. A field that is neither configuration nor the request's
 * own is refused by the name the caller wrote (`fieldNames`), never dropped; so is an extension (`stop`, …)
 * and a model the catalog does not have.
 */
export const toPresetContent = (
  body: Omit<ResponsesRequestBody, 'input'>,
  systemPrompt: string | null,
  options: { models: ModelCatalog; extensions?: RouteExtensions | undefined; fieldNames?: Readonly<Record<string, string>> },
): PresetContent => {
  const config: Record<string, unknown> = {}
  const nameOf = (field: string) => options.fieldNames?.[field] ?? `body.${field}`
  for (const [field, value] of Object.entries(body)) {
    if (value === undefined || value === null || REQUEST_OWN_FIELDS.has(field)) continue
    if (!(PRESET_CONFIG_FIELDS as readonly string[]).includes(field)) throw new InvalidRequestError(`${nameOf(field)}: not kept in a preset; ${KEPT}`)
    config[field] = value
  }
  const extension = options.extensions ? extensionsUsed(options.extensions.values)[0] : undefined
  if (extension) throw new InvalidRequestError(`${options.extensions?.fieldNames?.[extension] ?? `body.${extension}`}: not kept in a preset; ${KEPT}`)
  const models = [...(typeof config.model === 'string' ? [config.model] : []), ...((config.models as string[] | undefined) ?? [])]
  for (const model of models) {
    if (model.includes('@preset/')) throw new InvalidRequestError(`${nameOf('model')}: a preset cannot name another preset`)
    if (!options.models.find(model)) throw new InvalidRequestError(`${nameOf('model')}: "${model}" is not a model of this gateway`)
  }
  return { config: config as JsonObject, systemPrompt: systemPrompt === '' ? null : systemPrompt }
}

const PRESET_MODEL = /^(?:(?<model>.+)@preset\/(?<slug>[^/]+)|@preset\/(?<only>[^/]+))$/

/** The preset a request names (the `preset` field, `@preset/<slug>` or `<model>@preset/<slug>`), and its own model. */
const presetReference = (body: ResponsesRequestBody): { slug: string; model: string | undefined } | null => {
  // Every inference request passes here: most name no preset, and a substring test settles that.
  if (body.preset === undefined && !body.model?.includes('@preset/')) return null
  const match = body.model ? PRESET_MODEL.exec(body.model) : null
  if (body.preset !== undefined && match) throw new InvalidRequestError('body.preset: name the preset once, in preset or in model, not in both')
  if (body.preset !== undefined) return { slug: body.preset, model: body.model }
  if (!match?.groups) return null
  return { slug: (match.groups.slug ?? match.groups.only)!, model: match.groups.model }
}

/**
 * The request with its preset applied, as OpenRouter documents it: the preset's fields are defaults and the
 * request's own fields win (a shallow merge); its system prompt is the `instructions` of a request that has none.
 * A request without a preset is returned as it is.
 */
export const withPreset = async (repositories: Repositories, caller: Caller, body: ResponsesRequestBody): Promise<{ body: ResponsesRequestBody; presetId?: string }> => {
  const reference = presetReference(body)
  if (!reference) return { body }
  const preset = await repositories.presets.findBySlug(caller.key.workspaceId, reference.slug)
  const version = preset && preset.status === 'active' ? await repositories.presets.designatedVersion(preset) : null
  if (!version) throw new NotFoundError(`Preset "${reference.slug}" not found`)
  const { preset: _preset, ...request } = body
  const merged: Record<string, unknown> = { ...request, model: reference.model }
  for (const field of PRESET_CONFIG_FIELDS) {
    if (merged[field] === undefined && version.config[field] !== undefined) merged[field] = version.config[field]
  }
  if ((merged.instructions === undefined || merged.instructions === null) && version.systemPrompt !== null) merged.instructions = version.systemPrompt
  return { body: merged as ResponsesRequestBody, presetId: preset!.id }
}
