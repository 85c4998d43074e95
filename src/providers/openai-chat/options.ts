/**
 * What differs between OpenAI itself and the rest of the Chat Completions family, read once per
 * call from `target.options` (all values are strings, as configuration gives them):
 *
 * - `dialect`: `openai` for OpenAI and Azure OpenAI (`max_completion_tokens`, `verbosity`,
 *   `prompt_cache_key`, the full `reasoning_effort` set); anything else is the compatible family.
 *   Defaults to `openai` when the base URL is api.openai.com; the Azure adapter always uses it.
 * - `developerRole`: `true` sends `developer` messages as such. By default they become `system`,
 *   which every member of the family accepts (OpenAI treats `system` as `developer` on o-series).
 * - `maxTokensField`: `max_tokens` or `max_completion_tokens`; defaults from the dialect.
 * - `topK`: `true` forwards `top_k` (Together, Fireworks, DeepInfra, vLLM, …). Off by default:
 *   OpenAI and strict members (Mistral) reject unknown fields.
 * - `omitFields`: comma-separated top-level body fields never to send (e.g. `user,stream_options`
 *   for a strict upstream that rejects them).
 * - `reasoningField`: `reasoning_content` or `reasoning`. When set, reasoning items in the input
 *   are sent back on the next assistant message under that name (DeepSeek and Moonshot thinking
 *   models require it within a tool-calling turn). Dropped otherwise.
 */

import type { UpstreamTarget } from '../contract'

export type MaxTokensField = 'max_tokens' | 'max_completion_tokens'

export interface ChatSettings {
  isOpenAIDialect: boolean
  shouldUseDeveloperRole: boolean
  maxTokensField: MaxTokensField
  shouldSendTopK: boolean
  omitFields: readonly string[]
  reasoningField: 'reasoning_content' | 'reasoning' | undefined
}

const OPENAI_ORIGIN = 'https://api.openai.com/'

export const readChatSettings = (target: UpstreamTarget, isOpenAIDialectByDefault: boolean): ChatSettings => {
  const options = target.options ?? {}
  const isOpenAIDialect =
    options.dialect === undefined ? isOpenAIDialectByDefault || target.baseURL.startsWith(OPENAI_ORIGIN) : options.dialect === 'openai'
  const maxTokensField =
    options.maxTokensField === 'max_tokens' || options.maxTokensField === 'max_completion_tokens'
      ? options.maxTokensField
      : isOpenAIDialect
        ? 'max_completion_tokens'
        : 'max_tokens'
  const reasoningField =
    options.reasoningField === 'reasoning_content' || options.reasoningField === 'reasoning' ? options.reasoningField : undefined
  return {
    isOpenAIDialect,
    shouldUseDeveloperRole: options.developerRole === 'true',
    maxTokensField,
    shouldSendTopK: options.topK === 'true',
    omitFields: options.omitFields ? options.omitFields.split(',').map((field) => field.trim()).filter(Boolean) : [],
    reasoningField,
  }
}
