/**
 * A session as Chat Completions server-sent events, as OpenRouter streams them: a first chunk with the
 * role, content, refusal and reasoning deltas (`reasoning` text and `reasoning_details` blocks), tool
 * calls by `index` (id and name first, then argument pieces), each generated image whole in `images` when its
 * item is done, a chunk with `finish_reason`, a last chunk
 * with `usage` and no choices, then `data: [DONE]`. A failure after the start is a chunk with `error`
 * and `finish_reason: "error"`. Quiet stretches get the same `: PROCESSING` comments as Responses streams.
 */

import type { ChunkProducer } from '../../core/event-stream'
import { startEncoded } from '../shared/reply'
import type { BilledUsage } from '../../engine/billing'
import type { ResponseFailure, ResponseResult, ResponseSession, SessionEvent } from '../../engine/session-events'
import { completedImages, type OutputFunctionCall, type OutputImage, type OutputReasoning } from '../../providers/types'
import {
  chatCompletionId,
  finishReasonOf,
  MESSAGE_SEPARATOR,
  providerNameOf,
  reasoningDetailsOf,
  reasoningFormatOf,
  toChatAnnotation,
  toChatError,
  toChatImage,
  toChatLogprobs,
  toChatUsage,
  type ChatWriterOptions,
  type ReasoningDetail,
} from './shared'
import { asGeneratedImage } from '../shared/server-tool-images'
import { echoedServiceTier } from '../shared/service-tier'

const KEEP_ALIVE = ': PROCESSING\n\n'
const DONE = 'data: [DONE]\n\n'

interface OpenCall {
  index: number
  /** Argument text sent so far, so a call whose arguments arrive only whole is still sent in full. */
  sentLength: number
}

