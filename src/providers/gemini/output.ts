/**
 * Gemini candidate parts → output-builder calls, shared by `readResult` and `readStream` so both
 * paths produce the same items.
 *
 * - `thought: true` text → a reasoning summary (Gemini's thoughts are summaries), format
 *   `google-gemini-v1`; other text → output text.
 * - `functionCall {name, args, id?}` → a function call whose `call_id` is Gemini's `id`, else
 *   `call_<responseId>_<n>` (stable across the streaming and non-streaming paths). Calls arrive
 *   whole: the arguments are one delta.
 * - `inlineData` with an `image/*` type → a generated image (`image_generation_call`, result base64, format
 *   from the type). A `thought: true` image is one of the drafts an image model thinks with (Gemini 3 Pro Image):
 *   like hidden reasoning, it is not part of the answer and is not shown. Other inline media is never asked for.
 * - `thoughtSignature` → the `signature` of a `google-gemini-v1` reasoning item, placed so that
 *   `input.ts` can put it back on the exact part: a function call's signature in a reasoning item
 *   right before the call; any other part's signature (Gemini 3 signs the last part of a text
 *   answer, and streams it on a trailing empty text part) in a reasoning item after the last part.
 *   A trailing signature is dropped when a function call follows in the same answer: it cannot
 *   then be told apart from the call's own, which is the one Gemini validates.
 */

import { UpstreamFailure } from '../../core/upstream-failure'
import type { OutputBuilder } from '../shared/output-builder'
import type { ItemEvent } from '../events'
import type { Usage } from '../types'
import type { FinishStatus } from '../contract'
import { GEMINI_REASONING_FORMAT, type GeminiResponse, type GeminiResponsePart, type GeminiUsageMetadata } from './wire'

export interface PartReader {
  /** Feeds the parts of one candidate (a whole answer, or one stream chunk's worth). */
  read(parts: GeminiResponsePart[] | undefined): ItemEvent[]
  /** Flushes what waits for the end of the answer (a trailing signature). */
  end(): ItemEvent[]
}

export const createPartReader = (builder: OutputBuilder, responseId: string | undefined): PartReader => {
  let callCount = 0
  let trailingSignature: string | undefined

  const part = (events: ItemEvent[], value: GeminiResponsePart) => {
    const signature = typeof value.thoughtSignature === 'string' && value.thoughtSignature !== '' ? value.thoughtSignature : undefined
    const call = value.functionCall
    if (call && typeof call === 'object') {
      trailingSignature = undefined
      if (signature) events.push(...builder.reasoningSignature(signature, GEMINI_REASONING_FORMAT))
      const key = callCount++
      const callId = typeof call.id === 'string' && call.id !== '' ? call.id : responseId ? `call_${responseId}_${key}` : undefined
      events.push(...builder.functionCall(key, { ...(callId ? { callId } : {}), name: call.name ?? '' }))
      events.push(...builder.functionCallArguments(key, JSON.stringify(call.args ?? {})))
      return
    }
    const inline = value.inlineData
    if (inline && typeof inline === 'object' && value.thought !== true && typeof inline.data === 'string' && inline.data !== '') {
      const mediaType = typeof inline.mimeType === 'string' ? inline.mimeType : ''
      if (mediaType.toLowerCase().startsWith('image/')) events.push(...builder.image(inline.data, mediaType))
    }
    if (typeof value.text === 'string') {
      events.push(...(value.thought === true ? builder.reasoningSummary(value.text, GEMINI_REASONING_FORMAT) : builder.text(value.text)))
    }
    if (signature) trailingSignature = signature
  }

  return {
    read(parts) {
      const events: ItemEvent[] = []
      for (const value of parts ?? []) if (value && typeof value === 'object') part(events, value)
      return events
    },
    end() {
      const signature = trailingSignature
      trailingSignature = undefined
      return signature ? builder.reasoningSignature(signature, GEMINI_REASONING_FORMAT) : []
    },
  }
}

const CONTENT_FILTER = new Set(['SAFETY', 'PROHIBITED_CONTENT', 'BLOCKLIST', 'RECITATION', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'IMAGE_RECITATION'])

export interface Finish {
  status: FinishStatus
  incompleteDetails: { reason: string } | null
}

/** `finishReason` → Responses status. STOP and everything not listed is `completed`. */
export const finishOf = (reason: string | undefined): Finish => {
  if (reason === 'MAX_TOKENS') return { status: 'incomplete', incompleteDetails: { reason: 'max_output_tokens' } }
  if (reason !== undefined && CONTENT_FILTER.has(reason)) return { status: 'incomplete', incompleteDetails: { reason: 'content_filter' } }
  return { status: 'completed', incompleteDetails: null }
}

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.trunc(value) : 0)

const imageTokens = (metadata: GeminiUsageMetadata | undefined): number => {
  let tokens = 0
  for (const detail of Array.isArray(metadata?.candidatesTokensDetails) ? metadata.candidatesTokensDetails : []) {
    if (detail?.modality === 'IMAGE') tokens += count(detail.tokenCount)
  }
  return tokens
}

/**
 * `usageMetadata` → Usage. `promptTokenCount` already includes the cached tokens; tool-use prompt
 * tokens (grounding results) are input too. Gemini counts thoughts apart from candidates; ours
 * are output. The candidates' IMAGE tokens (`candidatesTokensDetails`) are output too, and also reported
 * apart as `image_tokens`, since a per-image price replaces their token price.
 */
export const usageOf = (metadata: GeminiUsageMetadata | undefined): Usage => {
  const input = count(metadata?.promptTokenCount) + count(metadata?.toolUsePromptTokenCount)
  const reasoning = count(metadata?.thoughtsTokenCount)
  const output = count(metadata?.candidatesTokenCount) + reasoning
  const images = Math.min(imageTokens(metadata), output)
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: count(metadata?.cachedContentTokenCount) },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: reasoning, ...(images > 0 ? { image_tokens: images } : {}) },
    total_tokens: count(metadata?.totalTokenCount) || input + output,
  }
}

/** A prompt Gemini refused to answer: HTTP 200, `promptFeedback.blockReason`, no candidates. */
export const blockedPrompt = (response: GeminiResponse): UpstreamFailure | undefined => {
  const reason = response.promptFeedback?.blockReason
  if (typeof reason !== 'string' || reason === '' || (response.candidates?.length ?? 0) > 0) return undefined
  return new UpstreamFailure('content_policy_violation', `Gemini blocked the prompt (${reason})`, { upstreamStatus: 200, providerCode: reason })
}
