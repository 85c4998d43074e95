/**
 * Gemini error bodies → canonical failures. Google answers with `{error: {code, message, status,
 * details}}` (a `google.rpc.Status`), sometimes wrapped in a one-element array; the `status` name
 * says more than the HTTP code (an invalid API key is a 400 INVALID_ARGUMENT, not a 401).
 */

import { classifyUpstreamError, redactSecrets, UpstreamFailure, type ErrorType } from '../shared/errors'
import type { GeminiErrorObject } from './wire'

const INVALID_KEY = /API key (not valid|expired|is invalid)|API_KEY_INVALID/i
const TOKEN_LIMIT = /input token count|exceeds the maximum number of tokens|too many tokens|context (window|length)/i
const OVERLOADED = /overloaded|high demand|capacity/i
const LOCATION = /location is not supported/i
const RETRY_DELAY = /^(\d+(?:\.\d+)?)s$/
const MAX_MESSAGE = 500

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

const classify = (upstreamStatus: number, error: GeminiErrorObject, message: string): ErrorType => {
  const status = error.status
  const reasons = error.details?.map((detail) => detail.reason).join(' ') ?? ''
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
const retryAfter = (error: GeminiErrorObject): number | undefined => {
  for (const detail of error.details ?? []) {
    const match = typeof detail.retryDelay === 'string' ? RETRY_DELAY.exec(detail.retryDelay) : null
    if (match) return Math.ceil(Number(match[1]))
  }
  return undefined
}

/** A failure from a parsed Google error object (an error body or an in-stream `error` chunk). */
export const geminiFailure = (upstreamStatus: number, error: GeminiErrorObject): UpstreamFailure => {
  const raw = typeof error.message === 'string' && error.message.trim() !== '' ? error.message : `Gemini returned HTTP ${upstreamStatus}`
  const message = redactSecrets(raw.slice(0, MAX_MESSAGE))
  const retryAfterSeconds = retryAfter(error)
  return new UpstreamFailure(classify(upstreamStatus, error, raw), message, {
    upstreamStatus,
    ...(error.status ? { providerCode: error.status } : {}),
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  })
}

const readErrorObject = (bodyText: string): GeminiErrorObject | undefined => {
  let parsed: unknown
  try {
    parsed = JSON.parse(bodyText)
  } catch {
    return undefined
  }
  const root = Array.isArray(parsed) ? parsed[0] : parsed
  const error = (root as { error?: unknown } | null)?.error
  if (typeof error === 'object' && error !== null) return error as GeminiErrorObject
  if (typeof error === 'string') return { message: error }
  return undefined
}

/** `toError`: survives empty, HTML and truncated bodies; never echoes a key. */
export const toGeminiError = (status: number, bodyText: string): UpstreamFailure => {
  const error = readErrorObject(bodyText)
  if (error) return geminiFailure(status, error)
  // Not Google's JSON (a proxy's HTML page, an empty body): the status decides, the text is a hint.
  const text = bodyText.trim()
  const isHtml = text.startsWith('<')
  const message = text === '' || isHtml ? `Gemini returned HTTP ${status}` : text
  return geminiFailure(status, { message, code: status })
}
