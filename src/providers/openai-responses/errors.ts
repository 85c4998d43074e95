/**
 * OpenAI's error profile. Two sources: HTTP error bodies (`{error:{message, type, param, code}}`,
 * pretty-printed) and in-band failures of a 200 answer (a stream's `error` / `response.failed`
 * event, or a Response object with `status: "failed"`).
 */

import type { UpstreamErrorContext } from '../contract'
import { readInBandError, readUpstreamError, type ErrorProfile } from '../shared/error-reader'
import { classifyUpstreamError } from '../shared/errors'
import { type ErrorType, type UpstreamFailure } from '../../core/upstream-failure'
import { retryAfterInMessage } from '../shared/retry-after'
import type { OpenAIError } from './wire'

/** The error object as HTTP bodies and in-band events carry it; some proxies add a `status` name. */
type OpenAIErrorObject = { code?: unknown; message?: unknown; type?: unknown; status?: unknown }

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

// The status an in-band failure came with: the HTTP answer itself succeeded.
const IN_BAND_STATUS = 200

const codeOf = (error: OpenAIErrorObject | undefined): string | undefined => {
  const code = error?.code
  if ((typeof code === 'string' && code !== '') || typeof code === 'number') return String(code)
  return typeof error?.status === 'string' ? error.status : undefined
}

const typeOf = (error: OpenAIErrorObject | undefined): string | undefined => (typeof error?.type === 'string' ? error.type : undefined)

/**
 * On HTTP 5xx the status decides (503 overloaded, 504 timeout, else unavailable), whatever the body
 * says; below that OpenAI's `code` is more precise than the status (429 `insufficient_quota`, 400
 * `context_length_exceeded`). An in-band failure with an unknown code is classified like a 400 when
 * it is an `invalid_request_error`, else it is OpenAI's own failure (`server`).
 */
const classify = (status: number, error: OpenAIErrorObject | undefined, message: string): ErrorType => {
  const code = codeOf(error)
  const type = typeOf(error)
  if (status === IN_BAND_STATUS) {
    const known = (code && CODE_TO_ERROR_TYPE.get(code)) || (type ? CODE_TO_ERROR_TYPE.get(type) : undefined)
    return known ?? (type === 'invalid_request_error' ? classifyUpstreamError(400, message, code) : 'server')
  }
  const known = status < 500 && code ? CODE_TO_ERROR_TYPE.get(code) : undefined
  return known ?? classifyUpstreamError(status, message, code ?? type)
}

const openAIErrors: ErrorProfile<OpenAIErrorObject> = {
  find: (body) => {
    const root = Array.isArray(body) ? body[0] : body
    const error = (root as { error?: unknown } | null | undefined)?.error ?? root
    if (typeof error === 'string') return { message: error }
    return typeof error === 'object' && error !== null ? (error as OpenAIErrorObject) : {}
  },
  fields: (error) => ({ message: typeof error.message === 'string' ? error.message : undefined, code: codeOf(error) }),
  classify,
  inBandStatus: () => IN_BAND_STATUS,
  retryAfterSeconds: (_error, message) => retryAfterInMessage(message),
  fallbackMessage: () => 'Upstream error',
}

/** `toError` for the OpenAI Responses adapter. */
export const toOpenAIError = (status: number, bodyText: string, context?: UpstreamErrorContext): UpstreamFailure =>
  readUpstreamError(openAIErrors, status, bodyText, context)

/** An in-band failure of a 200 answer. */
export const toInBandFailure = (error: OpenAIError | null | undefined, fallbackMessage: string): UpstreamFailure =>
  readInBandError(openAIErrors, error, fallbackMessage)
