/**
 * What the Anthropic Messages JSON and SSE writers both say: the id, the stop reason, the usage, the
 * blocks a finished item stands for, and a failure as Anthropic's `error` object.
 */

import { anthropicErrorType } from '../../core/errors'
import type { BilledUsage } from '../../engine/billing'
import type { ResponseFailure, ResponseResult } from '../../engine/session-events'
import { ANTHROPIC_REASONING_FORMAT } from '../../providers/anthropic/wire'
import { completedImages, imageMediaType, type OutputFunctionCall, type OutputImage, type OutputItem, type OutputMessage, type OutputReasoning } from '../../providers/types'
import { asGeneratedImage } from '../shared/server-tool-images'

export type StopReason = 'end_turn' | 'max_tokens' | 'tool_use' | 'refusal' | 'stop_sequence' | 'pause_turn'

/** The stop reason of an `incomplete` answer: Claude's paused server-tool turn keeps its own name. */
const INCOMPLETE_STOP_REASONS: Readonly<Record<string, StopReason>> = { content_filter: 'refusal', pause_turn: 'pause_turn' }

// Anthropic's message ids (`msg_…`), on the engine's response id so logs and answers agree.
export const messageId = (responseId: string) => `msg_${responseId.replace(/^resp_/, '')}`

const hasRefusal = (output: OutputItem[]) =>
  output.some((item) => item.type === 'message' && (item as OutputMessage).content.some((part) => part.type === 'refusal'))

/**
 * A stop sequence ends the answer only when the upstream said which one matched (`stopSequence`); upstreams that
 * only say "stop" (Chat Completions, Gemini) end the turn as `end_turn` (docs/decisions.md, POST /messages).
 */
export const stopReasonOf = (result: Pick<ResponseResult, 'status' | 'incompleteDetails' | 'output' | 'stopSequence'>): StopReason => {
  if (result.status === 'incomplete') return INCOMPLETE_STOP_REASONS[result.incompleteDetails?.reason ?? ''] ?? 'max_tokens'
  if (result.output.some((item) => item.type === 'function_call')) return 'tool_use'
  if (result.stopSequence !== undefined) return 'stop_sequence'
  return hasRefusal(result.output) ? 'refusal' : 'end_turn'
}

/** The matched stop sequence, with `stopReasonOf`'s `stop_sequence`; `null` otherwise, as Anthropic writes it. */
export const stopSequenceOf = (result: Pick<ResponseResult, 'status' | 'incompleteDetails' | 'output' | 'stopSequence'>): string | null =>
  stopReasonOf(result) === 'stop_sequence' ? result.stopSequence! : null

/**
 * Anthropic's usage: its `input_tokens` leaves cache reads and cache writes out, where the engine's
 * `input_tokens` holds the whole prompt. OpenRouter's `cost` rides along, and `is_cache_hit` on an answer from the
 * response cache; Anthropic's SDKs keep fields they do not know.
 */
export const toMessagesUsage = (usage: BilledUsage | null | undefined) => {
  const cached = usage?.input_tokens_details.cached_tokens ?? 0
  const written = usage?.input_tokens_details.cache_write_tokens ?? 0
  return {
    input_tokens: Math.max((usage?.input_tokens ?? 0) - cached - written, 0),
    output_tokens: usage?.output_tokens ?? 0,
    cache_read_input_tokens: cached,
    cache_creation_input_tokens: written,
    ...(usage ? { cost: usage.cost } : {}),
    ...(usage?.is_cache_hit ? { is_cache_hit: true } : {}),
  }
}

/** The canonical (OpenAI) tiers Anthropic has a name for; `flex` and `scale` have none. */
const MESSAGES_SERVICE_TIERS: Readonly<Record<string, 'standard' | 'priority'>> = { default: 'standard', priority: 'priority' }

/**
 * `usage.service_tier` in Anthropic's names: the tier the upstream said served the answer, else `standard` when the
 * request asked for it (`standard_only`, the engine's `default`); `null`, as Anthropic's type allows, when neither
 * says, or for a tier Anthropic has no name for.
 */
export const toMessagesServiceTier = (result: Pick<ResponseResult, 'serviceTier'> | null, asked: string | null | undefined): 'standard' | 'priority' | null => {
  const tier = result?.serviceTier ?? (asked === 'default' ? asked : undefined)
  return tier !== undefined && Object.hasOwn(MESSAGES_SERVICE_TIERS, tier) ? MESSAGES_SERVICE_TIERS[tier]! : null
}

/** A failure as the body of Anthropic's stream `error` event. */
export const toMessagesError = (failure: ResponseFailure) => ({ type: 'error' as const, error: { type: anthropicErrorType(failure.status), message: failure.message } })

/** A tool call's arguments as the `input` object Anthropic sends; arguments that are not a JSON object (a cut-off call) become `{}`. */
export const toolInputOf = (call: OutputFunctionCall): Record<string, unknown> => {
  try {
    const input: unknown = JSON.parse(call.arguments)
    return typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

export const reasoningTextOf = (item: OutputReasoning) => {
  const parts = item.content?.length ? item.content : item.summary
  return parts.map((part) => part.text).join('')
}

/** Only Claude's redacted thinking is shown: other families' encrypted reasoning means nothing as Anthropic's. */
export const redactedDataOf = (item: OutputReasoning) =>
  item.format === ANTHROPIC_REASONING_FORMAT && item.encrypted_content ? item.encrypted_content : undefined

export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'image'; source: { type: 'base64'; media_type: string; data: string } }

/**
 * A generated image as the `image` block Anthropic takes in requests: Claude never answers with one, so the SDKs'
 * response types lack it, but their stream accumulator keeps a block it does not know as it came.
 */
export const imageBlockOf = (image: OutputImage): ContentBlock => ({
  type: 'image',
  source: { type: 'base64', media_type: imageMediaType(image), data: image.result ?? '' },
})

/** The blocks one finished output item stands for; provider-run items have no Messages form. */
export const blocksOf = (item: OutputItem): ContentBlock[] => {
  switch (item.type) {
    case 'message':
      return (item as OutputMessage).content.map((part) => ({ type: 'text', text: part.type === 'output_text' ? part.text : part.refusal }))
    case 'function_call': {
      const call = item as OutputFunctionCall
      return [{ type: 'tool_use', id: call.call_id, name: call.name, input: toolInputOf(call) }]
    }
    case 'reasoning': {
      const reasoning = item as OutputReasoning
      const blocks: ContentBlock[] = []
      const thinking = reasoningTextOf(reasoning)
      if (thinking !== '' || reasoning.signature) blocks.push({ type: 'thinking', thinking, signature: reasoning.signature ?? '' })
      const data = redactedDataOf(reasoning)
      if (data) blocks.push({ type: 'redacted_thinking', data })
      return blocks
    }
    case 'image_generation_call':
    case 'service:image_generation':
      return completedImages([asGeneratedImage(item)]).map(imageBlockOf)
    default:
      return []
  }
}
