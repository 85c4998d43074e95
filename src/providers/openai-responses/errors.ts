/**
 * OpenAI failures → canonical `error_type`. Two sources: HTTP error bodies
 * (`{error:{message, type, param, code}}`, pretty-printed) and in-band failures of a 200 answer
 * (a stream's `error` / `response.failed` event, or a Response object with `status: "failed"`).
 */

import {
  classifyUpstreamError,
  readErrorBody,
  redactSecrets,
  UpstreamFailure,
  type ErrorType,
} from '../shared/errors'
import type { OpenAIError } from './wire'

/**
 * OpenAI `error.code` values with a precise canonical meaning. The in-band codes are the
 * `ResponseError.code` enum of the openai SDK; the HTTP ones appear on 4xx bodies.
 */
const CODE_TO_ERROR_TYPE = new Map<string, ErrorType>([
  ['context_length_exceeded', 'context_length_exceeded'],
  ['string_above_max_length', 'string_too_long'],
  ['invalid_prompt', 'invalid_prompt'],
  ['bio_policy', 'content_policy_violation'],
  ['image_content_policy_violation', 'content_policy_violation'],
  ['rate_limit_exceeded', 'rate_limit_exceeded'],
  // A spent quota is not cured by retrying the same key: answer 402, not 429.
  ['insufficient_quota', 'payment_required'],
  ['invalid_api_key', 'authentication'],
  ['model_not_found', 'not_found'],
  ['data_residency_mismatch', 'permission_denied'],
  ['server_error', 'server'],
  ['vector_store_timeout', 'timeout'],
  ['invalid_image', 'invalid_image'],
  ['invalid_base64_image', 'invalid_image'],
  ['invalid_image_url', 'invalid_image'],
  ['image_parse_error', 'invalid_image'],
  ['invalid_image_mode', 'invalid_image'],
  ['empty_image_file', 'invalid_image'],
  ['invalid_image_format', 'unsupported_image_format'],
  ['unsupported_image_media_type', 'unsupported_image_format'],
  ['image_too_large', 'image_too_large'],
  ['image_file_too_large', 'image_too_large'],
  ['image_too_small', 'image_too_small'],
  ['failed_to_download_image', 'image_download_failed'],
  ['image_file_not_found', 'image_not_found'],
])

// "Please try again in 2.5s" / "in 20ms" / "in 1m30s" / "in 114h18m0s" (Go durations).
const TRY_AGAIN = /try again in ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)/i
const DURATION_PART = /(\d+(?:\.\d+)?)(ms|h|m|s)/g
const SECONDS_PER_UNIT: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 }

/** The wait OpenAI asks for in a rate-limit message, in whole seconds (rounded up). */
export const readRetryAfterSeconds = (message: string): number | undefined => {
  const duration = TRY_AGAIN.exec(message)?.[1]
  if (!duration) return undefined
  let seconds = 0
  for (const [, amount, unit] of duration.matchAll(DURATION_PART)) seconds += Number(amount) * SECONDS_PER_UNIT[unit!]!
  return Math.max(1, Math.ceil(seconds))
}

const failure = (errorType: ErrorType, message: string, upstreamStatus: number, code: string | undefined) => {
  const retryAfterSeconds = readRetryAfterSeconds(message)
  return new UpstreamFailure(errorType, redactSecrets(message), {
    upstreamStatus,
    ...(code ? { providerCode: code } : {}),
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  })
}

/**
 * `toError` for OpenAI. On 5xx the status decides (503 overloaded, 504 timeout, else
 * unavailable), whatever the body says; below that OpenAI's `code` is more precise than the
 * status (429 `insufficient_quota`, 400 `context_length_exceeded`), and the shared classifier
 * covers the rest, including empty and HTML bodies.
 */
export const toOpenAIError = (status: number, bodyText: string): UpstreamFailure => {
  const { message, code, type } = readErrorBody(bodyText)
  const known = status < 500 && code ? CODE_TO_ERROR_TYPE.get(code) : undefined
  return failure(known ?? classifyUpstreamError(status, message, code ?? type), message, status, code)
}

/**
 * An in-band failure of a 200 answer. Unknown codes: an `invalid_request_error` is classified
 * like a 400, anything else is OpenAI's own failure (`server`).
 */
export const toInBandFailure = (error: OpenAIError | null | undefined, fallbackMessage: string): UpstreamFailure => {
  const message = typeof error?.message === 'string' && error.message !== '' ? error.message : fallbackMessage
  const code = typeof error?.code === 'string' && error.code !== '' ? error.code : undefined
  const known = (code && CODE_TO_ERROR_TYPE.get(code)) || (error?.type ? CODE_TO_ERROR_TYPE.get(error.type) : undefined)
  const errorType = known ?? (error?.type === 'invalid_request_error' ? classifyUpstreamError(400, message, code) : 'server')
  return failure(errorType, message, 200, code)
}
