/**
 * Gemini's error profile. Google answers with `{error: {code, message, status, details}}` (a
 * `google.rpc.Status`), sometimes wrapped in a one-element array; the `status` name says more than
 * the HTTP code (an invalid API key is a 400 INVALID_ARGUMENT, not a 401).
 */

import type { UpstreamErrorContext } from '../contract'
import { readInBandError, readUpstreamError, type ErrorProfile } from '../shared/error-reader'
import { classifyUpstreamError } from '../shared/errors'
import { type ErrorType, type UpstreamFailure } from '../../core/upstream-failure'
import type { GeminiErrorObject } from './wire'

const INVALID_KEY = /API key (not valid|expired|is invalid)|API_KEY_INVALID/i
const TOKEN_LIMIT = /input token count|exceeds the maximum number of tokens|too many tokens|context (window|length)/i
const OVERLOADED = /overloaded|high demand|capacity/i
const LOCATION = /location is not supported/i
const RETRY_DELAY = /^(\d+(?:\.\d+)?)s$/

const STATUS_TYPES: Partial<Record<string, ErrorType>> = {
  UNAUTHENTICATED: 'authentication',
  PERMISSION_DENIED: 'permission_denied',
  NOT_FOUND: 'not_found',
  RESOURCE_EXHAUSTED: 'rate_limit_exceeded',
  DEADLINE_EXCEEDED: 'timeout',
  INTERNAL: 'provider_unavailable',
  CANCELLED: 'provider_unavailable',
  UNKNOWN: 'provider_unavailable',
  DATA_LOSS: 'provider_unavailable',
  UNIMPLEMENTED: 'invalid_request',
  OUT_OF_RANGE: 'invalid_request',
}

const classify = (upstreamStatus: number, error: GeminiErrorObject | undefined, message: string): ErrorType => {
  const status = error?.status
  const reasons = error?.details?.map((detail) => detail.reason).join(' ') ?? ''
  if (INVALID_KEY.test(message) || INVALID_KEY.test(reasons)) return 'authentication'
  if (status === 'INVALID_ARGUMENT' || (status === undefined && upstreamStatus === 400)) {
    if (TOKEN_LIMIT.test(message)) return 'context_length_exceeded'
    return classifyUpstreamError(400, message, status)
  }
  if (status === 'UNAVAILABLE') return OVERLOADED.test(message) ? 'provider_overloaded' : 'provider_unavailable'
  if (status === 'FAILED_PRECONDITION') return LOCATION.test(message) ? 'permission_denied' : 'precondition_failed'
  const mapped = status ? STATUS_TYPES[status] : undefined
  if (mapped) return mapped
  return classifyUpstreamError(upstreamStatus, message, status)
}

/** `RetryInfo.retryDelay` (`"34s"`, `"34.4s"`) in whole seconds, rounded up. */
const retryAfterSeconds = (error: GeminiErrorObject | undefined): number | undefined => {
  for (const detail of error?.details ?? []) {
    const match = typeof detail.retryDelay === 'string' ? RETRY_DELAY.exec(detail.retryDelay) : null
    if (match) return Math.ceil(Number(match[1]))
  }
  return undefined
}

const geminiErrors: ErrorProfile<GeminiErrorObject> = {
  find: (body) => {
    const root = Array.isArray(body) ? body[0] : body
    const error = (root as { error?: unknown } | null | undefined)?.error
    if (typeof error === 'object' && error !== null) return error as GeminiErrorObject
    return typeof error === 'string' ? { message: error } : undefined
  },
  fields: (error) => ({ message: typeof error.message === 'string' ? error.message : undefined, code: error.status || undefined }),
  classify,
  // An in-band error keeps the code it would have had as an HTTP answer.
  inBandStatus: (error) => (typeof error?.code === 'number' ? error.code : 500),
  retryAfterSeconds,
  fallbackMessage: (status) => `Gemini returned HTTP ${status}`,
}

/** `toError` for the Gemini adapter. */
export const toGeminiError = (status: number, bodyText: string, context?: UpstreamErrorContext): UpstreamFailure =>
  readUpstreamError(geminiErrors, status, bodyText, context)

/** An in-band error (an `error` in a 200 body or stream chunk, e.g. 503 UNAVAILABLE after some text). */
export const toInBandFailure = (error: GeminiErrorObject): UpstreamFailure => readInBandError(geminiErrors, error, 'Gemini reported an error')
