/**
 * A non-streaming OpenAI Response → `UpstreamResult`. Output items pass through verbatim (see
 * index.ts for why not the output builder); only reasoning items gain `format`, exactly as the
 * stream path does, so both paths hand core the same items.
 */

import type { FinishStatus, UpstreamResult } from '../contract'
import { UpstreamFailure } from '../../core/upstream-failure'
import { inputTokensDetails, type OutputItem, type Usage } from '../types'
import { openAIServiceTier, servedTier } from '../shared/service-tier'
import { toInBandFailure } from './errors'
import { OPENAI_REASONING_FORMAT, type OpenAIItem, type OpenAIResponse, type OpenAIUsage } from './wire'

const count = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.trunc(value) : 0

/** OpenAI's usage already has the canonical shape; this only fills gaps and drops extras. */
export const toUsage = (usage: OpenAIUsage | null | undefined): Usage => {
  const inputTokens = count(usage?.input_tokens)
  const outputTokens = count(usage?.output_tokens)
  return {
    input_tokens: inputTokens,
    input_tokens_details: inputTokensDetails(count(usage?.input_tokens_details?.cached_tokens), count(usage?.input_tokens_details?.cache_write_tokens)),
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: count(usage?.output_tokens_details?.reasoning_tokens) },
    total_tokens: count(usage?.total_tokens) || inputTokens + outputTokens,
  }
}

/**
 * Tags OpenAI reasoning with its `format` (docs/decisions.md, POST /responses), so that when a client sends it back
 * through another provider that adapter knows the ciphertext is not its own. Other items are
 * returned as they are (the same object).
 */
export const toOutputItem = (item: OpenAIItem): OutputItem =>
  (item.type === 'reasoning' && item.format === undefined ? { ...item, format: OPENAI_REASONING_FORMAT } : item) as OutputItem

export const toFinish = (response: OpenAIResponse, isIncomplete: boolean): { status: FinishStatus; incompleteDetails: { reason: string } | null } =>
  isIncomplete || response.status === 'incomplete'
    ? { status: 'incomplete', incompleteDetails: { reason: response.incomplete_details?.reason ?? 'unknown' } }
    : { status: 'completed', incompleteDetails: null }

export const readOpenAIResult = (body: unknown): UpstreamResult => {
  const response = body as OpenAIResponse | null
  if (!response || typeof response !== 'object' || !Array.isArray(response.output)) {
    throw new UpstreamFailure('provider_unavailable', 'OpenAI returned a body that is not a Response object', { upstreamStatus: 200 })
  }
  if (response.status === 'failed') throw toInBandFailure(response.error, 'OpenAI reported the response as failed')
  if (response.status !== 'completed' && response.status !== 'incomplete') {
    // `queued` / `in_progress` / `cancelled` only happen in background mode, which we never request.
    throw new UpstreamFailure('provider_unavailable', `OpenAI returned a response with status "${String(response.status)}"`, { upstreamStatus: 200 })
  }
  return {
    output: response.output.map(toOutputItem),
    ...(response.usage ? { usage: toUsage(response.usage) } : {}),
    ...toFinish(response, false),
    ...servedTier(openAIServiceTier(response.service_tier)),
    ...(typeof response.id === 'string' ? { upstreamId: response.id } : {}),
  }
}
