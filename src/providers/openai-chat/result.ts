/**
 * Chat Completions body → Responses items, plus the readers the stream shares with it: usage,
 * finish reason, and message content. Both paths drive the same output builder, so a streamed
 * answer and its non-streamed twin produce the same items.
 */

import { inputTokensDetails, type Usage } from '../types'
import type { FinishStatus, UpstreamCall, UpstreamResult } from '../contract'
import { createOutputBuilder, type OutputBuilder } from '../shared/output-builder'
import { openAIServiceTier, servedTier } from '../shared/service-tier'
import { toInBandFailure } from './errors'
import type { ChatChoiceWire, ChatCompletionWire, ChatMessageWire, ChatTopLogprobWire, ChatUsageWire } from './wire'

/** docs/decisions.md, POST /responses: reasoning from providers without a format of their own is `unknown`. */
export const REASONING_FORMAT = 'unknown'

type StreamEvents = ReturnType<OutputBuilder['text']>

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? Math.max(0, Math.trunc(value)) : 0)

/**
 * Canonical usage. `prompt_tokens` already includes cached tokens. `completion_tokens` includes
 * reasoning everywhere except xAI, whose total adds reasoning on top: detected from the total.
 */
export const readUsage = (usage: ChatUsageWire | null | undefined): Usage => {
  const input = count(usage?.prompt_tokens)
  let output = count(usage?.completion_tokens)
  const reasoning = count(usage?.completion_tokens_details?.reasoning_tokens)
  const cached = Math.min(count(usage?.prompt_tokens_details?.cached_tokens) || count(usage?.prompt_cache_hit_tokens), input)
  // OpenRouter and other OpenAI-compatible hosts in front of Claude report cache writes here.
  const written = count(usage?.prompt_tokens_details?.cache_write_tokens)
  if (reasoning > 0 && count(usage?.total_tokens) === input + output + reasoning) output += reasoning
  return {
    input_tokens: input,
    input_tokens_details: inputTokensDetails(cached, Math.min(written, input - cached)),
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: Math.min(reasoning, output) },
    total_tokens: input + output,
  }
}

export interface Finish {
  status: FinishStatus
  incompleteDetails: { reason: string } | null
  stopSequence?: string
}

const COMPLETED: Finish = { status: 'completed', incompleteDetails: null }

/**
 * `length` and `content_filter` cut the answer short; everything else (`stop`, `tool_calls`, …) completed it.
 * `stop` says nothing of which stop sequence matched, except from the servers (vLLM, SGLang) that name it in
 * `stop_reason`; only a sequence the call asked for is believed.
 */
export const readFinish = (reason: string | null | undefined, stopReason?: unknown, call?: UpstreamCall): Finish => {
  if (reason === 'length') return { status: 'incomplete', incompleteDetails: { reason: 'max_output_tokens' } }
  if (reason === 'content_filter') return { status: 'incomplete', incompleteDetails: { reason: 'content_filter' } }
  if (reason === 'stop' && typeof stopReason === 'string' && call?.extensions?.stop?.includes(stopReason)) return { ...COMPLETED, stopSequence: stopReason }
  return COMPLETED
}

const isFiniteNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value)

const toBytes = (value: unknown): number[] | null => (Array.isArray(value) && value.every(isFiniteNumber) ? value : null)

const toTopLogprob = (entry: ChatTopLogprobWire) =>
  typeof entry?.token === 'string' && isFiniteNumber(entry.logprob) ? { token: entry.token, logprob: entry.logprob, bytes: toBytes(entry.bytes) } : undefined

/** A choice's content-token log probabilities, in OpenAI's shape (the same in Responses and Chat Completions); malformed entries are skipped. */
export const readLogprobs = (choice: ChatChoiceWire | undefined): unknown[] | undefined => {
  const content = choice?.logprobs?.content
  if (!Array.isArray(content)) return undefined
  return content.flatMap((entry) => {
    const token = toTopLogprob(entry)
    if (!token) return []
    const top = Array.isArray(entry.top_logprobs) ? (entry.top_logprobs as ChatTopLogprobWire[]).flatMap((alternative) => toTopLogprob(alternative) ?? []) : []
    return [{ ...token, top_logprobs: top }]
  })
}

/**
 * Feeds `content`, `refusal` and reasoning of a message or delta to the builder. Content is a
 * string, except for Mistral's reasoning models, which send `text` and `thinking` parts. The events go onto
 * `events` (a stream's queue; a whole answer needs only the builder's items).
 */
export const feedContent = (
  builder: OutputBuilder,
  message: ChatMessageWire,
  events: { push(...items: StreamEvents): unknown } = [],
  logprobs?: readonly unknown[],
): void => {
  const reasoning = message.reasoning_content ?? message.reasoning
  if (typeof reasoning === 'string') events.push(...builder.reasoningText(reasoning, REASONING_FORMAT))
  const content = message.content
  if (typeof content === 'string') events.push(...builder.text(content, logprobs))
  else if (Array.isArray(content)) {
    for (const part of content as Array<{ type?: string; text?: unknown; thinking?: unknown }>) {
      if (part?.type === 'text' && typeof part.text === 'string') events.push(...builder.text(part.text))
      else if (part?.type === 'thinking' && Array.isArray(part.thinking)) {
        for (const thought of part.thinking as Array<{ text?: unknown }>) {
          if (typeof thought?.text === 'string') events.push(...builder.reasoningText(thought.text, REASONING_FORMAT))
        }
      }
    }
  }
  if (typeof message.refusal === 'string') events.push(...builder.refusal(message.refusal))
}

/** Tool-call arguments are a JSON string; a few members send the parsed object instead. */
export const argumentsText = (value: unknown): string =>
  typeof value === 'string' ? value : value === undefined || value === null ? '' : JSON.stringify(value)

export const readChatResult = (body: unknown, call?: UpstreamCall): UpstreamResult => {
  const completion = (body ?? {}) as ChatCompletionWire
  if (completion.error !== undefined && completion.error !== null) throw toInBandFailure(completion.error)
  const choice = completion.choices?.[0]
  const builder = createOutputBuilder()
  const message = choice?.message ?? {}
  feedContent(builder, message, [], readLogprobs(choice))
  for (const [index, toolCall] of (message.tool_calls ?? []).entries()) {
    builder.functionCall(index, {
      ...(toolCall.id ? { callId: toolCall.id } : {}),
      ...(toolCall.function?.name ? { name: toolCall.function.name } : {}),
    })
    builder.functionCallArguments(index, argumentsText(toolCall.function?.arguments))
  }
  const finish = readFinish(choice?.finish_reason, choice?.stop_reason, call)
  builder.finish(finish.status)
  return {
    output: builder.items,
    ...((completion.usage ?? completion.x_groq?.usage) ? { usage: readUsage(completion.usage ?? completion.x_groq?.usage) } : {}),
    status: finish.status,
    incompleteDetails: finish.incompleteDetails,
    ...(finish.stopSequence === undefined ? {} : { stopSequence: finish.stopSequence }),
    ...servedTier(openAIServiceTier(completion.service_tier)),
    ...(typeof completion.id === 'string' && completion.id ? { upstreamId: completion.id } : {}),
  }
}
