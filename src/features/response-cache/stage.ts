/**
 * The response cache's stage around a request's run (run-stage.ts; docs/decisions.md, Response cache), outermost: a
 * request that asks for the cache (its `x-modelgate-cache-ttl`, else its key's or its workspace's `cache`) and can be
 * repeated is answered from a fresh entry of its workspace when there is one, whole or as a stream, with nothing
 * reserved or sent upstream (the semantic cache, src/features/response-cache/semantic.ts, looks further for a
 * workspace that opted in); otherwise it runs, and its completed answer is stored for the TTL. A request that asks
 * for nothing costs one property read.
 */

import type { JsonObject } from '../../storage/contract'
import { observeSession } from '../../engine/observe'
import type { InferenceRequest } from '../../engine/request'
import { RESPONSE_CACHE, type ResponseCacheState } from './request-state'
import type { RunOutcome, RunStage } from '../../engine/run-stage'
import type { InferenceService } from '../../engine/service'
import type { ResponseResult } from '../../engine/session-events'
import { reserveFixedCharge } from '../../engine/spend'
import type { ResponseCacheRepository } from '../../repositories/response-cache'
import { uncacheableReason } from './cacheable'
import { responseCacheKey } from './key'
import { hitUsage, replayedResult, sessionReplay, wholeReplay } from './replay'
import { lookUpSemantic, type SemanticLookup } from './semantic'
import type { SemanticCacheSettings } from './settings'

/** The semantic cache as `service_metadata.response_cache.semantic` shows it: its model and threshold, and a hit's similarity. */
const semanticMetadata = (settings: SemanticCacheSettings, similarity?: number) => ({
  model: settings.model,
  threshold: settings.threshold,
  ...(similarity === undefined ? {} : { similarity: Math.round(similarity * 1e6) / 1e6 }),
})

/** A result's service metadata (when the caller asked for it) with what the semantic cache did. */
const withMissMetadata = (result: ResponseResult, semantic: SemanticCacheSettings | undefined): ResponseResult =>
  !semantic || !result.serviceMetadata
    ? result
    : { ...result, serviceMetadata: { ...result.serviceMetadata, response_cache: { status: 'miss', semantic: semanticMetadata(semantic) } } }

/**
 * The cache's directive for a prepared request of an HTTP route: the TTL of its `x-modelgate-cache-ttl` header
 * (`headerTtlSeconds`), else its key's `cache`, else its workspace's; `undefined` when none asks for the cache.
 */
export const cacheDirectiveFor = (request: InferenceRequest, headerTtlSeconds: number | undefined): ResponseCacheState | undefined => {
  const ttlSeconds = headerTtlSeconds ?? request.spend.key.cache?.ttlSeconds ?? request.spend.workspace.cache?.ttlSeconds
  return ttlSeconds === undefined ? undefined : { ttlSeconds }
}

/** An answer worth serving again: completed, without a failure, with its usage. */
const isStorable = (result: ResponseResult) => result.status === 'completed' && result.error === null && result.usage !== null

/** What is stored of a result: not its service metadata, which describes the run that made it. */
const storedForm = (result: ResponseResult): JsonObject => {
  const { serviceMetadata: _metadata, ...rest } = result
  return JSON.parse(JSON.stringify(rest)) as JsonObject
}

