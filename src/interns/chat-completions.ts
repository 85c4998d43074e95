/**
 * Intern chat as OpenRouter's SDK speaks it (`POST /interns/{id}/chat/completions`): OpenAI-style
 * messages in, `chat.completion.chunk` events out. The turn itself runs exactly as on
 * `POST /interns/{id}/chat`; this module only reads the last message as the turn's input and
 * re-encodes the turn's Responses events as chunks (docs/decisions.md, Interns).
 */

import { ConflictError, InvalidRequestError } from '../core/errors'
import { randomHex } from '../core/crypto'
import type { JsonValue } from '../storage/contract'
import type { InputItem } from '../providers/types'
import { PROVIDE_INPUT_TOOL } from './runtime'

/** OpenRouter's SDK only parses the pause tool under this name (its `InternChatToolCallFunctionName` enum). */
export const SDK_PROVIDE_INPUT_TOOL = 'openrouter.provide_input'

/** The model chunks name when the turn reported none (as OpenRouter's intern API does). */
const FALLBACK_MODEL = 'modelgate/intern'

export type InternChatMessage = {
  role: 'user' | 'assistant' | 'system' | 'developer' | 'tool'
  content?: string | { type: 'text'; text: string }[] | null
  tool_call_id?: string
}

const bodyError = (message: string) => new InvalidRequestError(message, { reason: 'invalid_body' })

const textOf = (content: InternChatMessage['content'], path: string): string => {
  if (content === null || content === undefined) throw bodyError(`${path}: must be a string or text parts`)
  const text = typeof content === 'string' ? content : content.map((part) => part.text).join('')
  if (text === '') throw bodyError(`${path}: must not be empty`)
  return text
}

/** A fresh session id, for a prompt that names none. */
export const newSessionId = () => `session-${randomHex(12)}`

const isPauseCall = (item: JsonValue, callId: string) =>
  !!item && typeof item === 'object' && !Array.isArray(item) && item.type === 'function_call' && item.call_id === callId && item.name === PROVIDE_INPUT_TOOL

const isOutputFor = (item: JsonValue, callId: string) =>
  !!item && typeof item === 'object' && !Array.isArray(item) && item.type === 'function_call_output' && item.call_id === callId

/**
 * The turn's input from the last message (only it is read; earlier ones are the client's copy of the
 * history). A `user` message starts a run; a `tool` message answers the pause call it names, which
 * must be the session's open question.
 */
export const toInternChatInput = (
  messages: readonly InternChatMessage[],
  session: { requested: string | undefined; history: readonly JsonValue[]; isKnown: boolean },
): InputItem[] => {
  const index = messages.length - 1
  const last = messages[index]!
  const path = `body.messages.${index}`
  if (last.role === 'user') return [{ type: 'message', role: 'user', content: textOf(last.content, `${path}.content`) }]
  if (last.role !== 'tool') throw bodyError(`${path}.role: the last message must be a user prompt or a tool reply`)
  if (session.requested === undefined) throw bodyError('body.session_id: required when the last message is a tool reply')
  const callId = last.tool_call_id!
  const asked = session.isKnown ? session.history.findLastIndex((item) => isPauseCall(item, callId)) : -1
  if (asked < 0) throw new ConflictError(`No question ${callId} was asked in this session`, { reason: 'interaction_unknown' })
  if (session.history.slice(asked + 1).some((item) => isOutputFor(item, callId))) {
    throw new ConflictError(`Question ${callId} was already answered`, { reason: 'interaction_not_pending' })
  }
  return [{ type: 'function_call_output', call_id: callId, output: textOf(last.content, `${path}.content`) }]
}

type ResponsesEvent = {
  type: string
  delta?: string
  item?: { type?: string; name?: string; call_id?: string; arguments?: string }
  response?: { model?: string; usage?: { input_tokens?: number; output_tokens?: number; total_tokens?: number; cost?: number; input_tokens_details?: { cached_tokens?: number } } | null; error?: { message?: string } | null }
  message?: string
}

type ChunkUsage = { prompt_tokens: number; completion_tokens: number; total_tokens: number; cost?: number; prompt_tokens_details?: { cached_tokens: number } }

