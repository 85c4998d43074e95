/**
 * `moderation` (docs/decisions.md, "Plugins"): the request's text goes to an OpenAI-compatible `/moderations`
 * API before any upstream call; a flagged input is a 403 with `error.metadata{reasons, flagged_input,
 * provider_name, model_slug}`, as OpenRouter answers. The API is the operator's (`plugins.moderation`, or the
 * `openai` provider's shared key); without one the plugin is refused. If the API fails, the request fails (502):
 * unmoderated input is never sent on.
 */

import * as v from 'valibot'
import { InvalidRequestError, PermissionDeniedError, UpstreamError } from '../../core/errors'
import type { InputItem } from '../../providers/types'
import type { InferenceService } from '../../engine/service'
import { recordStage, type PluginDefinition, type PluginRequest, type RequestPlugin } from './contract'
import type { ModerationPluginSettings } from './moderation.schema'
import { requestServiceJson } from './service-request'
import type { ModerationSettings } from './settings'

const ID = 'moderation'

/** OpenAI's moderation endpoint takes an array of inputs; texts beyond this many are joined so all are checked. */
export const MODERATION_MAX_INPUTS = 32
/** spec: `flagged_input` is at most 100 characters. */
const FLAGGED_INPUT_MAX = 100

const AnswerSchema = v.object({
  model: v.optional(v.string()),
  results: v.array(v.looseObject({ flagged: v.boolean(), categories: v.optional(v.record(v.string(), v.nullable(v.boolean())), {}) })),
})

type Part = { type?: string; text?: unknown }

/** The texts a request sends: instructions, then every message's text, in order. */
export const textsOf = (instructions: string | null | undefined, input: string | InputItem[]): string[] => {
  const texts = instructions ? [instructions] : []
  if (typeof input === 'string') return input ? [...texts, input] : texts
  for (const item of input) {
    const { type, content } = item as { type?: string; content?: unknown }
    if (type !== undefined && type !== 'message') continue
    if (typeof content === 'string') texts.push(content)
    else if (Array.isArray(content)) for (const part of content as Part[]) if (typeof part.text === 'string' && part.text) texts.push(part.text)
  }
  return texts.filter((text) => text.trim().length > 0)
}

/** At most `MODERATION_MAX_INPUTS` inputs: consecutive texts joined into even groups when there are more. */
const batched = (texts: string[]): string[] => {
  if (texts.length <= MODERATION_MAX_INPUTS) return texts
  const size = Math.ceil(texts.length / MODERATION_MAX_INPUTS)
  const groups: string[] = []
  for (let start = 0; start < texts.length; start += size) groups.push(texts.slice(start, start + size).join('\n\n'))
  return groups
}

const moderate = async (service: InferenceService, settings: ModerationSettings, inputs: string[], signal: AbortSignal) => {
  const answer = await requestServiceJson(
    service,
    {
      url: `${settings.target.baseURL}/moderations`,
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${settings.target.apiKey}` },
      body: JSON.stringify({ model: settings.model, input: inputs }),
    },
    'Moderation',
    signal,
  )
  const parsed = v.safeParse(AnswerSchema, answer)
  if (!parsed.success || parsed.output.results.length !== inputs.length) throw new UpstreamError('Moderation is unavailable: it sent a malformed answer')
  return parsed.output
}

export const moderation: PluginDefinition<ModerationPluginSettings> = {
  id: ID,
  create(_settings, { service, where }): RequestPlugin {
    const settings = service.plugins.moderation
    if (!settings) throw new InvalidRequestError(`${where}: the "moderation" plugin needs a moderation API, and none is configured on this gateway`)
    return {
      id: ID,
      async beforeAttempts(request: PluginRequest, signal) {
        const inputs = batched(textsOf(request.body.instructions, request.body.input as string | InputItem[]))
        if (inputs.length === 0) {
          recordStage(request, ID, 'no text to moderate', { flagged: false, model: settings.model, inputs: 0 })
          return
        }
        const answer = await moderate(service, settings, inputs, signal)
        const flaggedAt = answer.results.findIndex((result) => result.flagged)
        const model = answer.model ?? settings.model
        if (flaggedAt < 0) {
          recordStage(request, ID, `the input passed moderation (${model})`, { flagged: false, model, inputs: inputs.length })
          return
        }
        const result = answer.results[flaggedAt]!
        const reasons = Object.entries(result.categories).flatMap(([category, isFlagged]) => (isFlagged ? [category] : []))
        recordStage(request, ID, `the input was flagged by moderation (${model}): ${reasons.join(', ') || 'flagged'}`, { flagged: true, model, reasons })
        throw new PermissionDeniedError(`Your input was flagged by moderation${reasons.length > 0 ? ` for ${reasons.join(', ')}` : ''}`, {
          metadata: {
            reasons,
            flagged_input: inputs[flaggedAt]!.slice(0, FLAGGED_INPUT_MAX),
            provider_name: settings.providerName,
            model_slug: request.requestedModel,
          },
        })
      },
    }
  },
}
