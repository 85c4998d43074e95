/**
 * A request's report: what the request was and how it ended, emitted as the telemetry's `requestEnded` once the answer
 * is settled: a whole answer when it is built, a stream from its session's end, a failure before any answer from the
 * error. The access log is one observer of it: one `logger.info('access', {...})` line per model request
 * (`POST /responses`, an intern chat turn); docs/decisions.md ("Access log") lists the fields. Never the key itself:
 * only the first 8 hex digits of its hash.
 */

import { isGatewayError } from '../core/errors'
import type { Logger } from '../core/logger'
import type { RequestEnded, RequestStarted, Telemetry, TelemetryObserver } from '../core/telemetry'
import type { SessionObserver } from '../engine/observe'
import type { ResponseResult, WholeAnswer } from '../engine/session-events'
import type { Caller } from './auth'

const KEY_HASH_PREFIX_LENGTH = 8

export interface AccessLog {
  /** The caller, once authenticated. */
  identify(caller: Caller): void
  /**
   * The model the request asked for; `input` is the conversation it sent, given only where its workspace broadcasts
   * content to observers (`is_observability_broadcast_enabled`).
   */
  requested(model: string, input?: unknown): void
  /** A whole answer, logged at once. */
  whole(answer: WholeAnswer): void
  /** An observer that logs a stream when its session ends. */
  observer(): SessionObserver
  /** A failure before any answer. */
  failed(error: unknown): void
  /** The HTTP answer: logged here unless a session will log it, or it was logged already. */
  responded(status: number): void
}

type Fields = Record<string, unknown>

const errorTypeOf = (error: unknown): string => {
  if (!isGatewayError(error)) return 'internal_error'
  const type = error.metadata?.error_type ?? error.metadata?.reason
  return typeof type === 'string' ? type : `http_${error.status}`
}

const resultFields = (result: ResponseResult): Fields => ({
  responseId: result.id,
  servedModel: result.servedBy?.model,
  provider: result.servedBy?.provider,
  attempts: result.servedBy?.attempt,
  isByok: result.servedBy?.isByok,
  inputTokens: result.usage?.input_tokens,
  outputTokens: result.usage?.output_tokens,
  cost: result.usage?.cost,
  finish: result.status,
  errorType: result.error?.errorType,
})

/** Reports the request to the telemetry: its start at once, its end once it has ended. */
export const createAccessLog = (telemetry: Telemetry, request: RequestStarted): AccessLog => {
  const startedAt = performance.now()
  telemetry.requestStarted?.(request)
  const emit = telemetry.requestEnded ?? (() => {})
  const fields: Fields = { requestId: request.requestId, method: request.method, path: request.path }
  let isLogged = false
  let isStreaming = false
  // Set only for a workspace that broadcasts content: what the request sent, to go with what it answered.
  let broadcastInput: unknown
  const write = (status: number, more: Fields, result?: ResponseResult) => {
    if (isLogged) return
    isLogged = true
    if (broadcastInput !== undefined) more.content = { input: broadcastInput, output: result?.output ?? [] }
    // Object.assign rather than a literal that starts with a spread: on Node 20 that takes V8's slow path (about
    // 4 µs per line). Same keys, same order; the route last, out of the log line.
    const event = Object.assign({}, fields, { status }, more, { latencyMs: Math.round(performance.now() - startedAt) }, { route: request.route, isModelRequest: request.isModelRequest, started: request })
    emit(event as unknown as RequestEnded)
  }
  return {
    identify(caller) {
      fields.keyHash = caller.key.hash.slice(0, KEY_HASH_PREFIX_LENGTH)
      fields.workspaceId = caller.key.workspaceId
    },
    requested(model, input) {
      fields.model = model
      broadcastInput = input
    },
    whole: (answer) => write(200, resultFields(answer.result), answer.result),
    observer() {
      isStreaming = true
      let firstTokenMs: number | undefined
      return {
        onEvent(event) {
          if (firstTokenMs === undefined && event.type.startsWith('response.')) firstTokenMs = Math.round(performance.now() - startedAt)
        },
        onEnd(end) {
          const timing = { timeToFirstTokenMs: firstTokenMs }
          if (end.how === 'finished') write(200, Object.assign(resultFields(end.result), timing), end.result)
          else if (end.how === 'stopped') write(200, { finish: 'client_closed', ...timing })
          else write(200, { finish: 'broken', errorType: 'internal_error', ...timing })
        },
      }
    },
    failed(error) {
      // A guardrail's refusal names the guardrail, so an operator can find which rule refused whom.
      const guardrailId = isGatewayError(error) ? error.metadata?.guardrail_id : undefined
      write(isGatewayError(error) ? error.status : 500, { finish: 'failed', errorType: errorTypeOf(error), ...(typeof guardrailId === 'string' ? { guardrailId } : {}) })
    },
    responded(status) {
      if (isStreaming && status === 200) return
      write(status, status === 499 ? { finish: 'client_closed' } : {})
    },
  }
}

/** The access log: one info line per model request, from its `requestEnded` event. */
export const accessLogObserver = (logger: Logger): TelemetryObserver => ({
  requestEnded(event) {
    if (!event.isModelRequest) return
    // Never what was said: content goes only to observers of a workspace that broadcasts it.
    const { route: _route, isModelRequest: _isModelRequest, started: _started, content: _content, ...line } = event
    logger.info('access', line)
  },
})
