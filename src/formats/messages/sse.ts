/**
 * A session as Anthropic Messages server-sent events: `message_start`, then per content block
 * `content_block_start`, its deltas (`text_delta`, `thinking_delta`, `signature_delta`,
 * `input_json_delta`) and `content_block_stop` (a generated image is one `image` block, whole in its start),
 * then `message_delta` (stop reason, usage) and `message_stop`. Quiet stretches get `ping` events, as
 * Anthropic sends them. A failure after the start is an `error` event, which ends the stream (Anthropic's
 * SDKs throw it).
 */

import type { ChunkProducer } from '../../core/event-stream'
import { startEncoded } from '../shared/reply'
import type { BilledUsage } from '../../engine/billing'
import type { ResponseFailure, ResponseResult, ResponseSession, SessionEvent } from '../../engine/session-events'
import { completedImages, type OutputFunctionCall, type OutputImage, type OutputReasoning } from '../../providers/types'
import {
  imageBlockOf,
  messageId,
  reasoningTextOf,
  redactedDataOf,
  stopReasonOf,
  stopSequenceOf,
  toMessagesError,
  toMessagesServiceTier,
  toMessagesUsage,
} from './shared'
import { asGeneratedImage } from '../shared/server-tool-images'

const PING = 'event: ping\ndata: {"type":"ping"}\n\n'

const event = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

interface OpenBlock {
  index: number
  /** Tool calls: argument text sent so far, so a call whose arguments arrive only whole is still sent in full. */
  sentLength: number
}