export const responseCacheStage = (service: InferenceService, entries: ResponseCacheRepository): RunStage => {
  const settings = service.responseCache
  const fill = async (request: InferenceRequest, key: string, ttlSeconds: number, result: ResponseResult, semantic: SemanticLookup | undefined) => {
    if (!isStorable(result)) return
    try {
      const now = service.now()
      const isStored = await entries.put(key, request.spend.workspace.id, storedForm(result), ttlSeconds * 1000, now, settings)
      if (isStored && semantic && settings.semantic) {
        const { shape, vector } = semantic
        await entries.putVector({ workspaceId: request.spend.workspace.id, shape, entryId: key, vector, storedAt: now }, settings.semantic.compareLast)
      }
    } catch (error) {
      // The answer stands whether or not it could be kept.
      service.logger.warn('response cache: answer not stored', { requestId: request.requestId, error })
    }
  }

  const lookup = async (request: InferenceRequest, key: string) => {
    try {
      return await entries.get(key, service.now())
    } catch (error) {
      // A store that cannot answer is a miss: the request runs as it would without the cache.
      service.logger.warn('response cache: lookup failed', { requestId: request.requestId, error })
      return null
    }
  }

  const semanticLookup = async (request: InferenceRequest, semantic: SemanticCacheSettings) => {
    try {
      return await lookUpSemantic(service, entries, request, semantic)
    } catch (error) {
      // An embedding model that cannot answer leaves the exact cache: the request runs.
      service.logger.warn('response cache: semantic lookup failed', { requestId: request.requestId, error })
      return undefined
    }
  }

  const hit = async (
    request: InferenceRequest,
    state: ResponseCacheState,
    stored: ResponseResult,
    storedAt: number,
    semantic?: { settings: SemanticCacheSettings; similarity: number },
  ): Promise<RunOutcome> => {
    const startedAt = performance.now()
    const ageSeconds = Math.max(0, Math.floor((service.now() - storedAt) / 1000))
    state.outcome = { status: 'hit', ageSeconds, sourceId: stored.id }
    const usage = stored.usage ? hitUsage(stored.usage, settings.hitCharge) : null
    const metadata = request.isMetadataRequested
      ? { response_cache: { status: 'hit', age_seconds: ageSeconds, ...(semantic ? { semantic: semanticMetadata(semantic.settings, semantic.similarity) } : {}) } }
      : undefined
    const result = replayedResult(service, stored, usage, metadata)
    // A hit pays no provider: only the gateway's own charge, when the operator set one, is held and settled.
    const reservation = settings.hitCharge > 0 ? await reserveFixedCharge(service, request, settings.hitCharge) : undefined
    const overheadMs = performance.now() - startedAt
    if (!request.body.stream) {
      reservation?.settle(usage)
      return { isStream: false, answer: wholeReplay(request.body, result, overheadMs) }
    }
    const session = sessionReplay(service, request.requestId, request.body, result, overheadMs)
    return { isStream: true, session: reservation ? observeSession(session, reservation.observer()) : session }
  }

  return {
    name: 'response-cache',
    // Only the HTTP routes set a directive (`cacheDirectiveFor`): a request without one, an intern's turn among them,
    // runs as it would without the cache.
    async run(request, next) {
      const state = RESPONSE_CACHE.get(request)
      if (!state) return next(request)
      const { ttlSeconds } = state
      if (ttlSeconds === 0 || uncacheableReason(request) !== null) {
        state.outcome = { status: 'bypass' }
        return next(request)
      }
      const key = await responseCacheKey(request)
      const entry = await lookup(request, key)
      if (entry) return hit(request, state, entry.answer as unknown as ResponseResult, entry.storedAt)
      // The semantic cache, where the operator names its model and the workspace opted in.
      const semantic = request.spend.workspace.cache?.semantic === true ? settings.semantic : undefined
      const found = semantic ? await semanticLookup(request, semantic) : undefined
      if (semantic && found?.match) {
        const { entry: near, similarity } = found.match
        return hit(request, state, near.answer as unknown as ResponseResult, near.storedAt, { settings: semantic, similarity })
      }
      state.outcome = { status: 'miss' }
      const outcome = await next(request)
      if (!outcome.isStream) {
        await fill(request, key, ttlSeconds, outcome.answer.result, found)
        return semantic ? { isStream: false, answer: { ...outcome.answer, result: withMissMetadata(outcome.answer.result, semantic) } } : outcome
      }
      // Stored as the stream finishes, before the client sees its end: the next request finds it.
      const observed = observeSession(outcome.session, {
        onEvent(event) {
          if (event.type === 'finished' && semantic && event.result.serviceMetadata) event.result.serviceMetadata = withMissMetadata(event.result, semantic).serviceMetadata!
        },
        beforeFinished: (result) => fill(request, key, ttlSeconds, result, found),
      })
      return { isStream: true, session: observed }
    },
  }
}
