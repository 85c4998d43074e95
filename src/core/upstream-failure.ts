/**
 * A failed upstream call, in the spec's canonical `error_type` values: what adapters raise
 * (src/providers/shared/errors.ts classifies an upstream's answer), what the engine falls back on and answers with.
 * In the kernel so the providers below the engine and the engine above them share one type.
 */

import { GatewayError } from './errors'

/** spec Response result `error_type`. */
export type ErrorType =
  | 'context_length_exceeded'
  | 'max_tokens_exceeded'
  | 'token_limit_exceeded'
  | 'string_too_long'
  | 'authentication'
  | 'permission_denied'
  | 'payment_required'
  | 'rate_limit_exceeded'
  | 'provider_overloaded'
  | 'provider_unavailable'
  | 'invalid_request'
  | 'invalid_prompt'
  | 'not_found'
  | 'precondition_failed'
  | 'payload_too_large'
  | 'unprocessable'
  | 'content_policy_violation'
  | 'refusal'
  | 'invalid_image'
  | 'image_too_large'
  | 'image_too_small'
  | 'unsupported_image_format'
  | 'image_not_found'
  | 'image_download_failed'
  | 'server'
  | 'timeout'
  | 'unmapped'

/** The client status each canonical type answers with (docs/decisions.md, Errors and routing, with the spec's 524 and 529). */
export const STATUS_FOR_ERROR_TYPE: Record<ErrorType, number> = {
  context_length_exceeded: 400,
  max_tokens_exceeded: 400,
  token_limit_exceeded: 400,
  string_too_long: 400,
  invalid_request: 400,
  invalid_prompt: 400,
  content_policy_violation: 400,
  refusal: 400,
  invalid_image: 400,
  image_too_large: 400,
  image_too_small: 400,
  unsupported_image_format: 400,
  image_download_failed: 400,
  authentication: 401,
  payment_required: 402,
  permission_denied: 403,
  not_found: 404,
  image_not_found: 404,
  precondition_failed: 412,
  payload_too_large: 413,
  unprocessable: 422,
  rate_limit_exceeded: 429,
  provider_unavailable: 502,
  server: 502,
  unmapped: 502,
  timeout: 524,
  provider_overloaded: 529,
}

/** A failed upstream call. `status` is what the client would see; `upstreamStatus` what the provider said. */
export class UpstreamFailure extends GatewayError {
  readonly errorType: ErrorType
  readonly upstreamStatus: number
  readonly providerCode: string | undefined
  readonly retryAfterSeconds: number | undefined

  constructor(
    errorType: ErrorType,
    message: string,
    details: { upstreamStatus: number; providerCode?: string; retryAfterSeconds?: number; cause?: unknown },
  ) {
    super(STATUS_FOR_ERROR_TYPE[errorType], message, {
      metadata: { error_type: errorType, ...(details.providerCode ? { provider_code: details.providerCode } : {}) },
      cause: details.cause,
    })
    this.errorType = errorType
    this.upstreamStatus = details.upstreamStatus
    this.providerCode = details.providerCode
    this.retryAfterSeconds = details.retryAfterSeconds
  }
}

export const isUpstreamFailure = (value: unknown): value is UpstreamFailure => value instanceof UpstreamFailure
