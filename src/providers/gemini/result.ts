/** A whole `generateContent` body → an `UpstreamResult`, through the same part reader as streams. */

import { UpstreamFailure } from '../../core/upstream-failure'
import { createOutputBuilder } from '../shared/output-builder'
import type { UpstreamCall, UpstreamResult } from '../contract'
import { toInBandFailure } from './errors'
import { createGroundingReader } from './grounding'
import { blockedPrompt, createPartReader, finishOf, usageOf } from './output'
import type { GeminiResponse } from './wire'

export const readGeminiResult = (body: unknown, _call: UpstreamCall): UpstreamResult => {
  const response = (typeof body === 'object' && body !== null ? body : {}) as GeminiResponse
  if (response.error) throw toInBandFailure(response.error)
  const blocked = blockedPrompt(response)
  if (blocked) throw blocked
  const candidate = response.candidates?.[0]
  if (!candidate) throw new UpstreamFailure('provider_unavailable', 'Gemini returned no candidates', { upstreamStatus: 200 })

  const builder = createOutputBuilder()
  const reader = createPartReader(builder, response.responseId)
  reader.read(candidate.content?.parts)
  const grounding = createGroundingReader(builder)
  grounding.note(candidate.groundingMetadata)
  grounding.cite()
  reader.end()
  grounding.searches()
  const finish = finishOf(candidate.finishReason)
  builder.finish(finish.status)
  return {
    output: builder.items,
    ...(response.usageMetadata ? { usage: usageOf(response.usageMetadata) } : {}),
    status: finish.status,
    incompleteDetails: finish.incompleteDetails,
    ...(response.responseId ? { upstreamId: response.responseId } : {}),
  }
}
