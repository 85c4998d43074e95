/**
 * Chat Completions error bodies → `UpstreamFailure`. The family agrees on `{error: {message,
 * type, code}}` (OpenAI, Groq, DeepSeek, Together, Azure with `code` as a string such as "429" or
 * "DeploymentNotFound") but not quite: vLLM and Mistral put the fields at the top level, Mistral's
 * `message` can be a validation object, Ollama sends `{error: "text"}`, proxies send HTML.
 */

import { classifyUpstreamError, redactSecrets, UpstreamFailure, type ErrorType } from '../shared/errors'
import type { ChatErrorWire } from './wire'

// "Please try again in 210ms." (OpenAI), "in 5.63s" (Groq), "Please retry after 6 seconds." (Azure).
const RETRY_AFTER = /(?:try again in|retry after)\s+(\d+(?:\.\d+)?)\s*(ms|s\b|seconds?)/i
const MESSAGE_LIMIT = 500

interface ErrorFields {
  message: string
  code: string | undefined
  type: string | undefined
  /** A numeric `code`/`status` some members put in the body (vLLM: `code: 400`). */
  status: number | undefined
  isContentFilter: boolean
}

const asString = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : undefined

/** Mistral (and FastAPI-based servers) answer 422 with a list of validation problems. */
const validationMessage = (value: unknown): string | undefined => {
  const detail = (value as { detail?: unknown } | null)?.detail ?? value
  if (typeof detail === 'string') return detail
  if (!Array.isArray(detail)) return undefined
  return detail
    .map((problem: { loc?: unknown; msg?: unknown }) => {
      const location = Array.isArray(problem?.loc) ? problem.loc.join('.') : undefined
      const text = typeof problem?.msg === 'string' ? problem.msg : 'invalid'
      return location ? `${location}: ${text}` : text
    })
    .join('; ')
}

export const readErrorFields = (error: ChatErrorWire | string | undefined, fallback: string): ErrorFields => {
  if (typeof error === 'string') return { message: error, code: undefined, type: undefined, status: undefined, isContentFilter: false }
  const record = (error ?? {}) as ChatErrorWire & { innererror?: { code?: unknown }; detail?: unknown }
  const message =
    (typeof record.message === 'string' ? record.message : validationMessage(record.message ?? record.detail)) || fallback
  const numeric = [record.code, record.status].find((value) => typeof value === 'number') as number | undefined
  const code = typeof record.code === 'string' ? record.code : undefined
  return {
    message,
    code,
    type: asString(record.type),
    status: numeric !== undefined && numeric >= 400 && numeric < 600 ? numeric : undefined,
    isContentFilter: code === 'content_filter' || record.innererror?.code === 'ResponsibleAIPolicyViolation',
  }
}

/** Provider codes that say more than the HTTP status (Groq answers a TPM limit with 413). */
const classify = (status: number, fields: ErrorFields): ErrorType => {
  if (fields.code === 'rate_limit_exceeded') return 'rate_limit_exceeded'
  if (fields.code === 'context_length_exceeded') return 'context_length_exceeded'
  if (fields.code === 'string_above_max_length') return 'string_too_long'
  if (fields.isContentFilter || fields.code === 'content_policy_violation') return 'content_policy_violation'
  if (fields.code === 'DeploymentNotFound' || fields.code === 'model_not_found') return 'not_found'
  // Groq: 498 is "flex tier capacity exceeded".
  if (status === 498) return 'provider_overloaded'
  return classifyUpstreamError(status, fields.message, fields.code ?? fields.type)
}

const retryAfter = (message: string): number | undefined => {
  const match = RETRY_AFTER.exec(message)
  if (!match) return undefined
  const amount = Number(match[1])
  return Math.max(1, Math.ceil(match[2]!.toLowerCase() === 'ms' ? amount / 1000 : amount))
}

const failure = (status: number, fields: ErrorFields, upstreamStatus: number): UpstreamFailure => {
  const message = redactSecrets(fields.message.trim().slice(0, MESSAGE_LIMIT))
  const seconds = retryAfter(fields.message)
  const providerCode = fields.code ?? fields.type
  return new UpstreamFailure(classify(status, fields), message, {
    upstreamStatus,
    ...(providerCode ? { providerCode } : {}),
    ...(seconds === undefined ? {} : { retryAfterSeconds: seconds }),
  })
}

/** `toError`: survives empty, HTML and non-JSON bodies; never echoes credentials. */
export const toChatError = (status: number, bodyText: string): UpstreamFailure => {
  const fallback = `Upstream error (HTTP ${status})`
  let parsed: unknown
  try {
    parsed = JSON.parse(bodyText)
  } catch {
    const text = bodyText.trim()
    // An HTML page (a proxy or load balancer) carries nothing worth showing.
    const message = text === '' || text.startsWith('<') ? fallback : text
    return failure(status, { message, code: undefined, type: undefined, status: undefined, isContentFilter: false }, status)
  }
  const root = (Array.isArray(parsed) ? parsed[0] : parsed) as { error?: ChatErrorWire | string } | null
  const error = root && typeof root === 'object' && root.error !== undefined ? root.error : (root as ChatErrorWire | null)
  return failure(status, readErrorFields(error ?? undefined, fallback), status)
}

/**
 * An error that arrived in a 200 body or as an SSE data line mid-stream. Its HTTP status was 200,
 * so the body's own numeric code (when it has one) or 500 stands in for classification.
 */
export const toInBandFailure = (error: ChatErrorWire | string): UpstreamFailure => {
  const fields = readErrorFields(error, 'The upstream stream failed')
  const isAuthentication = fields.code === 'invalid_api_key' || fields.type === 'authentication_error'
  const status = fields.status ?? (isAuthentication ? 401 : fields.type === 'rate_limit_error' || fields.type === 'tokens' ? 429 : 500)
  return failure(status, fields, status)
}

/** A stream that ended before its terminal event: the connection dropped. */
export const truncatedStreamFailure = (): UpstreamFailure =>
  new UpstreamFailure('provider_unavailable', 'The upstream stream ended before it completed', { upstreamStatus: 502 })
