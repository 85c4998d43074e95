/**
 * The native OpenAI Responses API (`POST {baseURL}/responses`).
 *
 * Our public wire is this API, so the adapter passes OpenAI's output items and stream events
 * through verbatim instead of rebuilding them with the output builder. Rebuilding would lose
 * what OpenAI adds beyond message/function_call/reasoning: its own ids (a reasoning item's
 * `rs_…` id must match its `encrypted_content` when sent back), annotation events and
 * `url_citation`s, logprobs, and server-tool items (`web_search_call`, `mcp_call`,
 * `image_generation_call`, …) with their events, whose `output_index`es would otherwise have
 * to be renumbered around builder-made items. Both paths apply the same two touches (reasoning
 * items gain `format: "openai-responses-v1"`; text events always carry `logprobs`), so a
 * stream's `output_item.done` items equal the non-streaming `output`.
 */

import { openAIEmbeddings } from '../shared/openai-embeddings'
import type { ProviderAdapter } from '../contract'
import { toOpenAIError } from './errors'
import { buildOpenAIRequest, OPENAI_PROVIDER_TOOLS } from './request'
import { readOpenAIResult } from './result'
import { readOpenAIStream } from './stream'

export const openAIResponsesAdapter: ProviderAdapter = {
  contractVersion: 1,
  pdfInput: { fileData: true, fileUrl: true },
  api: 'openai-responses',
  // The Responses API has no stop sequences, seed or logit bias: only log probabilities (request.ts).
  requestExtensions: ['logprobs'],
  // OpenAI's `web_search` tool has domain allow lists (hosts only), context sizes and a location, nothing more.
  nativeWebSearch: ['allowed_domains', 'search_context_size', 'user_location'],
  providerTools: OPENAI_PROVIDER_TOOLS,
  // OpenAI's processing tiers, sent as `service_tier` (request.ts).
  serviceTiers: ['flex', 'priority', 'scale'],
  promptTokenizer: 'o200k_base',
  buildRequest: buildOpenAIRequest,
  readResult: (body) => readOpenAIResult(body),
  readStream: readOpenAIStream,
  toError: toOpenAIError,
  embeddings: openAIEmbeddings,
}
