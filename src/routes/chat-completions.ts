/**
 * `POST /chat/completions` (OpenAI's Chat Completions, as OpenRouter serves it): the body is translated
 * into the engine's request (src/formats/chat-completions/translate.ts), run exactly as `/responses` runs it
 * (routing, fallbacks, BYOK, billing), and the answer written as a `chat.completion` or its chunks.
 */

import { defineRoute } from '../pipeline/route'
import { chatCompletionsFormat } from '../formats/chat-completions/reply'
import { ChatCompletionsRequestSchema } from '../formats/chat-completions/schemas'
import { isLogprobsRequested, isReasoningExcluded, toEngineRequest, toExtensions } from '../formats/chat-completions/translate'
import { answerInference, INFERENCE_BODY_LIMIT } from './inference'

export const createChatCompletion = defineRoute({
  method: 'POST',
  path: '/chat/completions',
  auth: 'inference',
  bodyLimit: INFERENCE_BODY_LIMIT,
  body: ChatCompletionsRequestSchema,
  isAccessLogged: true,
  handle: (context) =>
    answerInference(
      context,
      toEngineRequest(context.body),
      chatCompletionsFormat({ isReasoningExcluded: isReasoningExcluded(context.body), isLogprobsRequested: isLogprobsRequested(context.body) }),
      'chat_completions',
      toExtensions(context.body),
    ),
})
