/**
 * `streamGenerateContent?alt=sse` → Responses events, incrementally. Every `data:` event is a whole
 * `GenerateContentResponse`: text and thoughts arrive in pieces, function calls whole, usage is
 * cumulative (the last one counts) and only the last chunk carries `finishReason`. There is no
 * `[DONE]`: a body that ends without a finish reason was cut off.
 */

import { UpstreamFailure } from '../../core/upstream-failure'
import { createOutputBuilder } from '../shared/output-builder'
import { parseSseJson, readSse } from '../shared/sse'
import type { UpstreamCall, UpstreamStreamEvent } from '../contract'
import { toInBandFailure } from './errors'
import { createGroundingReader } from './grounding'
import { blockedPrompt, createPartReader, finishOf, usageOf, type PartReader } from './output'
import type { GeminiResponse, GeminiUsageMetadata } from './wire'

export async function* readGeminiStream(body: AsyncIterable<Uint8Array>, call: UpstreamCall): AsyncIterable<UpstreamStreamEvent> {
  const builder = createOutputBuilder()
  const grounding = createGroundingReader(builder)
  let reader: PartReader | undefined
  let usage: GeminiUsageMetadata | undefined
  let finishReason: string | undefined

  for await (const message of readSse(body, call.maxEventBytes)) {
    const chunk = parseSseJson(message.data) as GeminiResponse | undefined
    if (typeof chunk !== 'object' || chunk === null) continue
    // An in-band failure (e.g. 503 UNAVAILABLE after some text): the HTTP status was already 200.
    if (chunk.error) throw toInBandFailure(chunk.error)
    const blocked = blockedPrompt(chunk)
    if (blocked) throw blocked
    if (chunk.usageMetadata) usage = chunk.usageMetadata
    const candidate = chunk.candidates?.[0]
    if (!candidate) continue
    reader ??= createPartReader(builder, chunk.responseId)
    yield* reader.read(candidate.content?.parts)
    grounding.note(candidate.groundingMetadata)
    if (typeof candidate.finishReason === 'string') finishReason = candidate.finishReason
  }

  if (finishReason === undefined) {
    throw new UpstreamFailure('provider_unavailable', 'Gemini stream ended without a finish reason (connection dropped)', { upstreamStatus: 200 })
  }
  yield* grounding.cite()
  if (reader) yield* reader.end()
  yield* grounding.searches()
  const finish = finishOf(finishReason)
  yield* builder.finish(finish.status)
  // No usage metadata: the engine estimates what was used.
  if (usage) yield { type: 'upstream.usage', usage: usageOf(usage) }
  yield { type: 'upstream.finish', status: finish.status, incompleteDetails: finish.incompleteDetails }
}
