/**
 * OpenAI Responses API shapes as we read them. Deliberately loose: OpenAI adds fields and item
 * kinds often, and a new one must flow through untouched instead of breaking a request.
 */

/** docs/decisions.md, POST /responses: the `format` of reasoning items OpenAI produced. */
export const OPENAI_REASONING_FORMAT = 'openai-responses-v1'

/** `error` of a Response object, and of HTTP error bodies. */
export interface OpenAIError {
  code?: string | null
  message?: string | null
  type?: string | null
  param?: string | null
}

export interface OpenAIUsage {
  input_tokens?: number
  input_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number } | null
  output_tokens?: number
  output_tokens_details?: { reasoning_tokens?: number } | null
  total_tokens?: number
}

/** An output item: message, function_call, reasoning, web_search_call, mcp_call, … */
export type OpenAIItem = { type: string; id?: string } & Record<string, unknown>

export interface OpenAIResponse {
  id?: string
  object?: string
  status?: 'completed' | 'incomplete' | 'failed' | 'in_progress' | 'cancelled' | 'queued' | (string & {})
  error?: OpenAIError | null
  incomplete_details?: { reason?: string | null } | null
  output?: OpenAIItem[]
  usage?: OpenAIUsage | null
  /** The processing tier that served the response (`default`, `flex`, `priority`…), which may differ from the one asked. */
  service_tier?: unknown
}

/**
 * A stream event. The `error` event comes in two shapes: the documented flat one
 * (`{type:'error', code, message, param}`) and the nested one OpenAI actually sends
 * (`{type:'error', error:{type, code, message, param}}`).
 */
export type OpenAIStreamEvent = {
  type: string
  sequence_number?: number
  response?: OpenAIResponse
  item?: OpenAIItem
  error?: OpenAIError
  code?: string | null
  message?: string
} & Record<string, unknown>
