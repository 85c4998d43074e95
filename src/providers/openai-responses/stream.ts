/**
 * An OpenAI Responses stream (`event: <type>` + `data: {…, sequence_number}`, no `[DONE]`: it ends
 * after `response.completed`) re-emitted as our item-level events. OpenAI's events already are
 * our events, so each one passes through minus `sequence_number` (core numbers its own stream)
 * and minus the response-level ones (core sends its own created/in_progress/completed).
 */

import type { UpstreamCall } from '../contract'
import { isItemEventType, type ItemEvent, type UpstreamStreamEvent } from '../events'
import { UpstreamFailure } from '../../core/upstream-failure'
import { parseSseJson } from '../shared/sse'
import { readSseEvents } from '../shared/sse-events'
import { readAsSent } from './as-sent'
import { openAIServiceTier, servedTier } from '../shared/service-tier'
import { readCompletedServiceTier, readCompletedUsage } from './completed-usage'
import { toInBandFailure } from './errors'
import { toFinish, toOutputItem, toUsage } from './result'
import type { OpenAIStreamEvent } from './wire'

/**
 * Dropped: the response-level events core emits itself, and OpenAI's undocumented `keepalive`
 * heartbeat on long reasoning, which older SDKs reject as an unknown event (openai-node #1964).
 */
const SKIPPED_EVENTS = new Set(['response.created', 'response.in_progress', 'response.queued', 'keepalive'])

/** gaps §2: clients expect `logprobs` on both; OpenAI omits it on some models. */
const TEXT_EVENTS = new Set(['response.output_text.delta', 'response.output_text.done'])

const ITEM_EVENTS = new Set(['response.output_item.added', 'response.output_item.done'])

/**
 * OpenAI's item-level events already are ours (a loose wire shape read as the typed member its `type`
 * names); any other kind (`web_search_call.*`, annotations…) is relayed as it came.
 */
const toStreamEvent = (event: OpenAIStreamEvent): UpstreamStreamEvent => {
  const { sequence_number: _sequenceNumber, ...rest } = event
  if (!isItemEventType(rest.type)) return { type: 'relayed', event: rest }
  if (TEXT_EVENTS.has(rest.type) && !Array.isArray(rest.logprobs)) rest.logprobs = []
  else if (ITEM_EVENTS.has(rest.type) && rest.item) rest.item = toOutputItem(rest.item) as OpenAIStreamEvent['item']
  return rest as unknown as ItemEvent
}

/**
 * OpenAI leaves `name` off `response.function_call_arguments.done`; OpenRouter's SDK requires it, as our
 * translated streams carry it, so it is taken from the call's `response.output_item.added`.
 */
const createCallNamer = () => {
  const names = new Map<unknown, unknown>()
  return (event: OpenAIStreamEvent): OpenAIStreamEvent => {
    if (event.type === 'response.output_item.added' && event.item?.type === 'function_call') names.set(event.item.id, event.item.name)
    if (event.type !== 'response.function_call_arguments.done' || event.name !== undefined) return event
    const name = names.get(event.item_id)
    return typeof name === 'string' ? { ...event, name } : event
  }
}

/** `readStream`: one upstream message at a time, straight into our events (shared/sse-events.ts). */
export const readOpenAIStream = (body: AsyncIterable<Uint8Array>, call: UpstreamCall): AsyncIterable<UpstreamStreamEvent> => {
  let isFinished = false
  const withCallName = createCallNamer()
  return readSseEvents<UpstreamStreamEvent>(
    body,
    {
      message(message, out) {
        // Read on to the end of the body after the finish, so the connection is released rather than cut.
        if (isFinished) return
        // Named events core does not forward are dropped unread: `response.created` carries the whole response object.
        if (message.event !== undefined && SKIPPED_EVENTS.has(message.event)) return
        if (message.event === 'response.completed') {
          const usage = readCompletedUsage(message.data)
          if (usage !== undefined) {
            if (usage) out.push({ type: 'upstream.usage', usage: toUsage(usage) })
            out.push({ type: 'upstream.finish', status: 'completed', incompleteDetails: null, ...servedTier(openAIServiceTier(readCompletedServiceTier(message.data))) })
            isFinished = true
            return
          }
        }
        const asSent = readAsSent(message.data)
        if (asSent) {
          out.push(asSent)
          return
        }
        const event = parseSseJson(message.data) as OpenAIStreamEvent | undefined
        if (!event || typeof event !== 'object') return
        const type = typeof event.type === 'string' ? event.type : message.event
        if (!type || SKIPPED_EVENTS.has(type)) return
        switch (type) {
          case 'response.completed':
          case 'response.incomplete': {
            const response = event.response ?? {}
            // A response without usage: the engine estimates what was used.
            if (response.usage) out.push({ type: 'upstream.usage', usage: toUsage(response.usage) })
            out.push({ type: 'upstream.finish', ...toFinish(response, type === 'response.incomplete'), ...servedTier(openAIServiceTier(response.service_tier)) })
            isFinished = true
            return
          }
          case 'response.failed':
            throw toInBandFailure(event.response?.error, 'OpenAI reported the response as failed')
          case 'error':
            throw toInBandFailure(event.error ?? { code: event.code ?? null, message: event.message ?? null }, 'OpenAI sent an error event')
          default:
            out.push(toStreamEvent(withCallName(event.type === type ? event : { ...event, type })))
        }
      },
      end() {
        if (!isFinished) throw new UpstreamFailure('provider_unavailable', 'OpenAI stream ended before response.completed', { upstreamStatus: 200 })
      },
    },
    call.maxEventBytes,
  )
}
