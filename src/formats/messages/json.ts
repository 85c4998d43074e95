/** A whole answer as Anthropic's `message` object. */

import type { ResponseResult } from '../../engine/session-events'
import { blocksOf, messageId, stopReasonOf, stopSequenceOf, toMessagesUsage } from './shared'

export const toMessage = (result: ResponseResult) => ({
  id: messageId(result.id),
  type: 'message' as const,
  role: 'assistant' as const,
  model: result.model,
  content: result.output.flatMap(blocksOf),
  stop_reason: stopReasonOf(result),
  stop_sequence: stopSequenceOf(result),
  usage: toMessagesUsage(result.usage),
  ...(result.serviceMetadata ? { service_metadata: result.serviceMetadata } : {}),
})
