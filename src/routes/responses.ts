/**
 * `POST /responses` (spec): one complete JSON result, or a server-sent event stream. Routing,
 * fallbacks, BYOK and billing happen in src/engine; src/writers encodes the answer; this route wires
 * the request to them.
 */

import * as v from 'valibot'
import { unknownFieldsRefused } from '../core/validation'
import { defineRoute } from '../pipeline/route'
import type { RouteExtensions } from '../engine/request'
import { ResponsesRequestSchema, type ResponsesRequestBody } from '../engine/request.schemas'
import { RESPONSES_FORMAT } from '../writers/responses-reply'
import { answerInference, INFERENCE_BODY_LIMIT } from './inference'
import { pluginsWithTransforms } from './transforms.translate'

/**
 * spec `top_logprobs`: how many likely alternatives each output token carries. The spec's `include` has no
 * log-probabilities entry, so a positive `top_logprobs` is what asks for them: it becomes the `logprobs` setting
 * routing sends only where it is honoured, and the answer's `output_text` parts carry them. `0` and `null` ask for nothing.
 */
const logprobsExtension = (body: ResponsesRequestBody): RouteExtensions | undefined =>
  body.top_logprobs ? { values: { logprobs: { topLogprobs: body.top_logprobs } }, fieldNames: { logprobs: 'body.top_logprobs' } } : undefined

/** `transforms: ["middle-out"]` is the context-compression plugin, `[]` turns it off (transforms.translate.ts). */
const withTransforms = (body: ResponsesRequestBody): ResponsesRequestBody => {
  if (body.transforms == null) return body
  const { transforms, ...rest } = body
  const plugins = pluginsWithTransforms(body.plugins, transforms)
  return plugins ? { ...rest, plugins } : rest
}

/**
 * The body as `ResponsesRequestSchema` reads it, with every field it does not declare refused by name: a field takes
 * effect or is a 400 (docs/decisions.md, POST /responses).
 */
const ResponsesRouteBodySchema = v.pipe(ResponsesRequestSchema, unknownFieldsRefused<ResponsesRequestBody>(ResponsesRequestSchema.pipe[0].entries))

export const createResponse = defineRoute({
  method: 'POST',
  path: '/responses',
  auth: 'inference',
  bodyLimit: INFERENCE_BODY_LIMIT,
  body: ResponsesRouteBodySchema,
  isAccessLogged: true,
  handle: (context) => answerInference(context, withTransforms(context.body), RESPONSES_FORMAT, 'responses', logprobsExtension(context.body)),
})
