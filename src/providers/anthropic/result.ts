/**
 * Anthropic Message → Responses result. The same output builder as the stream path turns the
 * content blocks into items, so both paths produce the same output.
 */

import type { FinishStatus, UpstreamCall, UpstreamResult } from '../contract'
import type { OutputBuilder } from '../shared/output-builder'
import { createOutputBuilder } from '../shared/output-builder'
import { UpstreamFailure } from '../../core/upstream-failure'
import type { ItemEvent, RelayedEvent } from '../events'
import { inputTokensDetails, type Usage } from '../types'
import { toInBandFailure } from './errors'
import { servedTier } from '../shared/service-tier'
import { createWebSearchReader, type WebSearchReader } from './web-search'
import { ANTHROPIC_REASONING_FORMAT, isRecord, type WireContentBlock, type WireError, type WireUsage } from './wire'

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.trunc(value) : 0)

/**
 * Anthropic usage → canonical usage. Anthropic's `input_tokens` excludes cache reads and cache
 * writes, so all three add up to the whole prompt; thinking is already inside `output_tokens`.
 */
export const toUsage = (usage: WireUsage | undefined): Usage => {
  const cacheRead = count(usage?.cache_read_input_tokens)
  const cacheWrite = count(usage?.cache_creation_input_tokens)
  const input = count(usage?.input_tokens) + cacheRead + cacheWrite
  const output = count(usage?.output_tokens)
  return {
    input_tokens: input,
    input_tokens_details: inputTokensDetails(cacheRead, cacheWrite, count(usage?.cache_creation?.ephemeral_1h_input_tokens)),
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: count(usage?.output_tokens_details?.thinking_tokens) },
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
 * `stop_reason` → finish. `max_tokens` and `model_context_window_exceeded` ran out of room;
 * `refusal` (a safety classifier stopped the answer) is reported as a content filter, the
 * Responses reason for "the provider stopped it", since Anthropic sends no refusal text to show.
 * `pause_turn` (Anthropic's server-tool loop, e.g. its web searches, reached its iteration limit mid-answer)
 * is `incomplete` with Anthropic's own reason, `pause_turn`: the answer is not finished, and the gateway does
 * not continue it (docs/decisions.md, "Anthropic's pause_turn"). `end_turn`, `tool_use` and `stop_sequence`
 * (which names the matched sequence in `stop_sequence`) are normal ends.
 */
export const toFinish = (stopReason: string | null | undefined, stopSequence?: unknown): Finish => {
  switch (stopReason) {
    case 'stop_sequence':
      return typeof stopSequence === 'string' ? { ...COMPLETED, stopSequence } : COMPLETED
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return { status: 'incomplete', incompleteDetails: { reason: 'max_output_tokens' } }
    case 'refusal':
      return { status: 'incomplete', incompleteDetails: { reason: 'content_filter' } }
    case 'pause_turn':
      return { status: 'incomplete', incompleteDetails: { reason: 'pause_turn' } }
    default:
      return COMPLETED
  }
}

/**
 * Feeds one whole content block to the builder. With `searches`, web searches and their citations become
 * `web_search_call` items and `url_citation`s (web-search.ts); other server-tool blocks are skipped.
 */
export const feedBlock = (builder: OutputBuilder, block: WireContentBlock, index: number, searches?: WebSearchReader): Array<ItemEvent | { type: 'relayed'; event: RelayedEvent }> => {
  switch (block.type) {
    case 'text': {
      if (!searches) return typeof block.text === 'string' ? builder.text(block.text) : []
      searches.textStart(block)
      const events = typeof block.text === 'string' ? builder.text(block.text) : []
      return [...events, ...searches.textStop()]
    }
    case 'server_tool_use':
      return searches?.isSearch(block) ? [...searches.start(block.id as string), ...searches.searching(block.id as string, block.input)] : []
    case 'web_search_tool_result':
      return searches ? searches.result(block) : []
    case 'thinking': {
      const events = typeof block.thinking === 'string' ? builder.reasoningText(block.thinking, ANTHROPIC_REASONING_FORMAT) : []
      if (typeof block.signature === 'string' && block.signature !== '') events.push(...builder.reasoningSignature(block.signature, ANTHROPIC_REASONING_FORMAT))
      // Each thinking block is its own reasoning item: its signature covers that block alone.
      return [...events, ...builder.endReasoning()]
    }
    case 'redacted_thinking':
      return typeof block.data === 'string' ? [...builder.reasoningEncrypted(block.data, ANTHROPIC_REASONING_FORMAT), ...builder.endReasoning()] : []
    case 'tool_use': {
      const events = builder.functionCall(index, { callId: String(block.id ?? ''), name: String(block.name ?? '') })
      events.push(...builder.functionCallArguments(index, JSON.stringify(block.input ?? {})))
      return events
    }
    default:
      return []
  }
}

/**
 * Anthropic's tier in the canonical (OpenAI) names: `standard` is `default`, `priority` is `priority`; `batch` (the
 * Message Batches API, which the gateway never calls) and anything else have none, so are dropped.
 */
const ANTHROPIC_SERVICE_TIERS: Readonly<Record<string, string>> = { standard: 'default', priority: 'priority' }

/** The tier a message's usage reports, as `UpstreamResult.serviceTier`. */
export const toServiceTier = (usage: WireUsage | undefined) =>
  servedTier(typeof usage?.service_tier === 'string' && Object.hasOwn(ANTHROPIC_SERVICE_TIERS, usage.service_tier) ? ANTHROPIC_SERVICE_TIERS[usage.service_tier] : undefined)

const malformed = () => new UpstreamFailure('provider_unavailable', 'Anthropic returned a malformed message', { upstreamStatus: 200 })

/** `readResult` for a non-streaming Message body. */
export const readMessagesResult = (body: unknown, _call: UpstreamCall): UpstreamResult => {
  if (!isRecord(body)) throw malformed()
  if (body.type === 'error') throw toInBandFailure(body.error as WireError | undefined)
  if (!Array.isArray(body.content)) throw malformed()
  const builder = createOutputBuilder()
  const searches = createWebSearchReader(builder)
  for (const [index, block] of body.content.entries()) if (isRecord(block)) feedBlock(builder, block as WireContentBlock, index, searches)
  const finish = toFinish(body.stop_reason as string | null | undefined, body.stop_sequence)
  builder.finish(finish.status)
  return {
    output: builder.items,
    ...(body.usage ? { usage: toUsage(body.usage as WireUsage) } : {}),
    status: finish.status,
    incompleteDetails: finish.incompleteDetails,
    ...(finish.stopSequence === undefined ? {} : { stopSequence: finish.stopSequence }),
    ...toServiceTier(body.usage as WireUsage | undefined),
    ...(typeof body.id === 'string' ? { upstreamId: body.id } : {}),
  }
}