const toUsage = (usage: NonNullable<NonNullable<ResponsesEvent['response']>['usage']>): ChunkUsage => {
  const prompt = usage.input_tokens ?? 0
  const completion = usage.output_tokens ?? 0
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: usage.total_tokens ?? prompt + completion,
    ...(usage.cost === undefined ? {} : { cost: usage.cost }),
    ...(usage.input_tokens_details?.cached_tokens === undefined ? {} : { prompt_tokens_details: { cached_tokens: usage.input_tokens_details.cached_tokens } }),
  }
}

/**
 * Re-encodes a turn's Responses event stream as chat completion chunks: a role chunk, content and
 * reasoning deltas, the pause call as one tool call, a finish chunk (`stop`, `tool_calls` or
 * `error`), then a final chunk with empty `choices` carrying `session_id` and `usage` (`null` after
 * `tool_calls`: the turn is not over), then `[DONE]`.
 */
export const toInternChatChunks = (body: ReadableStream<Uint8Array>, sessionId: string, now: () => Date): ReadableStream<Uint8Array> => {
  const id = `chatcmpl-${randomHex(12)}`
  const created = Math.floor(now().getTime() / 1000)
  const decoder = new TextDecoder()
  const encoder = new TextEncoder()
  let buffer = ''
  let model = FALLBACK_MODEL
  let hasRole = false
  let toolCalls = 0
  let isFinished = false
  const chunk = (fields: Record<string, unknown>) => `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, ...fields })}\n\n`
  const choice = (delta: Record<string, unknown>, finishReason: string | null = null) => {
    const role = hasRole ? {} : { role: 'assistant' }
    hasRole = true
    return chunk({ choices: [{ index: 0, delta: { ...role, ...delta }, finish_reason: finishReason }] })
  }
  const finish = (reason: 'stop' | 'tool_calls' | 'error', usage: ChunkUsage | null, error?: Record<string, unknown>) => {
    isFinished = true
    return (
      chunk({ choices: [{ index: 0, delta: hasRole ? {} : { role: 'assistant' }, finish_reason: reason }], ...(error ? { error } : {}) }) +
      chunk({ choices: [], session_id: sessionId, usage: reason === 'tool_calls' ? null : usage }) +
      'data: [DONE]\n\n'
    )
  }
  const failure = (message: string, reason = 'turn_failed') => finish('error', null, { code: 502, message, metadata: { reason, retryable: true } })

  const translate = (event: ResponsesEvent): string => {
    if (event.response?.model) model = event.response.model
    switch (event.type) {
      case 'response.output_text.delta':
        return event.delta ? choice({ content: event.delta }) : ''
      case 'response.reasoning_text.delta':
      case 'response.reasoning_summary_text.delta':
        return event.delta ? choice({ reasoning: event.delta }) : ''
      case 'response.output_item.done': {
        const item = event.item
        if (item?.type !== 'function_call' || item.name !== PROVIDE_INPUT_TOOL) return ''
        const index = toolCalls++
        return choice({ tool_calls: [{ index, id: item.call_id, type: 'function', function: { name: SDK_PROVIDE_INPUT_TOOL, arguments: item.arguments ?? '' } }] })
      }
      case 'response.completed':
      case 'response.incomplete': {
        const usage = event.response?.usage ? toUsage(event.response.usage) : null
        return finish(toolCalls > 0 ? 'tool_calls' : 'stop', usage)
      }
      case 'response.failed':
        return failure(event.response?.error?.message ?? 'The turn failed')
      case 'error':
        return failure(event.message ?? 'The turn failed')
      default:
        return ''
    }
  }

  const translateBlock = (block: string): string => {
    if (isFinished) return ''
    // Keep-alive comments pass on: a silent turn still shows the connection is alive.
    if (block.startsWith(':')) return `${block}\n\n`
    const data = block
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5))
      .join('\n')
    if (!data || data === '[DONE]') return ''
    return translate(JSON.parse(data) as ResponsesEvent)
  }

  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(bytes, controller) {
        buffer += decoder.decode(bytes, { stream: true })
        let boundary = buffer.indexOf('\n\n')
        let out = ''
        while (boundary >= 0) {
          out += translateBlock(buffer.slice(0, boundary))
          buffer = buffer.slice(boundary + 2)
          boundary = buffer.indexOf('\n\n')
        }
        if (out) controller.enqueue(encoder.encode(out))
      },
      flush(controller) {
        const out = (buffer.trim() ? translateBlock(buffer) : '') + (isFinished ? '' : failure('The turn ended without a final event', 'stream_severed'))
        if (out) controller.enqueue(encoder.encode(out))
      },
    }),
  )
}
