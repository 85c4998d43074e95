/**
 * The response cache for `/embeddings`, which runs outside the request stages (src/engine/embeddings.ts): the same
 * opt-in, key rules and storage as the other routes (docs/decisions.md, Response cache). A hit answers the vectors
 * that were stored, with the hit's usage and nothing reserved or sent upstream; a miss stores what it was answered.
 */

import type { JsonObject } from '../../storage/contract'
import type { EmbeddingsAnswer, EmbeddingsRequestBody, PreparedEmbeddings } from '../../engine/embeddings'
import type { InferenceService } from '../../engine/service'
import type { ResponseResult } from '../../engine/session-events'
import { reserveFixedCharge } from '../../engine/spend'
import type { ResponseCacheRepository } from '../../repositories/response-cache'
import { hashCacheKey } from './key'
import { hitUsage, replayedResult } from './replay'
import { RESPONSE_CACHE } from './request-state'

interface StoredEmbeddings {
  result: ResponseResult
  embeddings: number[][]
}

/** What decides the vectors: the model routing chose, the input and the parameters endpoints must honour. */
const keyOf = (prepared: PreparedEmbeddings, body: EmbeddingsRequestBody) =>
  hashCacheKey('embeddings', prepared.request.spend.workspace.id, {
    models: [...new Set(prepared.request.attempts.map((attempt) => attempt.model.slug))],
    input: body.input,
    dimensions: body.dimensions ?? null,
    input_type: body.input_type ?? null,
    provider: body.provider ?? null,
  })

/** Runs `run` for the prepared request unless the cache answers it; fills the cache from a completed answer. */
export const answerEmbeddingsCached = async (
  service: InferenceService,
  entries: ResponseCacheRepository,
  prepared: PreparedEmbeddings,
  body: EmbeddingsRequestBody,
  run: () => Promise<EmbeddingsAnswer>,
): Promise<EmbeddingsAnswer> => {
  const { request } = prepared
  const state = RESPONSE_CACHE.get(request)
  if (!state) return run()
  const { ttlSeconds } = state
  if (ttlSeconds === 0) {
    state.outcome = { status: 'bypass' }
    return run()
  }
  const settings = service.responseCache
  const key = await keyOf(prepared, body)
  const entry = await entries.get(key, service.now()).catch((error: unknown) => {
    service.logger.warn('response cache: lookup failed', { requestId: request.requestId, error })
    return null
  })
  if (entry) {
    const startedAt = performance.now()
    const stored = entry.answer as unknown as StoredEmbeddings
    state.outcome = { status: 'hit', ageSeconds: Math.max(0, Math.floor((service.now() - entry.storedAt) / 1000)), sourceId: stored.result.id }
    const usage = hitUsage(stored.result.usage!, settings.hitCharge)
    if (settings.hitCharge > 0) (await reserveFixedCharge(service, request, settings.hitCharge)).settle(usage)
    const result = replayedResult(service, stored.result, usage, undefined)
    return { answer: { request: request.body, result, overheadMs: performance.now() - startedAt }, embeddings: stored.embeddings, usage, servedBy: result.servedBy! }
  }
  state.outcome = { status: 'miss' }
  const answer = await run()
  const { result } = answer.answer
  const stored = JSON.parse(JSON.stringify({ result, embeddings: answer.embeddings })) as JsonObject
  await entries.put(key, request.spend.workspace.id, stored, ttlSeconds * 1000, service.now(), settings).catch((error: unknown) => {
    service.logger.warn('response cache: answer not stored', { requestId: request.requestId, error })
  })
  return answer
}
