/**
 * Upstream failures, classified once into the spec's canonical `error_type` values. Adapters build
 * them through the shared reader (./error-reader.ts); core decides what the client sees (status,
 * fallback, masking).
 */

import { GatewayError } from '../../core/errors'

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

const CONTEXT_LENGTH = /context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long|input is too long|exceeds the (maximum|max) (number of )?tokens|reduce the length/i
const CONTENT_POLICY = /content[ _-]?(policy|filter|management)|safety|flagged|moderation|blocked/i
const IMAGE = /image/i

/**
 * Picks the canonical type from the upstream status and its message. Providers phrase the same
 * failure differently; the patterns cover the common phrasings, the status decides the rest.
 */
export const classifyUpstreamError = (upstreamStatus: number, message: string, code?: string): ErrorType => {
  const text = `${code ?? ''} ${message}`
  if (upstreamStatus === 401) return 'authentication'
  if (upstreamStatus === 402) return 'payment_required'
  if (upstreamStatus === 403) return CONTENT_POLICY.test(text) ? 'content_policy_violation' : 'permission_denied'
  if (upstreamStatus === 404) return 'not_found'
  if (upstreamStatus === 408) return 'timeout'
  if (upstreamStatus === 412) return 'precondition_failed'
  if (upstreamStatus === 413) return CONTEXT_LENGTH.test(text) ? 'context_length_exceeded' : 'payload_too_large'
  if (upstreamStatus === 422) return 'unprocessable'
  if (upstreamStatus === 429) return 'rate_limit_exceeded'
  if (upstreamStatus === 503 || upstreamStatus === 529) return 'provider_overloaded'
  if (upstreamStatus === 504 || upstreamStatus === 524) return 'timeout'
  if (upstreamStatus >= 500) return 'provider_unavailable'
  if (upstreamStatus === 400) {
    if (CONTEXT_LENGTH.test(text)) return 'context_length_exceeded'
    if (CONTENT_POLICY.test(text)) return 'content_policy_violation'
    if (IMAGE.test(text)) return 'invalid_image'
    return 'invalid_request'
  }
  return 'unmapped'
}

// Provider messages sometimes quote the key they were given ("Incorrect API key provided: sk-ab***yz").
const KEY_LIKE = /\b(sk|pk|rk|gsk|xai|key|AIza)[-_A-Za-z0-9*]{8,}/g

/** Removes anything key-like, and the given secrets verbatim, from upstream text. */
export const redactSecrets = (text: string, secrets: readonly string[] = []): string => {
  let redacted = text
  for (const secret of secrets) if (secret.length >= 8) redacted = redacted.split(secret).join('[redacted]')
  return redacted.replace(KEY_LIKE, '[redacted]')
}
