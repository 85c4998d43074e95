/**
 * `service:image_generation`: the model asks for a picture and the gateway draws it with an image model through
 * the engine (a nested request with `modalities: ["image"]`, docs/decisions.md "Image output"), routed with the
 * caller's keys; the image is shown to the client in the tool's item and billed with the response.
 */

import * as v from 'valibot'
import { InvalidRequestError } from '../../core/errors'
import { completedImages } from '../../providers/types'
import { ModelSlugSchema } from '../../engine/request.schemas'
import type { InferenceService } from '../../engine/service'
import { ServerToolFailure, ServerToolRefusal, historyPair, type ServerTool } from './contract'
import { nestedBody, runNestedCall } from './nested-call'
import { MAX_NESTING_DEPTH, type Nesting } from './nesting'

export const ImageGenerationToolSchema = v.strictObject({
  type: v.literal('service:image_generation'),
  parameters: v.optional(v.strictObject({ model: v.optional(ModelSlugSchema) })),
})

const CallSchema = v.object({ prompt: v.pipe(v.string(), v.trim(), v.minLength(1)) })

const ITEM_TYPE = 'service:image_generation'
const FUNCTION_NAME = 'service_image_generation'

export const imageGenerationTool = (tool: v.InferOutput<typeof ImageGenerationToolSchema>, index: number, service: InferenceService, nesting: Nesting): ServerTool => {
  if (nesting.depth >= MAX_NESTING_DEPTH) {
    throw new InvalidRequestError(`body.tools.${index}: service:image_generation cannot be nested deeper than ${MAX_NESTING_DEPTH} levels of model calls`)
  }
  const field = tool.parameters?.model ? `body.tools.${index}.parameters.model` : `body.tools.${index}`
  const slug = tool.parameters?.model ?? nesting.defaultImageModel
  const model = service.models.find(slug)
  if (!model) throw new InvalidRequestError(`${field}: model "${slug}" is not in this gateway's catalog (GET /models lists them)`)
  if (!model.outputModalities?.includes('image')) {
    throw new InvalidRequestError(`${field}: model "${slug}" does not produce images (GET /models?output_modalities=image lists the models that do)`)
  }
  const template = nestedBody({}, slug, [], { modalities: ['image'] })
  const attempts = nesting.route(slug, template)
  const item = (id: string, status: string, fields: Record<string, unknown>) => ({ type: ITEM_TYPE, id, status, model: slug, ...fields })

  return {
    type: tool.type,
    itemIdPrefix: 'ig',
    itemType: ITEM_TYPE,
    definition: {
      type: 'function',
      name: FUNCTION_NAME,
      description: 'Draws an image from a description and shows it to the user. Describe the picture fully: subject, style, composition, colours.',
      parameters: { type: 'object', properties: { prompt: { type: 'string', description: 'What to draw.' } }, required: ['prompt'], additionalProperties: false },
    },
    pendingItem: (id) => item(id, 'in_progress', { result: null }),
    failedItem: (id, message) => item(id, 'failed', { result: null, error: message }),
    toHistory(entry) {
      const prompt = typeof entry.prompt === 'string' ? entry.prompt : ''
      const output = entry.status === 'completed' ? 'The image was generated and shown to the user.' : `Error: ${typeof entry.error === 'string' ? entry.error : 'not run'}`
      return historyPair(entry, FUNCTION_NAME, { prompt }, output)
    },
    async run(call, context) {
      const parsed = v.safeParse(CallSchema, call.arguments)
      if (!parsed.success) throw new ServerToolRefusal('the arguments must have a non-empty string "prompt"')
      const { prompt } = parsed.output
      const result = await runNestedCall(context, nestedBody({}, slug, [{ type: 'message', role: 'user', content: prompt }], { modalities: ['image'] }), attempts)
      const [image] = completedImages(result.output)
      // An answer without a picture (refused, or text only) still cost what it cost.
      const usage = result.usage ? { usage: result.usage } : {}
      if (!image) {
        const message = result.status === 'failed' ? `the image model failed: ${result.error?.message ?? 'unknown error'}` : 'the image model answered without an image'
        if (!result.usage) throw new ServerToolFailure(message)
        return { output: `Error: ${message}`, item: item(call.itemId, 'failed', { prompt, result: null, error: message }), ...usage }
      }
      const format = image.output_format ?? 'png'
      return {
        output: `The image was generated (${format}) and is shown to the user.`,
        item: item(call.itemId, 'completed', { model: result.model, prompt, result: image.result, output_format: format }),
        ...usage,
      }
    },
  }
}
