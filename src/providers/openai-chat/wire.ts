/**
 * Chat Completions wire shapes, as OpenAI and the compatible family send them. Loose on purpose:
 * every field is optional and unknown fields are ignored, so a new upstream field never breaks us.
 * Read with the guards in `result.ts`, never trusted.
 */

export type ChatContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: string } }
  | { type: 'file'; file: { file_data?: string; file_id?: string; filename?: string } }
  | { type: 'input_audio'; input_audio: unknown }

export interface ChatToolCall {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}

export type ChatMessage =
  | { role: 'system' | 'developer'; content: string }
  | { role: 'user'; content: string | ChatContentPart[] }
  | { role: 'assistant'; content: string; tool_calls?: ChatToolCall[]; reasoning_content?: string; reasoning?: string }
  | { role: 'tool'; tool_call_id: string; content: string }

export interface ChatUsageWire {
  prompt_tokens?: number
  completion_tokens?: number
  total_tokens?: number
  prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number } | null
  completion_tokens_details?: { reasoning_tokens?: number } | null
  /** DeepSeek reports cache hits here (and, lately, in `prompt_tokens_details` too). */
  prompt_cache_hit_tokens?: number
}

export interface ChatToolCallWire {
  index?: number
  id?: string
  type?: string
  function?: { name?: string; arguments?: unknown }
}

/** A message (non-streaming) or a delta (streaming); the same fields arrive either way. */
export interface ChatMessageWire {
  role?: string
  /** A string; Mistral's reasoning models send a list of `text` / `thinking` parts instead. */
  content?: unknown
  refusal?: string | null
  /** DeepSeek, vLLM, Moonshot, Qwen, … */
  reasoning_content?: string | null
  /** Groq (`reasoning_format: parsed`), OpenRouter-style relays, Ollama. */
  reasoning?: string | null
  tool_calls?: ChatToolCallWire[] | null
}

export interface ChatTopLogprobWire {
  token?: unknown
  logprob?: unknown
  bytes?: unknown
}

export interface ChatTokenLogprobWire extends ChatTopLogprobWire {
  top_logprobs?: unknown
}

export interface ChatChoiceWire {
  index?: number
  message?: ChatMessageWire
  delta?: ChatMessageWire
  finish_reason?: string | null
  /** With `logprobs: true`: the content tokens of this message or delta. */
  logprobs?: { content?: ChatTokenLogprobWire[] | null } | null
  /** vLLM and SGLang: the stop string (or token id) that ended the answer when `finish_reason` is `stop`. */
  stop_reason?: unknown
}

export interface ChatErrorWire {
  message?: unknown
  type?: unknown
  code?: unknown
  status?: unknown
  param?: unknown
}

/** A `chat.completion` body or one `chat.completion.chunk`. */
export interface ChatCompletionWire {
  id?: string
  choices?: ChatChoiceWire[]
  usage?: ChatUsageWire | null
  /** The processing tier that served the answer, on the body and on every chunk (OpenAI's names; hosts may use their own). */
  service_tier?: unknown
  /** Groq's older streams carry usage only here, on the last chunk. */
  x_groq?: { usage?: ChatUsageWire } | null
  /** An in-band failure (a 200 body, or an SSE data line mid-stream). */
  error?: ChatErrorWire | string
}
