/**
 * Anthropic's error profile. Anthropic names every error with `error.type`
 * (`{type: 'error', error: {type, message}, request_id}`), both in HTTP bodies and in the stream's
 * `error` event, so the type decides where it is unambiguous and the shared classifier (status
 * plus message) decides the rest.
 * Reference: https://platform.claude.com/docs/en/api/errors
 */

import type { UpstreamErrorContext } from '../contract'
import { readInBandError, readUpstreamError, type ErrorProfile } from '../shared/error-reader'
import { classifyUpstreamError } from '../shared/errors'
import { type ErrorType, type UpstreamFailure } from '../../core/upstream-failure'
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

const typeOf = (error: WireError | undefined): string | undefined => (typeof error?.type === 'string' ? error.type : undefined)

const anthropicErrors: ErrorProfile<WireError> = {
  find: (body) => {
    if (isRecord(body) && isRecord(body.error)) return body.error as WireError
    return isRecord(body) && typeof body.message === 'string' ? { message: body.message } : undefined
  },
  fields: (error) => ({ message: typeof error.message === 'string' ? error.message : undefined, code: typeOf(error) }),
  classify: (status, error, message) => {
    if (status === 400 && CREDIT.test(message)) return 'payment_required'
    const type = typeOf(error)
    // A 413 is Cloudflare's or the API's byte limit; a 400 "prompt is too long" is the context window.
    return (type && TYPE_TO_ERROR[type]) || classifyUpstreamError(status, message, type)
  },
  inBandStatus: (error) => {
    const type = typeOf(error)
    return (type && TYPE_TO_STATUS[type]) || 500
  },
  fallbackMessage: (status, isEmptyBody) => `Anthropic returned HTTP ${status}${isEmptyBody ? ' with an empty body' : ''}`,
}

/** `toError` for the Anthropic adapter. */
export const toAnthropicError = (status: number, bodyText: string, context?: UpstreamErrorContext): UpstreamFailure =>
  readUpstreamError(anthropicErrors, status, bodyText, context)

/** An in-band error (a stream's `event: error`, a 200 body of type `error`): its type implies the status. */
export const toInBandFailure = (error: WireError | undefined): UpstreamFailure =>
  readInBandError(anthropicErrors, error, 'Anthropic stream reported an error')
