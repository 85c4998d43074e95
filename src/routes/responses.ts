/**
 * `POST /responses` (spec): one complete JSON result, or a server-sent event stream. Routing,
 * fallbacks, BYOK and billing happen in src/engine; src/writers encodes the answer; this route wires
 * the request to them.
 */

import { defineRoute } from '../pipeline/route'
import { ResponsesRequestSchema } from '../engine/request.schemas'
import { RESPONSES_FORMAT } from '../writers/responses-reply'
import { answerInference, INFERENCE_BODY_LIMIT } from './inference'

export const createResponse = defineRoute({
  method: 'POST',
  path: '/responses',
  auth: 'inference',
  bodyLimit: INFERENCE_BODY_LIMIT,
  body: ResponsesRequestSchema,
  isAccessLogged: true,
  handle: (context) => answerInference(context, context.body, RESPONSES_FORMAT, 'responses'),
})
