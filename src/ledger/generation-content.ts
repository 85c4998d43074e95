/**
 * What a generation said, as the usage ledger keeps it for workspaces with private logging on
 * (`is_observability_io_logging_enabled`; docs/decisions.md, Generation content): the conversation sent,
 * the completion and reasoning written, or the failure returned.
 */

import { isGatewayError } from '../core/errors'
import type { InferenceRequest } from '../engine/request'
import type { ResponseResult } from '../engine/session-events'
import type { OutputItem } from '../providers/types'
import type { GenerationApi, GenerationContentRecord } from '../repositories/generations'
import type { JsonValue } from '../storage/contract'

/**
 * Whether this request's content is kept: the workspace's private logging is on, the request is sampled
 * in at `io_logging_sampling_rate`, and it has text to keep (an embeddings request has vectors, not text).
 * `io_logging_api_key_ids` names keys by OpenRouter's integer ids, which keys here do not have: a list
 * matches no key, so only `null` (every key) logs.
 */
export const shouldKeepContent = (request: InferenceRequest, api: GenerationApi, random: () => number = Math.random): boolean => {
  const { workspace } = request.spend
  if (!workspace.isObservabilityIoLoggingEnabled || workspace.ioLoggingApiKeyIds !== null || api === 'embeddings') return false
  return workspace.ioLoggingSamplingRate >= 1 || random() < workspace.ioLoggingSamplingRate
}

const inputMessages = (request: InferenceRequest): JsonValue[] => {
  const { instructions, input } = request.body
  const system = typeof instructions === 'string' && instructions !== '' ? [{ role: 'system', content: instructions }] : []
  const items = typeof input === 'string' ? [{ role: 'user', content: input }] : ((input ?? []) as JsonValue[])
  return [...system, ...items]
}

const joinedOrNull = (parts: string[]) => (parts.length > 0 ? parts.join('') : null)

const textOf = (output: readonly OutputItem[]) => ({
  completion: joinedOrNull(
    output.flatMap((item) =>
      item.type === 'message' && Array.isArray(item.content)
        ? (item.content as Array<{ type: string; text?: string }>).flatMap((part) => (part.type === 'output_text' && typeof part.text === 'string' ? [part.text] : []))
        : [],
    ),
  ),
  reasoning: joinedOrNull(
    output.flatMap((item) => {
      if (item.type !== 'reasoning') return []
      const reasoning = item as { summary?: Array<{ text: string }>; content?: Array<{ text: string }> }
      return [...(reasoning.content ?? []), ...(reasoning.summary ?? [])].map((part) => part.text)
    }),
  ),
})

/** The failed attempts before the answer or the error, as OpenRouter's `previous_errors` lists them. */
const failedAttempts = (request: InferenceRequest) =>
  request.attemptReports
    .filter((report) => report.status !== null && report.status !== 200)
    .map((report) => ({ code: report.status!, message: `${report.provider} answered ${report.status} for ${report.model}`, provider_name: report.provider, raw: null }))

/** The content of a generation that answered. */
export const answeredContent = (request: InferenceRequest, result: ResponseResult, createdAt: string): GenerationContentRecord => ({
  id: result.id,
  createdAt,
  input: { messages: inputMessages(request) },
  output: textOf(result.output),
  error: result.error
    ? { message: result.error.message, status: result.error.status, provider_name: result.servedBy?.provider ?? null, raw: null, previous_errors: failedAttempts(request) }
    : null,
})

/** The content of a generation that failed before any answer. */
export const failedContent = (request: InferenceRequest, id: string, error: unknown, createdAt: string): GenerationContentRecord => {
  const status = isGatewayError(error) ? error.status : 500
  const provider = isGatewayError(error) && typeof error.metadata?.provider_name === 'string' ? error.metadata.provider_name : null
  return {
    id,
    createdAt,
    input: { messages: inputMessages(request) },
    output: { completion: null, reasoning: null },
    error: {
      message: status === 500 || !isGatewayError(error) ? 'Internal server error' : error.message,
      status,
      provider_name: provider,
      raw: null,
      previous_errors: failedAttempts(request),
    },
  }
}
