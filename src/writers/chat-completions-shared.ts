/**
 * What the Chat Completions JSON and SSE writers both say: the id, the finish reason, the usage with
 * its cost, a failure, and reasoning blocks as OpenRouter's `reasoning_details`.
 */

import type { BilledUsage } from '../engine/billing'
import type { ResponseFailure, ResponseResult, ServedBy } from '../engine/session-events'
import { imageMediaType, type OutputImage, type OutputReasoning } from '../providers/types'

export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'error'

/** What a Chat Completions writer needs beyond the session or result. */
export interface ChatWriterOptions {
  /** OpenRouter `reasoning.exclude`: the model reasons, the answer shows none of it. */
  isReasoningExcluded: boolean
  /** `logprobs: true`: the answer carries the content tokens' log probabilities (`choices[].logprobs`). */
  isLogprobsRequested?: boolean
}

/** OpenRouter's top-level `provider`: the display name of the provider that served (absent when none did). */
export const providerNameOf = (servedBy: ServedBy | null | undefined): string | undefined => servedBy?.providerName

export interface TopLogprob {
  token: string
  logprob: number
  bytes: number[] | null
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null

const toTopLogprob = (entry: unknown): TopLogprob | undefined =>
  isRecord(entry) && typeof entry.token === 'string' && typeof entry.logprob === 'number'
    ? { token: entry.token, logprob: entry.logprob, bytes: Array.isArray(entry.bytes) ? (entry.bytes as number[]) : null }
    : undefined

/**
 * Log probabilities as the engine carries them (OpenAI's Responses shape, `bytes` possibly absent) → Chat
 * Completions' `ChatCompletionTokenLogprob`s, whose `bytes` is a list or null.
 */
export const toChatLogprobs = (entries: readonly unknown[]) =>
  entries.flatMap((entry) => {
    const token = toTopLogprob(entry)
    if (!token) return []
    const top = isRecord(entry) && Array.isArray(entry.top_logprobs) ? entry.top_logprobs.flatMap((alternative) => toTopLogprob(alternative) ?? []) : []
    return [{ ...token, top_logprobs: top }]
  })

// OpenRouter's generation ids (`gen-…`), on the engine's response id so logs and answers agree.
export const chatCompletionId = (responseId: string) => `gen-${responseId.replace(/^resp_/, '')}`

export const finishReasonOf = (result: ResponseResult): ChatFinishReason => {
  if (result.status === 'failed') return 'error'
  if (result.status === 'incomplete') return result.incompleteDetails?.reason === 'content_filter' ? 'content_filter' : 'length'
  return result.output.some((item) => item.type === 'function_call') ? 'tool_calls' : 'stop'
}

/**
 * OpenRouter's usage object: OpenAI's token counts plus `cost`, `is_byok` and `cost_details`; `image_tokens`
 * (OpenRouter's name) when the provider counted the images' tokens apart; `server_tool_use_details` after server tools;
 * `is_cache_hit` on an answer from the response cache (docs/decisions.md, Response cache).
 */
export const toChatUsage = (usage: BilledUsage) => {
  // A server-tool run's usage carries its tool counts (docs/decisions.md, Server tools): OpenRouter reports them on every run.
  const serverToolUse = (usage as { server_tool_use_details?: unknown }).server_tool_use_details
  return {
    ...chatUsageFields(usage),
    ...(serverToolUse === undefined ? {} : { server_tool_use_details: serverToolUse }),
  }
}

const chatUsageFields = (usage: BilledUsage) => ({
  prompt_tokens: usage.input_tokens,
  completion_tokens: usage.output_tokens,
  total_tokens: usage.total_tokens,
  // `cache_write_tokens` only when the provider wrote to its prompt cache, as OpenRouter reports it.
  prompt_tokens_details: usage.input_tokens_details,
  completion_tokens_details: {
    reasoning_tokens: usage.output_tokens_details.reasoning_tokens,
    ...(usage.output_tokens_details.image_tokens === undefined ? {} : { image_tokens: usage.output_tokens_details.image_tokens }),
  },
  cost: usage.cost,
  is_byok: usage.is_byok,
  ...(usage.is_cache_hit ? { is_cache_hit: true } : {}),
  cost_details: toChatCostDetails(usage.cost_details),
})

/** OpenRouter's `cost_details` in Chat Completions names (prompt / completions), as chat and embeddings answers carry it. */
export const toChatCostDetails = (details: BilledUsage['cost_details']) => ({
  upstream_inference_cost: details.upstream_inference_cost,
  upstream_inference_prompt_cost: details.upstream_inference_input_cost,
  upstream_inference_completions_cost: details.upstream_inference_output_cost,
})

/** A failure in OpenRouter's error shape: the HTTP status it stands for, and the canonical `error_type`. */
export const toChatError = (failure: ResponseFailure) => ({
  code: failure.status,
  message: failure.message,
  metadata: { error_type: failure.errorType },
})

// Reasoning that came without a family (the Chat Completions family's) is `unknown`, as OpenRouter labels it.
export const reasoningFormatOf = (item: { format?: string | undefined }) => item.format ?? 'unknown'

export type ReasoningDetail =
  | { type: 'reasoning.summary'; summary: string; format: string; index: number }
  | { type: 'reasoning.text'; text: string; signature?: string; format: string; index: number }
  | { type: 'reasoning.encrypted'; data: string; format: string; index: number }

/** A reasoning item's blocks, numbered from `firstIndex`: summaries, texts (the signature on the last), encrypted data. */
export const reasoningDetailsOf = (item: OutputReasoning, firstIndex: number): ReasoningDetail[] => {
  const format = reasoningFormatOf(item)
  const details: ReasoningDetail[] = []
  for (const part of item.summary) details.push({ type: 'reasoning.summary', summary: part.text, format, index: firstIndex + details.length })
  const texts = [...(item.content ?? [])]
  if (texts.length === 0 && item.signature) texts.push({ type: 'reasoning_text', text: '' })
  for (const [position, part] of texts.entries()) {
    const isLast = position === texts.length - 1
    details.push({ type: 'reasoning.text', text: part.text, ...(isLast && item.signature ? { signature: item.signature } : {}), format, index: firstIndex + details.length })
  }
  if (item.encrypted_content) details.push({ type: 'reasoning.encrypted', data: item.encrypted_content, format, index: firstIndex + details.length })
  return details
}

/** A generated image as OpenRouter puts it on a message (`images`) or a delta: a `data:` URL in an `image_url` part. */
export const toChatImage = (image: OutputImage) => ({
  type: 'image_url' as const,
  image_url: { url: `data:${imageMediaType(image)};base64,${image.result ?? ''}` },
})

/** Between the texts of two message items (turns of a server-tool loop), so they do not run together. */
export const MESSAGE_SEPARATOR = '\n\n'

/**
 * A Responses `url_citation` annotation as Chat Completions carries it (OpenAI's and OpenRouter's
 * `message.annotations`), its indexes moved by `offset`, where its text starts in the message's content.
 */
export const toChatAnnotation = (annotation: unknown, offset: number) => {
  if (typeof annotation !== 'object' || annotation === null || (annotation as { type?: unknown }).type !== 'url_citation') return undefined
  const { url, title, start_index: start, end_index: end } = annotation as { url: string; title?: string; start_index: number; end_index: number }
  return { type: 'url_citation' as const, url_citation: { url, title: title ?? '', start_index: start + offset, end_index: end + offset } }
}
