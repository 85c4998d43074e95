/**
 * Upstream failures classified once into the spec's canonical `error_type` values (the failure itself is
 * src/core/upstream-failure.ts). Adapters build them through the shared reader (./error-reader.ts); the engine
 * decides what the client sees (status, fallback, masking).
 */

import type { ErrorType } from '../../core/upstream-failure'

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