export const toMessagesSse =
  (session: ResponseSession): ChunkProducer =>
  (sink) => {
    let failure: ResponseFailure | undefined
    let usage: BilledUsage | undefined
    let blockCount = 0
    // Keyed by the output item (`output_index`), and by content part for a message's texts.
    const open = new Map<string, OpenBlock>()

    const stop = (key: string) => {
      const block = open.get(key)
      if (!block) return ''
      open.delete(key)
      return event('content_block_stop', { index: block.index })
    }
    // One block at a time, as Anthropic streams them: a new block ends the ones still open (a tool call
    // whose item ends later has streamed its arguments by then).
    const start = (key: string, block: Record<string, unknown>) => {
      let text = ''
      for (const openKey of [...open.keys()]) text += stop(openKey)
      const opened = { index: blockCount++, sentLength: 0 }
      open.set(key, opened)
      return { opened, text: text + event('content_block_start', { index: opened.index, content_block: block }) }
    }
    const delta = (index: number, body: Record<string, unknown>) => event('content_block_delta', { index, delta: body })
    const stopItem = (outputIndex: number) => {
      let text = ''
      for (const key of [...open.keys()]) if (key === `${outputIndex}` || key.startsWith(`${outputIndex}:`)) text += stop(key)
      return text
    }
    const textDelta = (key: string, text: string) => {
      const block = open.get(key)
      if (block) return delta(block.index, { type: 'text_delta', text })
      const started = start(key, { type: 'text', text: '' })
      return started.text + delta(started.opened.index, { type: 'text_delta', text })
    }
    const thinkingDelta = (outputIndex: number, thinking: string) => {
      const key = `${outputIndex}`
      const block = open.get(key)
      if (block) return delta(block.index, { type: 'thinking_delta', thinking })
      const started = start(key, { type: 'thinking', thinking: '', signature: '' })
      return started.text + delta(started.opened.index, { type: 'thinking_delta', thinking })
    }
    // What only a finished reasoning item tells: its signature, its redacted thinking, or all of it when nothing streamed.
    const reasoningDone = (outputIndex: number, item: OutputReasoning) => {
      const key = `${outputIndex}`
      let text = ''
      if (!open.has(key)) {
        const thinking = reasoningTextOf(item)
        if (thinking !== '' || item.signature) text += thinkingDelta(outputIndex, thinking)
      }
      const block = open.get(key)
      if (block && item.signature) text += delta(block.index, { type: 'signature_delta', signature: item.signature })
      text += stop(key)
      const data = redactedDataOf(item)
      if (data) text += start(key, { type: 'redacted_thinking', data }).text + stop(key)
      return text
    }
    const callDone = (outputIndex: number, item: OutputFunctionCall) => {
      const key = `${outputIndex}`
      const block = open.get(key)
      let text = ''
      if (block && item.arguments.length > block.sentLength) {
        text += delta(block.index, { type: 'input_json_delta', partial_json: item.arguments.slice(block.sentLength) })
        block.sentLength = item.arguments.length
      }
      return text + stop(key)
    }
    const imageDone = (outputIndex: number, item: OutputImage) => {
      const [image] = completedImages([item])
      if (!image) return stopItem(outputIndex)
      const key = `${outputIndex}`
      return start(key, imageBlockOf(image)).text + stop(key)
    }
    const end = (result: ResponseResult) => {
      let text = ''
      for (const key of [...open.keys()]) text += stop(key)
      const ended = failure ?? result.error
      if (ended) return text + event('error', toMessagesError(ended))
      return (
        text +
        event('message_delta', {
          delta: { stop_reason: stopReasonOf(result), stop_sequence: stopSequenceOf(result) },
          // The tier that served is known only now; Anthropic's own delta leaves it out, which clients tolerate.
          usage: { ...toMessagesUsage(usage ?? result.usage), service_tier: toMessagesServiceTier(result, session.request.service_tier) },
        }) +
        event('message_stop', {})
      )
    }

    const encode = (sessionEvent: SessionEvent): string | undefined => {
      switch (sessionEvent.type) {
        case 'keep_alive':
          return PING
        case 'started':
          return event('message_start', {
            message: {
              id: messageId(sessionEvent.id),
              type: 'message',
              role: 'assistant',
              model: sessionEvent.model,
              content: [],
              stop_reason: null,
              stop_sequence: null,
              // Counted when the answer ends: the final `message_delta` carries every figure, and the tier that served.
              usage: { ...toMessagesUsage(null), service_tier: toMessagesServiceTier(null, session.request.service_tier) },
            },
          })
        case 'response.output_item.added': {
          if (sessionEvent.item.type !== 'function_call') return undefined
          const call = sessionEvent.item as OutputFunctionCall
          const started = start(`${sessionEvent.output_index}`, { type: 'tool_use', id: call.call_id, name: call.name, input: {} })
          if (call.arguments === '') return started.text
          started.opened.sentLength = call.arguments.length
          return started.text + delta(started.opened.index, { type: 'input_json_delta', partial_json: call.arguments })
        }
        case 'response.output_text.delta':
          return textDelta(`${sessionEvent.output_index}:${sessionEvent.content_index}`, sessionEvent.delta)
        case 'response.refusal.delta':
          return textDelta(`${sessionEvent.output_index}:${sessionEvent.content_index}`, sessionEvent.delta)
        case 'response.content_part.done':
          return stop(`${sessionEvent.output_index}:${sessionEvent.content_index}`)
        case 'response.reasoning_summary_text.delta':
        case 'response.reasoning_text.delta':
          return thinkingDelta(sessionEvent.output_index, sessionEvent.delta)
        case 'response.function_call_arguments.delta': {
          const block = open.get(`${sessionEvent.output_index}`)
          if (!block) return undefined
          block.sentLength += sessionEvent.delta.length
          return delta(block.index, { type: 'input_json_delta', partial_json: sessionEvent.delta })
        }
        case 'response.output_item.done':
          if (sessionEvent.item.type === 'function_call') return callDone(sessionEvent.output_index, sessionEvent.item as OutputFunctionCall)
          if (sessionEvent.item.type === 'reasoning') return reasoningDone(sessionEvent.output_index, sessionEvent.item as OutputReasoning)
          if (sessionEvent.item.type === 'image_generation_call' || sessionEvent.item.type === 'service:image_generation') {
            return imageDone(sessionEvent.output_index, asGeneratedImage(sessionEvent.item) as OutputImage)
          }
          return stopItem(sessionEvent.output_index)
        case 'usage':
          usage = sessionEvent.usage
          return undefined
        case 'error':
          failure = sessionEvent.error
          return undefined
        case 'finished':
          return end(sessionEvent.result)
        // Part starts, whole texts, debug echoes and provider-run items have no Messages counterpart.
        default:
          return undefined
      }
    }
    return startEncoded(session, sink, encode)
  }
