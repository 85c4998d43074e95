/**
 * The Anthropic Messages wire format, as far as this adapter reads or writes it. Response shapes are
 * loose on purpose: Anthropic adds fields and block kinds under its versioning policy, and an unknown
 * one must pass through us unnoticed rather than break a request.
 * Reference: https://platform.claude.com/docs/en/api/messages and /build-with-claude/streaming.
 */

/** `anthropic-version` header value; the only stable version of the Messages API. */
export const ANTHROPIC_VERSION = '2023-06-01'

/** The `format` our reasoning items carry for Claude thinking (docs/decisions.md, POST /responses). */
export const ANTHROPIC_REASONING_FORMAT = 'anthropic-claude-v1'

export type CacheControl = { type: 'ephemeral'; ttl?: string }

// ---- request ---------------------------------------------------------------------------------

export type TextBlock = { type: 'text'; text: string; cache_control?: CacheControl }

export type ImageSource =
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'url'; url: string }

export type DocumentSource =
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'text'; media_type: 'text/plain'; data: string }
  | { type: 'url'; url: string }

export type ImageBlock = { type: 'image'; source: ImageSource; cache_control?: CacheControl }

export type DocumentBlock = { type: 'document'; source: DocumentSource; title?: string; cache_control?: CacheControl }

export type ThinkingBlock = { type: 'thinking'; thinking: string; signature: string }

export type RedactedThinkingBlock = { type: 'redacted_thinking'; data: string }

export type ToolUseBlock = { type: 'tool_use'; id: string; name: string; input: unknown; cache_control?: CacheControl }

export type ToolResultBlock = {
  type: 'tool_result'
  tool_use_id: string
  content: string | Array<TextBlock | ImageBlock | DocumentBlock>
  is_error?: boolean
  cache_control?: CacheControl
}

export type ContentBlock =
  | TextBlock
  | ImageBlock
  | DocumentBlock
  | ThinkingBlock
  | RedactedThinkingBlock
  | ToolUseBlock
  | ToolResultBlock

export type MessageParam = { role: 'user' | 'assistant'; content: ContentBlock[] }

export type ToolParam = {
  name: string
  description?: string
  input_schema: Record<string, unknown>
  cache_control?: CacheControl
}

/** Claude's own web search, a server tool Anthropic runs (web-search.ts). */
export type WebSearchToolParam = {
  type: 'web_search_20250305'
  name: 'web_search'
  max_uses?: number
  allowed_domains?: string[]
  blocked_domains?: string[]
  user_location?: { type: 'approximate'; city?: string; region?: string; country?: string; timezone?: string }
  cache_control?: CacheControl
}

export type ToolChoiceParam =
  | { type: 'auto'; disable_parallel_tool_use?: boolean }
  | { type: 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' }

export type ThinkingParam =
  | { type: 'enabled'; budget_tokens: number }
  | { type: 'adaptive'; display?: 'summarized' | 'omitted' }
  | { type: 'disabled' }

export type OutputConfigParam = {
  effort?: string
  format?: { type: 'json_schema'; schema: Record<string, unknown> }
}

export interface MessagesRequestBody {
  model: string
  max_tokens: number
  /** `standard_only` keeps the request off priority capacity; Anthropic's default, `auto`, may use it. */
  service_tier?: 'auto' | 'standard_only'
  messages: MessageParam[]
  system?: TextBlock[]
  tools?: Array<ToolParam | WebSearchToolParam>
  tool_choice?: ToolChoiceParam
  thinking?: ThinkingParam
  output_config?: OutputConfigParam
  temperature?: number
  top_p?: number
  top_k?: number
  stop_sequences?: string[]
  metadata?: { user_id: string }
  stream?: true
}

// ---- response (loose) ------------------------------------------------------------------------

export type WireUsage = {
  input_tokens?: number | null
  output_tokens?: number | null
  cache_creation_input_tokens?: number | null
  cache_read_input_tokens?: number | null
  /** The cache writes split by how long the cache is kept; their sum is `cache_creation_input_tokens`. */
  cache_creation?: { ephemeral_5m_input_tokens?: number | null; ephemeral_1h_input_tokens?: number | null } | null
  /** The tier that served the message: `standard`, `priority` or `batch`. */
  service_tier?: unknown
  /** Newer API versions split thinking out of `output_tokens` (already included in it). */
  output_tokens_details?: { thinking_tokens?: number | null } | null
  [key: string]: unknown
}

export type WireContentBlock = { type: string; [key: string]: unknown }

export type WireError = { type?: string; message?: string; [key: string]: unknown }

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
