/** The HTTP answer of a Chat Completions request: a whole answer as a `chat.completion`, a session as chunks. */

import { json } from '../../core/reply'
import type { ChatWriterOptions } from './shared'
import { toChatCompletion } from './json'
import { toChatCompletionsSse } from './sse'
import { OVERHEAD_HEADER, sseReply, type WireFormat } from '../shared/reply'

export const chatCompletionsFormat = (options: ChatWriterOptions): WireFormat => ({
  whole: (answer) => json(toChatCompletion(answer.result, options, answer.request.service_tier), 200, { [OVERHEAD_HEADER]: answer.overheadMs.toFixed(3) }),
  stream: (session) => sseReply(toChatCompletionsSse(session, options), session.overheadMs),
})
