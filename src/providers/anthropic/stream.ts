/**
 * Anthropic Messages stream → Responses events, incrementally. Anthropic names each event
 * (`message_start`, `content_block_start|delta|stop`, `message_delta`, `message_stop`, `ping`,
 * `error`) and repeats the name as `type` in the data; a stream ends at `message_stop` (there is
 * no `[DONE]`). Reference: https://platform.claude.com/docs/en/build-with-claude/streaming
 */

import type { UpstreamCall, UpstreamStreamEvent } from '../contract'
import { createOutputBuilder } from '../shared/output-builder'
import { UpstreamFailure } from '../../core/upstream-failure'
import { parseSseJson, readSse } from '../shared/sse'
import { toInBandFailure } from './errors'
import { feedBlock, toFinish, toServiceTier, toUsage } from './result'
import { createWebSearchReader } from './web-search'
import { ANTHROPIC_REASONING_FORMAT, isRecord, type WireContentBlock, type WireError, type WireUsage } from './wire'

const USAGE_COUNTS = ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'] as const

/**
 * `message_start` carries the input counts, `message_delta` the cumulative output count (and, on
 * newer API versions, the input counts again): later numbers replace earlier ones.
 */
const mergeUsage = (into: WireUsage, update: unknown) => {
  if (!isRecord(update)) return
  for (const key of USAGE_COUNTS) if (typeof update[key] === 'number') into[key] = update[key]
  if (isRecord(update.output_tokens_details)) into.output_tokens_details = update.output_tokens_details as WireUsage['output_tokens_details']
  if (isRecord(update.cache_creation)) into.cache_creation = update.cache_creation as WireUsage['cache_creation']
  // On message_start's usage; message_delta's leaves it out.
  if (typeof update.service_tier === 'string') into.service_tier = update.service_tier
}

/** A web search's input: the streamed JSON when there was some, else what the block started with. */
const searchInput = (open: OpenBlock): unknown => {
  if (!open.searchJson) return open.input
  try {
    return JSON.parse(open.searchJson)
  } catch {
    return open.input
  }
}

interface OpenBlock {
  type: string
  /** tool_use only: the input given with `content_block_start` and whether JSON deltas followed. */
  input?: unknown
  hasArguments?: boolean
  /** A web search (`server_tool_use`): its id and the input JSON streamed so far. */
  searchId?: string
  searchJson?: string
}

/** `readStream`: yields Responses events as Anthropic sends them; throws on `error` events and cut streams. */
export async function* readMessagesStream(body: AsyncIterable<Uint8Array>, call: UpstreamCall): AsyncIterable<UpstreamStreamEvent> {
  const builder = createOutputBuilder()
  const searches = createWebSearchReader(builder)
  const usage: WireUsage = {}
  const blocks = new Map<number, OpenBlock>()
  let stopReason: string | null | undefined
  let stopSequence: unknown
  let isStopped = false

  for await (const message of readSse(body, call.maxEventBytes)) {
    // After message_stop the body should be over; anything still arriving is drained unread.
    if (isStopped) continue
    const data = parseSseJson(message.data)
    if (!isRecord(data)) continue
    const type = typeof data.type === 'string' ? data.type : message.event
    const index = typeof data.index === 'number' ? data.index : -1

    switch (type) {
      case 'message_start':
        if (isRecord(data.message)) mergeUsage(usage, data.message.usage)
        break

      case 'content_block_start': {
        const block = isRecord(data.content_block) ? (data.content_block as WireContentBlock) : undefined
        if (!block) break
        if (block.type === 'tool_use') {
          blocks.set(index, { type: block.type, input: block.input, hasArguments: false })
          yield* builder.functionCall(index, { callId: String(block.id ?? ''), name: String(block.name ?? '') })
        } else if (searches.isSearch(block)) {
          blocks.set(index, { type: block.type, input: block.input, searchId: block.id as string, searchJson: '' })
          yield* searches.start(block.id as string)
        } else if (block.type === 'web_search_tool_result') {
          blocks.set(index, { type: block.type })
          yield* searches.result(block)
        } else if (block.type === 'text') {
          blocks.set(index, { type: block.type })
          searches.textStart(block)
          if (typeof block.text === 'string') yield* builder.text(block.text)
        } else {
          blocks.set(index, { type: block.type })
          // Start blocks are usually empty (`text: ""`); a prefilled one is fed whole.
          yield* feedBlock(builder, block, index)
        }
        break
      }

      case 'content_block_delta': {
        const delta = isRecord(data.delta) ? data.delta : undefined
        if (!delta) break
        switch (delta.type) {
          case 'text_delta':
            if (typeof delta.text === 'string') yield* builder.text(delta.text)
            break
          case 'thinking_delta':
            if (typeof delta.thinking === 'string') yield* builder.reasoningText(delta.thinking, ANTHROPIC_REASONING_FORMAT)
            break
          case 'signature_delta':
            if (typeof delta.signature === 'string') yield* builder.reasoningSignature(delta.signature, ANTHROPIC_REASONING_FORMAT)
            break
          case 'citations_delta':
            searches.citation(delta.citation)
            break
          case 'input_json_delta': {
            const open = blocks.get(index)
            if (open?.searchId !== undefined && typeof delta.partial_json === 'string') {
              open.searchJson += delta.partial_json
              break
            }
            // Server-tool blocks (not requested by us) stream JSON too: only client tool calls count.
            if (open?.type !== 'tool_use' || typeof delta.partial_json !== 'string' || delta.partial_json === '') break
            open.hasArguments = true
            yield* builder.functionCallArguments(index, delta.partial_json)
            break
          }
          default:
            break
        }
        break
      }

      case 'content_block_stop': {
        const open = blocks.get(index)
        // A call without arguments streams no JSON at all; give it the (empty) input it started with.
        if (open?.type === 'tool_use' && !open.hasArguments) yield* builder.functionCallArguments(index, JSON.stringify(open.input ?? {}))
        // Each thinking block is its own reasoning item: its signature covers that block alone.
        if (open?.type === 'thinking' || open?.type === 'redacted_thinking') yield* builder.endReasoning()
        if (open?.type === 'text') yield* searches.textStop()
        if (open?.searchId !== undefined) yield* searches.searching(open.searchId, searchInput(open))
        break
      }

      case 'message_delta':
        if (isRecord(data.delta) && typeof data.delta.stop_reason === 'string') stopReason = data.delta.stop_reason
        if (isRecord(data.delta) && typeof data.delta.stop_sequence === 'string') stopSequence = data.delta.stop_sequence
        mergeUsage(usage, data.usage)
        break

      case 'message_stop': {
        isStopped = true
        const finish = toFinish(stopReason, stopSequence)
        yield* builder.finish(finish.status)
        // Anthropic counts every message; a stream that carried no count leaves the estimate to the engine.
        if (Object.keys(usage).some((key) => key !== 'service_tier')) yield { type: 'upstream.usage', usage: toUsage(usage) }
        yield { type: 'upstream.finish', ...finish, ...toServiceTier(usage) }
        break
      }

      case 'error':
        throw toInBandFailure(isRecord(data.error) ? (data.error as WireError) : undefined)

      default:
        // `ping` keep-alives and event kinds added later.
        break
    }
  }

  if (!isStopped) {
    throw new UpstreamFailure('provider_unavailable', 'Anthropic stream ended before message_stop', { upstreamStatus: 200 })
  }
}
