/** A whole answer as Anthropic's `message` object. */

import type { ResponseResult } from '../../engine/session-events'
import { blocksOf, messageId, stopReasonOf, stopSequenceOf, toMessagesServiceTier, toMessagesUsage } from './shared'

/** `askedTier`: the engine request's `service_tier`, named when the upstream names none. */
export const toMessage = (result: ResponseResult, askedTier: string | null | undefined) => ({
  id: messageId(result.id),
  type: 'message' as const,
  role: 'assistant' as const,
  model: result.model,
  content: result.output.flatMap(blocksOf),
  stop_reason: stopReasonOf(result),
  stop_sequence: stopSequenceOf(result),
  usage: { ...toMessagesUsage(result.usage), service_tier: toMessagesServiceTier(result, askedTier) },
  ...(result.serviceMetadata ? { service_metadata: result.serviceMetadata } : {}),
})
