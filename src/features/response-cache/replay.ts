/**
 * A cached answer served again (docs/decisions.md, Response cache): whole, or as the complete session a live stream
 * of it would have been, every item opened, its text in one delta, closed, then the usage and the final result. The
 * response and its items get fresh ids, so no two answers share one; the writers number the events themselves.
 */

import { timeOrderedHex } from '../../core/crypto'
import type { BilledUsage } from '../../engine/billing'
import { newResponseId, nowSeconds } from '../../engine/response-identity'
import type { InferenceService } from '../../engine/service'
import { createSessionKit } from '../../engine/session-kit'
import type { ResponseResult, ResponseSession, SessionEvent, WholeAnswer } from '../../engine/session-events'
import type { ResponsesRequestBody } from '../../engine/request.schemas'
import type { ItemEvent } from '../../providers/events'
import type { OutputFunctionCall, OutputItem, OutputMessage, OutputReasoning } from '../../providers/types'

/** The usage a hit reports: the answer's tokens, what the gateway charges for a hit, nothing paid upstream. */
export const hitUsage = (usage: BilledUsage, charge: number): BilledUsage => ({
  ...usage,
  cost: charge,
  is_byok: false,
  is_cache_hit: true,
  cost_details: { upstream_inference_cost: 0, upstream_inference_input_cost: 0, upstream_inference_output_cost: 0 },
})

// An item's id keeps its kind's prefix (`msg_`, `fc_`, `rs_`); the rest is new.
const freshItemId = (id: string) => `${id.includes('_') ? id.slice(0, id.indexOf('_')) : 'item'}_${timeOrderedHex(16)}`

const withFreshId = (item: OutputItem): OutputItem => (typeof item.id === 'string' ? { ...item, id: freshItemId(item.id) } : item)

/** The stored result as a new answer: a fresh id, the times of now, the hit's usage, the hit in its metadata. */
export const replayedResult = (service: InferenceService, stored: ResponseResult, usage: BilledUsage | null, serviceMetadata: Record<string, unknown> | undefined): ResponseResult => {
  const now = nowSeconds(service)
  const { serviceMetadata: _stored, ...rest } = stored
  return {
    ...rest,
    id: newResponseId(),
    createdAt: now,
    completedAt: now,
    output: stored.output.map(withFreshId),
    usage,
    ...(serviceMetadata ? { serviceMetadata } : {}),
  }
}

/** The events a live stream shows for one finished item at `index`. */
const itemEvents = (item: OutputItem, index: number): ItemEvent[] => {
  const itemId = typeof item.id === 'string' ? item.id : ''
  const at = { item_id: itemId, output_index: index }
  if (item.type === 'message') {
    const message = item as OutputMessage
    const events: ItemEvent[] = [{ type: 'response.output_item.added', output_index: index, item: { ...message, status: 'in_progress', content: [] } }]
    message.content.forEach((part, contentIndex) => {
      const position = { ...at, content_index: contentIndex }
      if (part.type === 'output_text') {
        events.push(
          { type: 'response.content_part.added', ...position, part: { type: 'output_text', text: '', annotations: [] } },
          { type: 'response.output_text.delta', ...position, delta: part.text, logprobs: part.logprobs ?? [] },
          { type: 'response.output_text.done', ...position, text: part.text, logprobs: part.logprobs ?? [] },
          { type: 'response.content_part.done', ...position, part: { type: 'output_text', text: part.text, annotations: part.annotations } },
        )
      } else {
        events.push(
          { type: 'response.content_part.added', ...position, part: { type: 'refusal', refusal: '' } },
          { type: 'response.refusal.delta', ...position, delta: part.refusal },
          { type: 'response.refusal.done', ...position, refusal: part.refusal },
          { type: 'response.content_part.done', ...position, part },
        )
      }
    })
    return [...events, { type: 'response.output_item.done', output_index: index, item }]
  }
  if (item.type === 'function_call') {
    const call = item as OutputFunctionCall
    return [
      { type: 'response.output_item.added', output_index: index, item: { ...call, status: 'in_progress', arguments: '' } },
      { type: 'response.function_call_arguments.delta', ...at, delta: call.arguments },
      { type: 'response.function_call_arguments.done', ...at, name: call.name, arguments: call.arguments },
      { type: 'response.output_item.done', output_index: index, item },
    ]
  }
  if (item.type === 'reasoning') {
    const reasoning = item as OutputReasoning
    const events: ItemEvent[] = [
      { type: 'response.output_item.added', output_index: index, item: { ...reasoning, status: 'in_progress', summary: [], ...(reasoning.content ? { content: [] } : {}) } },
    ]
    reasoning.summary.forEach((part, summaryIndex) => {
      const position = { ...at, summary_index: summaryIndex }
      events.push(
        { type: 'response.reasoning_summary_part.added', ...position, part: { type: 'summary_text', text: '' } },
        { type: 'response.reasoning_summary_text.delta', ...position, delta: part.text },
        { type: 'response.reasoning_summary_text.done', ...position, text: part.text },
        { type: 'response.reasoning_summary_part.done', ...position, part },
      )
    })
    reasoning.content?.forEach((part, contentIndex) => {
      const position = { ...at, content_index: contentIndex }
      events.push({ type: 'response.reasoning_text.delta', ...position, delta: part.text }, { type: 'response.reasoning_text.done', ...position, text: part.text })
    })
    return [...events, { type: 'response.output_item.done', output_index: index, item }]
  }
  // Anything else (a generated image, an item a provider ran) arrives whole, as a live stream's `done` carries it.
  return [
    { type: 'response.output_item.added', output_index: index, item },
    { type: 'response.output_item.done', output_index: index, item },
  ]
}

/** A whole answer from the cache. */
export const wholeReplay = (request: ResponsesRequestBody, result: ResponseResult, overheadMs: number): WholeAnswer => ({ request, result, overheadMs })

/** A streamed answer from the cache: a complete session at the client's pace, ended by its usage and result. */
export const sessionReplay = (service: InferenceService, requestId: string, request: ResponsesRequestBody, result: ResponseResult, overheadMs: number): ResponseSession => ({
  request,
  overheadMs,
  start(sink) {
    const kit = createSessionKit(service, sink, { requestId, producer: 'response cache replay' })
    kit.run(async () => {
      const started: SessionEvent = { type: 'started', id: result.id, createdAt: result.createdAt, model: result.model, servedBy: result.servedBy }
      kit.write(started)
      for (const [index, item] of result.output.entries()) {
        for (const event of itemEvents(item, index)) {
          if (kit.isEnded) return
          kit.write(event)
          await kit.paced()
        }
      }
      kit.finish(result.usage, null, result)
    })
    // What a stopped replay used is what the whole hit is charged: the answer was already paid for.
    return kit.stopper(() => (result.usage ? { usage: result.usage, isEstimated: false } : undefined))
  },
})
