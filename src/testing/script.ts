/**
 * What a scripted model answers, as the test author writes it, and its translation into the steps the
 * kit's transport sends (./wire.ts) with the waits between them.
 */

import { STATUS_FOR_ERROR_TYPE, type ErrorType } from '../core/upstream-failure'
import { inputTokensDetails } from '../providers/types'
import type { WireStep } from './wire'

/** A whole text, or the chunks (deltas) it arrives in. */
export type Chunks = string | readonly string[]

/** The canonical upstream error types (`error_type` in error bodies), such as `rate_limit_exceeded`. */
export type UpstreamErrorType = ErrorType

/** A pause: `ms` runs on the timers (vitest fake timers drive it), `until` waits for a promise or a `gate()`. */
export type ScriptedWait = { type: 'wait'; ms: number } | { type: 'wait'; until: PromiseLike<unknown> }

/** One step of a scripted answer. Consecutive text steps make one message; each reasoning step one reasoning item. */
export type ScriptedStep =
  | { type: 'text'; text: Chunks }
  | { type: 'refusal'; refusal: Chunks }
  /** A reasoning item: its summary, then its full text, each whole or in chunks. */
  | { type: 'reasoning'; summary?: Chunks; text?: Chunks }
  /** A function (tool) call; `arguments` is JSON text, whole or in chunks. `callId` defaults to a fresh `call_…`. */
  | { type: 'function_call'; name: string; arguments?: Chunks; callId?: string }
  /** More argument text for the function call just before: lets waits fall between argument chunks. */
  | { type: 'function_call_arguments'; arguments: Chunks }
  /** Token counts the gateway bills (zero when the answer has no usage step). */
  | { type: 'usage'; inputTokens?: number; outputTokens?: number; reasoningTokens?: number; cachedTokens?: number; cacheWriteTokens?: number }
  /** How the answer ends (`completed` when the answer has no finish step); usage may still follow it. */
  | { type: 'finish'; status: 'completed' }
  | { type: 'finish'; status: 'incomplete'; reason: 'max_output_tokens' | 'content_filter' | (string & {}) }
  /** A failure inside a successful answer (in-band), after whatever came before it. */
  | { type: 'error'; message: string; errorType?: UpstreamErrorType }
  /**
   * An HTTP failure before any content (only waits may come before it, nothing after). The gateway classifies
   * `status` as it would a real provider's unless `errorType` says; `retryAfter` (seconds or an HTTP date) is sent
   * as the `Retry-After` header.
   */
  | { type: 'http_error'; status: number; message?: string; errorType?: UpstreamErrorType; retryAfter?: number | string }
  | ScriptedWait

/** A whole answer: a text (shorthand for one text step), or its steps. */
export type ScriptedAnswer = string | readonly ScriptedStep[]

/** An HTTP failure, ready for the transport. */
export interface PlannedFailure {
  status: number
  message: string
  errorType?: UpstreamErrorType
  retryAfter?: string
}

/** An answer as the transport plays it: waits before the headers, then an HTTP failure or a body. */
export interface AnswerPlan {
  leading: ScriptedWait[]
  failure?: PlannedFailure
  body: Array<WireStep | ScriptedWait>
}

const chunksOf = (chunks: Chunks | undefined): readonly string[] => (chunks === undefined ? [] : typeof chunks === 'string' ? [chunks] : chunks)

const count = (value: number | undefined, name: string) => {
  if (value === undefined) return 0
  if (!Number.isInteger(value) || value < 0) throw new TypeError(`modelgate/testing: usage.${name} must be a whole number of tokens, got ${value}`)
  return value
}

const usageOf = (step: Extract<ScriptedStep, { type: 'usage' }>): WireStep => {
  const input = count(step.inputTokens, 'inputTokens')
  const output = count(step.outputTokens, 'outputTokens')
  return {
    type: 'usage',
    usage: {
      input_tokens: input,
      input_tokens_details: inputTokensDetails(count(step.cachedTokens, 'cachedTokens'), count(step.cacheWriteTokens, 'cacheWriteTokens')),
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: count(step.reasoningTokens, 'reasoningTokens') },
      total_tokens: input + output,
    },
  }
}

