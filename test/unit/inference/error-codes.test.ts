import { describe, expect, it } from 'vitest'
import { responsesErrorCode } from '../../../src/formats/responses/error-code'

describe('error.code of an in-band response.failed (docs/decisions.md, Errors and routing)', () => {
  it.each([
    ['rate_limit_exceeded', 'rate_limit_exceeded'],
    ['context_length_exceeded', 'invalid_prompt'],
    ['invalid_request', 'invalid_prompt'],
    ['content_policy_violation', 'invalid_prompt'],
    ['image_too_large', 'image_content_policy_violation'],
    ['timeout', 'server_error'],
    ['provider_overloaded', 'server_error'],
    ['authentication', 'server_error'],
    [undefined, 'server_error'],
  ])('%s → %s', (errorType, code) => {
    expect(responsesErrorCode(errorType)).toBe(code)
  })
})
