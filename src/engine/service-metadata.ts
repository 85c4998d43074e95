/** `service_metadata` (docs/decisions.md): how a response was routed, for callers who opted in. */

import { roundedPercentiles, type EndpointFigures } from './endpoint-performance'
import type { Served } from './fallback'
import type { InferenceRequest } from './request'
import type { InferenceService } from './service'

const strategyOf = (served: Served | null, request: InferenceRequest) =>
  request.routing?.strategy ??
  (!served || served.attemptNumber > 1 || served.attempt.model.slug !== request.requestedModel ? 'fallback' : 'direct')

/**
 * The measured figures a speed sort or preference ordered an endpoint by: latency to the first token in seconds,
 * output tokens per second; null for an endpoint not measured yet (tried first, so it gets measured).
 */
const performanceOf = (figures: EndpointFigures | null) =>
  figures && {
    latency: roundedPercentiles({ p50: figures.latencyMs.p50 / 1000, p75: figures.latencyMs.p75 / 1000, p90: figures.latencyMs.p90 / 1000, p99: figures.latencyMs.p99 / 1000 }, 3),
    throughput: figures.tokensPerSecond ? roundedPercentiles(figures.tokensPerSecond, 1) : null,
  }

/**
 * `served` is null when no attempt succeeded; `attemptsMade` counts the attempts sent (skipped and
 * unreached endpoints are not attempts). `startedAt` is on `performance.now()`: a duration, not a date.
 */
export const serviceMetadata = (service: InferenceService, request: InferenceRequest, served: Served | null, attemptsMade: number, startedAt: number) => {
  const available = request.attempts.map((attempt) => ({
    model: attempt.model.slug,
    provider: attempt.provider.descriptor.id,
    selected: served?.attempt === attempt,
    ...(attempt.figures === undefined ? {} : { performance: performanceOf(attempt.figures) }),
    // The chance the default load balancing's weighted pick gave this endpoint, among the cheapest stable ones.
    ...(attempt.share === undefined ? {} : { share: Math.round(attempt.share * 1000) / 1000 }),
  }))
  const isBalanced = request.attempts.some((attempt) => attempt.share !== undefined)
  return {
    attempt: served?.attemptNumber ?? attemptsMade,
    endpoints: { available, total: available.length },
    generation_time: Math.round(performance.now() - startedAt),
    is_byok: served?.attempt.credential != null,
    // The request's own list: plugins that act on the answer add their stages to it after this metadata was taken.
    pipeline: request.pipeline,
    region: service.region,
    requested: request.requestedModel,
    // With a session or a conversation: whether the endpoint that served it before leads this request's attempts.
    ...(request.sticky ? { sticky: request.sticky.isHeld, sticky_by: request.sticky.by } : {}),
    strategy: strategyOf(served, request),
    summary: served
      ? `${served.attempt.model.slug} via ${served.attempt.provider.descriptor.id} on attempt ${served.attemptNumber} of ${request.attempts.length}`
      : `no endpoint succeeded after ${attemptsMade} attempt${attemptsMade === 1 ? '' : 's'}`,
    // Load balanced: whether the endpoint that served was the weighted pick (not a fallback, nor a held one).
    ...(isBalanced ? { weighted_pick: served?.attempt.isWeightedPick === true } : {}),
  }
}

/** The metadata for `response` when the caller asked for it; nothing otherwise. */
export const metadataIfRequested = (...args: Parameters<typeof serviceMetadata>): { serviceMetadata?: Record<string, unknown> } =>
  args[1].isMetadataRequested ? { serviceMetadata: serviceMetadata(...args) } : {}

/** The metadata of a request refused before routing (a guardrail block): no endpoint was planned or tried. */
export const refusedServiceMetadata = (service: InferenceService, requestedModel: string, pipeline: readonly object[], startedAt: number) => ({
  attempt: 0,
  endpoints: { available: [], total: 0 },
  generation_time: Math.round(performance.now() - startedAt),
  is_byok: false,
  pipeline: [...pipeline],
  region: service.region,
  requested: requestedModel,
  strategy: 'direct',
  summary: 'refused before routing: no endpoint was tried',
})
