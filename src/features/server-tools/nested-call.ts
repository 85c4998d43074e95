/**
 * What `service:advisor` and `service:subagent` share: the parameters of the model they call, the nested call's
 * body, its routing at plan time and its run (docs/decisions.md, "Server tools": advisor and subagent).
 */

import * as v from 'valibot'
import { InvalidRequestError, isGatewayError, PaymentRequiredError } from '../../core/errors'
import type { InputItem, OutputItem, OutputMessage } from '../../providers/types'
import { ModelSlugSchema, nullableNumber, type ResponsesRequestBody } from '../../engine/request.schemas'
import { ResponsesRequestSchema } from '../request-body'
import type { Attempt } from '../../engine/routing'
import type { InferenceService } from '../../engine/service'
import type { ResponseResult } from '../../engine/session-events'
import { ServerToolFailure, type ServerToolContext } from './contract'
import type { Nesting } from './nesting'
import { integer } from '../../core/validation'

const NameSchema = v.pipe(
  v.string(),
  v.trim(),
  v.regex(/^[A-Za-z0-9 _-]{1,64}$/, 'must be 1 to 64 letters, digits, spaces, underscores or dashes'),
)

/** The fields both tools take to shape the nested call (OpenRouter's names). */
export const nestedModelFields = {
  model: v.optional(ModelSlugSchema),
  name: v.optional(NameSchema),
  instructions: v.optional(v.pipe(v.string(), v.maxLength(32_768, 'must be at most 32768 characters'))),
  reasoning: v.optional(
    v.strictObject({
      effort: v.optional(v.picklist(['max', 'xhigh', 'high', 'medium', 'low', 'minimal', 'none'])),
      max_tokens: v.optional(integer(0)),
    }),
  ),
  temperature: nullableNumber(0, 2),
  max_completion_tokens: v.optional(integer(1)),
}

type NestedModelParameters = {
  [K in keyof typeof nestedModelFields]?: v.InferOutput<(typeof nestedModelFields)[K]>
}

/** A nested call's body as the engine takes it (defaults filled by the request schema itself). */
export const nestedBody = (parameters: NestedModelParameters, model: string, input: InputItem[], extra: Partial<ResponsesRequestBody> = {}): ResponsesRequestBody =>
  v.parse(ResponsesRequestSchema, {
    model,
    input,
    stream: false,
    ...(parameters.instructions ? { instructions: parameters.instructions } : {}),
    ...(parameters.temperature === undefined || parameters.temperature === null ? {} : { temperature: parameters.temperature }),
    ...(parameters.max_completion_tokens ? { max_output_tokens: parameters.max_completion_tokens } : {}),
    ...(parameters.reasoning ? { reasoning: parameters.reasoning } : {}),
    ...extra,
  })

/** A catalog model, or the 400 naming the field (the caller's to fix, as an unknown model in a request's `models`). */
const catalogModel = (service: InferenceService, slug: string, field: string) => {
  if (!service.models.find(slug)) throw new InvalidRequestError(`${field}: model "${slug}" is not in this gateway's catalog (GET /models lists them)`)
  return slug
}

/**
 * The model a tool's nested calls run on (its `parameters.model`, else the caller's) and their attempts, planned
 * now so a model without an endpoint is refused before anything is sent.
 */
export const planNestedModel = (service: InferenceService, nesting: Nesting, model: string | undefined, index: number, template: ResponsesRequestBody) => {
  const slug = catalogModel(service, model ?? nesting.defaultModel, model ? `body.tools.${index}.parameters.model` : 'body.model')
  return { model: slug, attempts: nesting.route(slug, template) }
}

/**
 * Routes a model the caller's model chose in its call (the advisor's `model` argument). A model that cannot be
 * served is the model's mistake, answered as a refusal it may correct.
 */
export const routeChosenModel = (service: InferenceService, nesting: Nesting, slug: string, template: ResponsesRequestBody): Attempt[] | string => {
  if (!service.models.find(slug)) return `model "${slug}" is not in this gateway's catalog`
  try {
    return nesting.route(slug, template)
  } catch (error) {
    if (isGatewayError(error)) return error.message
    throw error
  }
}

const textOf = (item: OutputItem): string => {
  if (item.type !== 'message') return ''
  return (item as OutputMessage).content.map((part) => (part.type === 'output_text' ? part.text : part.type === 'refusal' ? part.refusal : '')).join('')
}

/** What the nested model answered: its messages' text, in order; a note when it was cut short. */
export const answerText = (result: ResponseResult): string => {
  // A model that answered with reasoning or tool calls only still answers: the caller's model must not read nothing.
  const text = result.output.map(textOf).filter((part) => part !== '').join('\n\n') || '[The model answered without text.]'
  if (result.status !== 'incomplete') return text
  return `${text}\n\n[The answer was cut short: ${result.incompleteDetails?.reason ?? 'max_output_tokens'}.]`
}

/**
 * Runs the nested call. Its usage is returned even when the answer failed part way (a subagent's later turn):
 * what was used is billed. An answer that never came is a `ServerToolFailure` the model reads.
 */
export const runNestedCall = async (context: ServerToolContext, body: ResponsesRequestBody, attempts: Attempt[]): Promise<ResponseResult> => {
  try {
    return await context.nested({ body, attempts }, context.signal)
  } catch (error) {
    // A spend limit that cannot hold the call's worst case: the loop tells the model the call was not run.
    if (context.signal.aborted || !isGatewayError(error) || error instanceof PaymentRequiredError) throw error
    throw new ServerToolFailure(`the model call failed: ${error.message}`)
  }
}
