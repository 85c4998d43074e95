/**
 * The Chat Completions error profile. The family agrees on `{error: {message, type, code}}` (OpenAI,
 * Groq, DeepSeek, Together, Azure with `code` as a string such as "429" or "DeploymentNotFound") but
 * not quite: vLLM and Mistral put the fields at the top level, Mistral's `message` can be a
 * validation object, Ollama sends `{error: "text"}`, proxies send HTML.
 */

import type { UpstreamErrorContext } from '../contract'
import { readInBandError, readUpstreamError, type ErrorProfile } from '../shared/error-reader'
import { classifyUpstreamError } from '../shared/errors'
import { UpstreamFailure, type ErrorType } from '../../core/upstream-failure'
import { retryAfterInMessage } from '../shared/retry-after'
import type { ChatErrorWire } from './wire'

type ChatError = ChatErrorWire | string

interface ErrorFields {
  message: string | undefined
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

const readErrorFields = (error: ChatError | undefined): ErrorFields => {
  if (typeof error === 'string') return { message: error, code: undefined, type: undefined, status: undefined, isContentFilter: false }
  const record = (error ?? {}) as ChatErrorWire & { innererror?: { code?: unknown }; detail?: unknown }
  const message = typeof record.message === 'string' ? record.message : validationMessage(record.message ?? record.detail)
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
const classify = (status: number, error: ChatError | undefined, message: string): ErrorType => {
  const fields = readErrorFields(error)
  if (fields.code === 'rate_limit_exceeded') return 'rate_limit_exceeded'
  if (fields.code === 'context_length_exceeded') return 'context_length_exceeded'
  if (fields.code === 'string_above_max_length') return 'string_too_long'
  if (fields.isContentFilter || fields.code === 'content_policy_violation') return 'content_policy_violation'
  if (fields.code === 'DeploymentNotFound' || fields.code === 'model_not_found') return 'not_found'
  // Groq: 498 is "flex tier capacity exceeded".
  if (status === 498) return 'provider_overloaded'
  return classifyUpstreamError(status, message, fields.code ?? fields.type)
}

/** An in-band error has no HTTP status of its own: the body's numeric code, else what its type implies. */
const inBandStatus = (error: ChatError | undefined): number => {
  const fields = readErrorFields(error)
  if (fields.status !== undefined) return fields.status
  if (fields.code === 'invalid_api_key' || fields.type === 'authentication_error') return 401
  return fields.type === 'rate_limit_error' || fields.type === 'tokens' ? 429 : 500
}

const chatErrors: ErrorProfile<ChatError> = {
  find: (body) => {
    const root = Array.isArray(body) ? body[0] : body
    if (typeof root === 'string') return root
    // Members without the `error` envelope (vLLM, Mistral) put the fields at the top level.
    if (typeof root !== 'object' || root === null) return {}
    const { error } = root as { error?: ChatError | null }
    return error === undefined ? (root as ChatErrorWire) : (error ?? {})
  },
  fields: (error) => {
    const fields = readErrorFields(error)
    return { message: fields.message, code: fields.code ?? fields.type }
  },
  classify,
  inBandStatus,
  retryAfterSeconds: (_error, message) => retryAfterInMessage(message),
  fallbackMessage: (status) => `Upstream error (HTTP ${status})`,
}

/** `toError` for the Chat Completions adapters. */
export const toChatError = (status: number, bodyText: string, context?: UpstreamErrorContext): UpstreamFailure =>
  readUpstreamError(chatErrors, status, bodyText, context)

/** An error that arrived in a 200 body or as an SSE data line mid-stream. */
export const toInBandFailure = (error: ChatError): UpstreamFailure => readInBandError(chatErrors, error, 'The upstream stream failed')

/** A stream that ended before its terminal event: the connection dropped. */
export const truncatedStreamFailure = (): UpstreamFailure =>
  new UpstreamFailure('provider_unavailable', 'The upstream stream ended before it completed', { upstreamStatus: 502 })
