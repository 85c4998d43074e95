/**
 * Chat Completions SSE → Responses events, incrementally. The family streams `data: {chunk}`
 * lines and ends with `data: [DONE]`. Quirks handled here:
 * - tool-call deltas are keyed by `index`; the first carries id and name, later ones only argument
 *   text, but some members send a whole call in one chunk or omit `index` (then the id, or the
 *   last call, is the key);
 * - usage comes on a last chunk with empty `choices` (OpenAI, Azure), on the finish chunk
 *   (DeepSeek, Mistral), or under `x_groq` (Groq); the last one seen wins;
 * - Azure opens with a `prompt_filter_results` chunk that has no choices;
 * - an `{"error": …}` data line (or an `event: error`) mid-stream is an in-band failure;
 * - a stream that ends with neither `[DONE]` nor a finish reason was cut off.
 */

import type { Usage } from '../types'
import type { UpstreamCall, UpstreamStreamEvent } from '../contract'
import { createOutputBuilder } from '../shared/output-builder'
import { parseSseJson, type SseMessage } from '../shared/sse'
import { readSseEvents } from '../shared/sse-events'
import { openAIServiceTier, servedTier } from '../shared/service-tier'
import { toInBandFailure, truncatedStreamFailure } from './errors'
import { argumentsText, feedContent, readFinish, readLogprobs, readUsage } from './result'
import type { ChatCompletionWire, ChatErrorWire, ChatToolCallWire } from './wire'

/** `readStream`: each chunk translated as it arrives, straight into our events (shared/sse-events.ts). */
export const readChatStream = (body: AsyncIterable<Uint8Array>, call: UpstreamCall): AsyncIterable<UpstreamStreamEvent> => {
  const builder = createOutputBuilder()
  let usage: Usage | undefined
  let finishReason: string | null = null
  let stopReason: unknown
  // Every chunk names the tier; the last one named is the answer's.
  let serviceTier: string | undefined
  let hasEnded = false
  let lastToolKey: string | number | undefined

  const toolKey = (toolCall: ChatToolCallWire): string | number => {
    if (typeof toolCall.index === 'number') return toolCall.index
    if (typeof toolCall.id === 'string' && toolCall.id) return `id:${toolCall.id}`
    return lastToolKey ?? 0
  }

  const pushFinish = (out: UpstreamStreamEvent[]) => {
    const finish = readFinish(finishReason, stopReason, call)
    out.push(...builder.finish(finish.status))
    // No usage chunk (a member that ignores `stream_options.include_usage`): the engine estimates what was used.
    if (usage) out.push({ type: 'upstream.usage', usage })
    out.push({ type: 'upstream.finish', ...finish, ...servedTier(serviceTier) })
  }

  const translate = (message: SseMessage, out: UpstreamStreamEvent[]) => {
    if (message.data === '[DONE]') {
      hasEnded = true
      pushFinish(out)
      return
    }
    const chunk = parseSseJson(message.data) as ChatCompletionWire | undefined
    if (message.event === 'error') throw toInBandFailure(chunk?.error ?? (chunk as ChatErrorWire | undefined) ?? message.data)
    if (!chunk || typeof chunk !== 'object') return
    if (chunk.error !== undefined && chunk.error !== null) throw toInBandFailure(chunk.error)
    const chunkUsage = chunk.usage ?? chunk.x_groq?.usage
    if (chunkUsage) usage = readUsage(chunkUsage)
    serviceTier = openAIServiceTier(chunk.service_tier) ?? serviceTier
    for (const choice of chunk.choices ?? []) {
      // One answer is asked for; other choices (n > 1) are not ours to translate.
      if ((choice.index ?? 0) !== 0) continue
      const delta = choice.delta
      if (delta) {
        feedContent(builder, delta, out, readLogprobs(choice))
        for (const toolCall of delta.tool_calls ?? []) {
          const key = toolKey(toolCall)
          lastToolKey = key
          out.push(
            ...builder.functionCall(key, {
              ...(toolCall.id ? { callId: toolCall.id } : {}),
              ...(toolCall.function?.name ? { name: toolCall.function.name } : {}),
            }),
          )
          out.push(...builder.functionCallArguments(key, argumentsText(toolCall.function?.arguments)))
        }
      }
      if (choice.finish_reason) finishReason = choice.finish_reason
      if (choice.stop_reason !== undefined && choice.stop_reason !== null) stopReason = choice.stop_reason
    }
  }

  return readSseEvents<UpstreamStreamEvent>(
    body,
    {
      message(message, out) {
        // After `[DONE]` the body is read to its end, not abandoned: leaving it would abort the exchange
        // and cost its keep-alive connection whenever the body's end arrives after `[DONE]`.
        if (hasEnded) return
        // What a failing message pushed before it threw still goes out first.
        translate(message, out)
      },
      // After `[DONE]` the answer is whole: a body that fails on its way out changes nothing.
      bodyFailed(error) {
        if (!hasEnded) throw error
      },
      end(out) {
        if (hasEnded) return
        if (finishReason === null) throw truncatedStreamFailure()
        pushFinish(out)
      },
    },
    call.maxEventBytes,
  )
}
