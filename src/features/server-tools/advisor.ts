/**
 * `service:advisor` (OpenRouter's advisor server tool): the model asks another model for guidance mid-answer and
 * reads its advice as the call's result. The advisor runs as an ordinary engine call (routing, fallbacks, BYOK),
 * its usage added to the response's; it has no tools of its own.
 */

import * as v from 'valibot'
import { InvalidRequestError } from '../../core/errors'
import type { InferenceService } from '../../engine/service'
import { ServerToolRefusal, historyPair, type ServerTool } from './contract'
import { answerText, nestedBody, nestedModelFields, planNestedModel, routeChosenModel, runNestedCall } from './nested-call'
import { MAX_NESTING_DEPTH, type Nesting } from './nesting'
import { readableTranscript } from './transcript'

export const AdvisorToolSchema = v.strictObject({
  type: v.literal('service:advisor'),
  parameters: v.optional(
    v.strictObject({
      ...nestedModelFields,
      forward_transcript: v.optional(v.boolean()),
      // The advice reaches the model whole either way; streaming it into the client's item is not offered.
      stream: v.optional(v.literal(false, 'must be false: the advice is not streamed by this gateway; it arrives whole in the service:advisor item')),
    }),
  ),
})

const CallSchema = v.object({
  prompt: v.pipe(v.string(), v.trim(), v.minLength(1)),
  model: v.optional(v.nullable(v.string())),
})

const ITEM_TYPE = 'service:advisor'
/** The function an instance is offered under: one per name, so a request may offer several (OpenRouter's named advisors). */
const functionNameOf = (name: unknown) => (typeof name === 'string' && name !== '' ? `service_advisor_${name.replace(/[^A-Za-z0-9_-]/g, '_')}` : 'service_advisor')

export const advisorTool = (tool: v.InferOutput<typeof AdvisorToolSchema>, index: number, service: InferenceService, nesting: Nesting): ServerTool => {
  if (nesting.depth >= MAX_NESTING_DEPTH) {
    throw new InvalidRequestError(`body.tools.${index}: service:advisor cannot be nested deeper than ${MAX_NESTING_DEPTH} levels of model calls`)
  }
  const parameters = tool.parameters ?? {}
  const isModelFixed = parameters.model !== undefined
  const template = nestedBody(parameters, parameters.model ?? nesting.defaultModel, [])
  const planned = planNestedModel(service, nesting, parameters.model, index, template)
  const named = parameters.name ? { name: parameters.name } : {}
  const item = (id: string, status: string, fields: Record<string, unknown>) => ({ type: ITEM_TYPE, id, status, ...named, ...fields })

  return {
    type: tool.type,
    itemIdPrefix: 'adv',
    itemType: ITEM_TYPE,
    definition: {
      type: 'function',
      name: functionNameOf(parameters.name),
      description:
        `Consult ${parameters.name ? `the advisor "${parameters.name}"` : 'an advisor'}, a stronger model, for guidance: before committing to an approach, ` +
        'when stuck, or before declaring a task done; not for trivial steps. ' +
        (parameters.forward_transcript ? 'It sees this conversation. ' : 'It sees only your prompt, so make the prompt self-contained. ') +
        'Returns its advice.',
      parameters: {
        type: 'object',
        properties: {
          prompt: { type: 'string', description: 'What you want advice on.' },
          ...(isModelFixed ? {} : { model: { type: 'string', description: `Model slug of the advisor; default ${planned.model}.` } }),
        },
        required: ['prompt'],
        additionalProperties: false,
      },
    },
    pendingItem: (id) => item(id, 'in_progress', { model: planned.model }),
    failedItem: (id, message) => item(id, 'failed', { model: planned.model, error: message }),
    toHistory(entry) {
      const prompt = typeof entry.prompt === 'string' ? entry.prompt : ''
      const output = entry.status === 'completed' && typeof entry.advice === 'string' ? entry.advice : `Error: ${typeof entry.error === 'string' ? entry.error : 'not run'}`
      return historyPair(entry, functionNameOf(entry.name), isModelFixed || typeof entry.model !== 'string' ? { prompt } : { prompt, model: entry.model }, output)
    },
    async run(call, context) {
      const parsed = v.safeParse(CallSchema, call.arguments)
      if (!parsed.success) throw new ServerToolRefusal('the arguments must have a non-empty string "prompt"')
      const { prompt } = parsed.output
      let model = planned.model
      let attempts = planned.attempts
      const chosen = parsed.output.model
      if (!isModelFixed && chosen && chosen !== model) {
        const routed = routeChosenModel(service, nesting, chosen, template)
        if (typeof routed === 'string') throw new ServerToolRefusal(`${routed}; call again without "model" to use ${planned.model}`)
        model = chosen
        attempts = routed
      }
      const question = { type: 'message' as const, role: 'user' as const, content: prompt }
      const input = parameters.forward_transcript ? [...readableTranscript(context.transcript, call.callId), question] : [question]
      const result = await runNestedCall(context, nestedBody(parameters, model, input), attempts)
      const usage = result.usage ?? undefined
      if (result.status === 'failed') {
        const message = `the advisor's answer failed: ${result.error?.message ?? 'unknown error'}`
        return { output: `Error: ${message}`, item: item(call.itemId, 'failed', { model: result.model, prompt, error: message }), ...(usage ? { usage } : {}) }
      }
      const advice = answerText(result)
      return { output: advice, item: item(call.itemId, 'completed', { model: result.model, prompt, advice }), ...(usage ? { usage } : {}) }
    },
  }
}