const checkErrorType = (errorType: string | undefined) => {
  if (errorType !== undefined && !Object.hasOwn(STATUS_FOR_ERROR_TYPE, errorType)) {
    throw new TypeError(`modelgate/testing: errorType "${errorType}" is not one of ${Object.keys(STATUS_FOR_ERROR_TYPE).join(', ')}`)
  }
}

const failureOf = (step: Extract<ScriptedStep, { type: 'http_error' }>): PlannedFailure => {
  if (!Number.isInteger(step.status) || step.status < 400 || step.status > 599) {
    throw new TypeError(`modelgate/testing: http_error status must be 400 to 599, got ${step.status}`)
  }
  checkErrorType(step.errorType)
  return {
    status: step.status,
    message: step.message ?? `Scripted failure ${step.status}`,
    ...(step.errorType ? { errorType: step.errorType } : {}),
    ...(step.retryAfter === undefined ? {} : { retryAfter: String(step.retryAfter) }),
  }
}

/** Checks an answer and lays it out for the transport; a mistake in the script throws a `TypeError` naming it. */
export const planAnswer = (answer: ScriptedAnswer): AnswerPlan => {
  const steps: readonly ScriptedStep[] = typeof answer === 'string' ? [{ type: 'text', text: answer }] : answer
  if (!Array.isArray(steps)) throw new TypeError('modelgate/testing: an answer is a string or an array of steps')
  const plan: AnswerPlan = { leading: [], body: [] }
  let functionCalls = 0
  let hasContent = false
  let endedBy: string | undefined
  for (const [index, step] of steps.entries()) {
    if (step.type === 'wait') {
      if (step.ms === undefined ? typeof step.until?.then !== 'function' : !(step.ms >= 0)) {
        throw new TypeError(`modelgate/testing: step ${index} (wait) needs ms >= 0 or a promise in until`)
      }
      ;(hasContent ? plan.body : plan.leading).push(step)
      continue
    }
    if (endedBy) throw new TypeError(`modelgate/testing: step ${index} (${step.type}) comes after the answer ended with ${endedBy}`)
    if (step.type === 'http_error') {
      if (hasContent) throw new TypeError(`modelgate/testing: step ${index} (http_error) must come before any content; use an error step for a failure mid-answer`)
      plan.failure = failureOf(step)
      endedBy = 'http_error'
      continue
    }
    hasContent = true
    switch (step.type) {
      case 'text':
        for (const delta of chunksOf(step.text)) plan.body.push({ type: 'text', delta })
        break
      case 'refusal':
        for (const delta of chunksOf(step.refusal)) plan.body.push({ type: 'refusal', delta })
        break
      case 'reasoning':
        for (const delta of chunksOf(step.summary)) plan.body.push({ type: 'reasoning_summary', delta })
        for (const delta of chunksOf(step.text)) plan.body.push({ type: 'reasoning_text', delta })
        plan.body.push({ type: 'reasoning_end' })
        break
      case 'function_call': {
        if (!step.name) throw new TypeError(`modelgate/testing: step ${index} (function_call) needs a name`)
        const key = functionCalls++
        plan.body.push({ type: 'function_call', key, name: step.name, ...(step.callId ? { callId: step.callId } : {}) })
        for (const delta of chunksOf(step.arguments)) plan.body.push({ type: 'function_call_arguments', key, delta })
        break
      }
      case 'function_call_arguments':
        if (functionCalls === 0) throw new TypeError(`modelgate/testing: step ${index} (function_call_arguments) needs a function_call before it`)
        for (const delta of chunksOf(step.arguments)) plan.body.push({ type: 'function_call_arguments', key: functionCalls - 1, delta })
        break
      case 'usage':
        plan.body.push(usageOf(step))
        break
      case 'finish':
        plan.body.push(step.status === 'incomplete' ? { type: 'finish', status: 'incomplete', reason: step.reason } : { type: 'finish', status: 'completed' })
        break
      case 'error':
        checkErrorType(step.errorType)
        plan.body.push({ type: 'error', errorType: step.errorType ?? 'server', message: step.message })
        endedBy = 'error'
        break
      default:
        throw new TypeError(`modelgate/testing: step ${index} has an unknown type "${(step as { type?: unknown }).type}"`)
    }
  }
  return plan
}