export const toChatCompletionsSse =
  (session: ResponseSession, options: ChatWriterOptions): ChunkProducer =>
  (sink) => {
    // Every chunk starts with the same fields: serialised once, when the response starts.
    let head = ''
    let failure: ResponseFailure | undefined
    let usage: BilledUsage | undefined
    const calls = new Map<string, OpenCall>()
    const reasoningFormats = new Map<number, string>()
    // One `reasoning_details` index per block (a reasoning item's summary, text or encrypted part), in order of appearance.
    const detailIndexes = new Map<string, number>()
    // Content sent so far, where each text part started in it (for its annotations), and whether a later message
    // item (a later turn of a server-tool loop) must start apart from the text before it.
    let contentLength = 0
    let isSeparatorDue = false
    const partStarts = new Map<string, number>()

    const chunk = (rest: string) => `data: ${head}${rest}}\n\n`
    const delta = (fields: Record<string, unknown>, finishReason: string | null = null, logprobs = '') =>
      chunk(`"choices":[{"index":0,"delta":${JSON.stringify(fields)}${logprobs},"finish_reason":${finishReason === null ? 'null' : `"${finishReason}"`}}]`)
    // Log probabilities ride on the chunk of the text they belong to, as OpenAI streams them.
    const textDelta = (text: string, logprobs: readonly unknown[]) =>
      options.isLogprobsRequested && logprobs.length > 0
        ? delta({ content: text }, null, `,"logprobs":${JSON.stringify({ content: toChatLogprobs(logprobs), refusal: null })}`)
        : delta({ content: text })
    const detailIndex = (outputIndex: number, kind: string) => {
      const key = `${outputIndex}:${kind}`
      let index = detailIndexes.get(key)
      if (index === undefined) {
        index = detailIndexes.size
        detailIndexes.set(key, index)
      }
      return index
    }
    const reasoningDelta = (outputIndex: number, text: string, kind: 'summary' | 'text') => {
      if (options.isReasoningExcluded) return undefined
      const format = reasoningFormats.get(outputIndex) ?? 'unknown'
      const index = detailIndex(outputIndex, kind)
      const detail: ReasoningDetail =
        kind === 'summary' ? { type: 'reasoning.summary', summary: text, format, index } : { type: 'reasoning.text', text, format, index }
      return delta({ reasoning: text, reasoning_details: [detail] })
    }
    // What only a finished reasoning item tells: its signature and encrypted content.
    const reasoningDone = (outputIndex: number, item: OutputReasoning) => {
      if (options.isReasoningExcluded) return undefined
      const details = reasoningDetailsOf({ ...item, summary: [], content: [] }, 0).map((detail) => ({
        ...detail,
        index: detailIndex(outputIndex, detail.type === 'reasoning.encrypted' ? 'encrypted' : 'text'),
      }))
      return details.length > 0 ? delta({ reasoning_details: details }) : undefined
    }
    const callDone = (item: OutputFunctionCall) => {
      const call = calls.get(item.id)
      if (!call || item.arguments.length <= call.sentLength) return undefined
      const rest = item.arguments.slice(call.sentLength)
      call.sentLength = item.arguments.length
      return delta({ tool_calls: [{ index: call.index, function: { arguments: rest } }] })
    }
    // Only the last chunks carry `service_tier`: the tier that served is known once the upstream has finished.
    const end = (result: ResponseResult) => {
      const ended = failure ?? result.error
      const tier = `"service_tier":${JSON.stringify(echoedServiceTier(result, session.request.service_tier))},`
      const last = ended
        ? chunk(`"error":${JSON.stringify(toChatError(ended))},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]`)
        : chunk(`${tier}"choices":[{"index":0,"delta":{},"finish_reason":"${finishReasonOf(result)}"}]`)
      const billed = usage ?? result.usage
      const metadata = result.serviceMetadata ? `,"service_metadata":${JSON.stringify(result.serviceMetadata)}` : ''
      const usageChunk = billed ? chunk(`${tier}"choices":[],"usage":${JSON.stringify(toChatUsage(billed))}${metadata}`) : ''
      return last + usageChunk + DONE
    }

    const encode = (event: SessionEvent): string | undefined => {
      switch (event.type) {
        case 'keep_alive':
          return KEEP_ALIVE
        case 'started': {
          const provider = providerNameOf(event.servedBy)
          head =
            `{"id":${JSON.stringify(chatCompletionId(event.id))},"object":"chat.completion.chunk","created":${event.createdAt},` +
            `"model":${JSON.stringify(event.model)},${provider === undefined ? '' : `"provider":${JSON.stringify(provider)},`}`
          return delta({ role: 'assistant', content: '' })
        }
        case 'response.output_item.added': {
          const { item } = event
          if (item.type === 'reasoning') reasoningFormats.set(event.output_index, reasoningFormatOf(item as OutputReasoning))
          if (item.type === 'message' && contentLength > 0) isSeparatorDue = true
          if (item.type !== 'function_call') return undefined
          const call = item as OutputFunctionCall
          const index = calls.size
          calls.set(call.id, { index, sentLength: call.arguments.length })
          return delta({ tool_calls: [{ index, id: call.call_id, type: 'function', function: { name: call.name, arguments: call.arguments } }] })
        }
        case 'response.content_part.added': {
          if (event.part.type !== 'output_text') return undefined
          const separator = isSeparatorDue ? MESSAGE_SEPARATOR : ''
          isSeparatorDue = false
          contentLength += separator.length
          partStarts.set(`${event.output_index}:${event.content_index}`, contentLength)
          return separator ? delta({ content: separator }) : undefined
        }
        case 'response.output_text.delta':
          contentLength += event.delta.length
          return textDelta(event.delta, event.logprobs)
        case 'relayed': {
          const relayed = event.event
          if (relayed.type !== 'response.output_text.annotation.added') return undefined
          const start = partStarts.get(`${String(relayed.output_index)}:${String(relayed.content_index)}`)
          const cited = start === undefined ? undefined : toChatAnnotation(relayed.annotation, start)
          return cited ? delta({ annotations: [cited] }) : undefined
        }
        case 'response.refusal.delta':
          return delta({ refusal: event.delta })
        case 'response.reasoning_summary_text.delta':
          return reasoningDelta(event.output_index, event.delta, 'summary')
        case 'response.reasoning_text.delta':
          return reasoningDelta(event.output_index, event.delta, 'text')
        case 'response.function_call_arguments.delta': {
          const call = calls.get(event.item_id)
          if (!call) return undefined
          call.sentLength += event.delta.length
          return delta({ tool_calls: [{ index: call.index, function: { arguments: event.delta } }] })
        }
        case 'response.output_item.done':
          if (event.item.type === 'function_call') return callDone(event.item as OutputFunctionCall)
          if (event.item.type === 'reasoning') return reasoningDone(event.output_index, event.item as OutputReasoning)
          if (event.item.type === 'image_generation_call' || event.item.type === 'service:image_generation') {
            const [image] = completedImages([asGeneratedImage(event.item) as OutputImage])
            return image ? delta({ images: [toChatImage(image)] }) : undefined
          }
          return undefined
        case 'usage':
          usage = event.usage
          return undefined
        case 'error':
          failure = event.error
          return undefined
        case 'finished':
          return end(event.result)
        // Part boundaries, whole texts and provider-run items have no Chat Completions counterpart.
        default:
          return undefined
      }
    }
    return startEncoded(session, sink, encode)
  }
