/**
 * `POST /messages` (Anthropic's Messages, as OpenRouter serves it): the body is translated into the
 * engine's request (src/formats/messages/translate.ts), run exactly as `/responses` runs it (routing, fallbacks,
 * BYOK, billing), and the answer written as a `message` or Anthropic's events. Errors, on this route
 * only, take Anthropic's shape; the key may come as `x-api-key`, as Anthropic's clients send it.
 */

import { defineRoute } from '../pipeline/route'
import { MESSAGES_FORMAT } from '../formats/messages/reply'
import { answerInference, INFERENCE_BODY_LIMIT } from './inference'
import { MessagesQuerySchema, MessagesRequestSchema } from '../formats/messages/schemas'
import { toEngineRequest, toExtensions } from '../formats/messages/translate'

export const createMessage = defineRoute({
  method: 'POST',
  path: '/messages',
  auth: 'inference',
  keyHeaders: 'bearer-or-x-api-key',
  errorFlavor: 'anthropic',
  bodyLimit: INFERENCE_BODY_LIMIT,
  query: MessagesQuerySchema,
  body: MessagesRequestSchema,
  isAccessLogged: true,
  handle: (context) => answerInference(context, toEngineRequest(context.body), MESSAGES_FORMAT, 'messages', toExtensions(context.body)),
})
