/** The Responses skin's `error.code` for a canonical `error_type`. */

// Prompt problems the caller can fix; other failures are the provider's or ours.
const PROMPT_ERROR_TYPES = new Set([
  'context_length_exceeded',
  'max_tokens_exceeded',
  'token_limit_exceeded',
  'string_too_long',
  'invalid_request',
  'invalid_prompt',
  'content_policy_violation',
  'refusal',
])
const IMAGE_ERROR_TYPES = new Set(['invalid_image', 'image_too_large', 'image_too_small', 'unsupported_image_format', 'image_download_failed', 'image_not_found'])

/**
 * docs/decisions.md, Errors and routing: on the Responses skin `error.code` is one of the four codes clients know; the precise type travels
 * in `error_type` beside it.
 */
export const responsesErrorCode = (errorType: unknown): string => {
  if (errorType === 'rate_limit_exceeded') return 'rate_limit_exceeded'
  if (typeof errorType === 'string' && PROMPT_ERROR_TYPES.has(errorType)) return 'invalid_prompt'
  if (typeof errorType === 'string' && IMAGE_ERROR_TYPES.has(errorType)) return 'image_content_policy_violation'
  return 'server_error'
}
