/**
 * Anthropic errors → `UpstreamFailure`. Anthropic names every error with `error.type`
 * (`{type: 'error', error: {type, message}, request_id}`), both in HTTP bodies and in the stream's
 * `error` event, so the type decides where it is unambiguous and the shared classifier (status
 * plus message) decides the rest.
 * Reference: https://platform.claude.com/docs/en/api/errors
 */

import { classifyUpstreamError, redactSecrets, UpstreamFailure, type ErrorType } from '../shared/errors'
import { isRecord, type WireError } from './wire'

/** Anthropic `error.type` → canonical type, for the types that say it all. */
const TYPE_TO_ERROR: Readonly<Record<string, ErrorType>> = {
  authentication_error: 'authentication',
  billing_error: 'payment_required',
  permission_error: 'permission_denied',
  not_found_error: 'not_found',
  request_too_large: 'payload_too_large',
  rate_limit_error: 'rate_limit_exceeded',
  api_error: 'provider_unavailable',
  timeout_error: 'timeout',
  overloaded_error: 'provider_overloaded',
}

/** The HTTP status each Anthropic type travels with (for in-band stream errors, which have none). */
const TYPE_TO_STATUS: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
}

// Anthropic answers an exhausted credit balance or a spend limit with a 400 invalid_request_error.
const CREDIT = /credit balance is too low|reached your specified api usage limits|spend limit/i

const MAX_MESSAGE = 500

const classify = (status: number, type: string | undefined, message: string): ErrorType => {
  if (status === 400 && CREDIT.test(message)) return 'payment_required'
  // A 413 is Cloudflare's or the API's byte limit; a 400 "prompt is too long" is the context window.
  return (type && TYPE_TO_ERROR[type]) || classifyUpstreamError(status, message, type)
}

/** Builds the failure for an Anthropic error object seen with `status` (HTTP, or implied by its type). */
export const toAnthropicFailure = (status: number, error: WireError | undefined, fallbackMessage: string): UpstreamFailure => {
  const type = typeof error?.type === 'string' ? error.type : undefined
  const rawMessage = typeof error?.message === 'string' && error.message !== '' ? error.message : fallbackMessage
  const message = redactSecrets(rawMessage.slice(0, MAX_MESSAGE))
  return new UpstreamFailure(classify(status, type, message), message, { upstreamStatus: status, ...(type ? { providerCode: type } : {}) })
}

/** An in-band error (a stream's `event: error`, sent after a 200): its type implies the status. */
export const toInBandFailure = (error: WireError | undefined): UpstreamFailure => {
  const type = typeof error?.type === 'string' ? error.type : undefined
  return toAnthropicFailure((type && TYPE_TO_STATUS[type]) || 500, error, 'Anthropic stream reported an error')
}

/** `toError`: survives empty, non-JSON and HTML bodies; never copies credentials. */
export const toAnthropicError = (status: number, bodyText: string): UpstreamFailure => {
  const text = bodyText.trim()
  let parsed: unknown
  if (text.startsWith('{')) {
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = undefined
    }
  }
  if (isRecord(parsed) && isRecord(parsed.error)) return toAnthropicFailure(status, parsed.error as WireError, `Anthropic returned HTTP ${status}`)
  if (isRecord(parsed) && typeof parsed.message === 'string') return toAnthropicFailure(status, { message: parsed.message }, `Anthropic returned HTTP ${status}`)
  // Empty bodies and proxy pages (HTML from a load balancer or Cloudflare) carry nothing worth quoting.
  const isQuotable = text !== '' && !text.startsWith('<')
  return toAnthropicFailure(status, { message: isQuotable ? text : '' }, `Anthropic returned HTTP ${status}${text === '' ? ' with an empty body' : ''}`)
}
