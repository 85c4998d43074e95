/** A whole (non-streaming) answer: the attempts in order until one answers, then its priced result. */

import { performanceKeyOf } from './attempt-health'
import { billAttempt } from './billing'
import { performanceSample } from './endpoint-performance'
import { readJsonBody } from './attempts'
import { clientError, firstServedAttempt, servedBy } from './fallback'
import type { InferenceRequest } from './request'
import { newResponseId, nowSeconds } from './response-identity'
import { metadataIfRequested, serviceMetadata } from './service-metadata'
import type { InferenceService } from './service'
import type { WholeAnswer } from './session-events'
import { deliveredOutput, estimatedUsage } from './stopped-usage'

/** Resolves with the result; rejects with the client's error when every attempt failed. */
export const answerWhole = async (service: InferenceService, request: InferenceRequest): Promise<WholeAnswer> => {
  const startedAt = performance.now()
  const createdAt = nowSeconds(service)
  const outcome = await firstServedAttempt(service, request, request, false, async (opened, call, attempt, attemptStarted) => {
    const body = await readJsonBody(opened.response, service.limits.maxResponseBytes)
    const upstreamMs = performance.now() - attemptStarted
    opened.release()
    // Translated inside the attempt, so a malformed answer still falls back to the next endpoint.
    return { result: attempt.provider.adapter.readResult(body, call), upstreamMs }
  })
  if (!outcome.isServed) {
    const metadata = request.isMetadataRequested ? { service_metadata: serviceMetadata(service, request, null, outcome.attemptsMade, startedAt) } : undefined
    throw clientError(outcome.failure, outcome.attempt, service, metadata)
  }
  const { served } = outcome
  const { result, upstreamMs } = outcome.value
  const { attempt } = served
  if (result.status === 'completed') service.performance.record(performanceKeyOf(attempt), performanceSample(upstreamMs, 0, result.usage?.output_tokens))
  return {
    request: request.body,
    result: {
      id: newResponseId(),
      createdAt,
      completedAt: nowSeconds(service),
      model: attempt.model.slug,
      status: result.status,
      output: result.output,
      usage: billAttempt(result.usage ?? estimatedUsage(request.body, deliveredOutput(result.output)), attempt, service.byokFeeRate, result.output),
      ...(result.usage ? {} : { isUsageEstimated: true }),
      error: null,
      incompleteDetails: result.incompleteDetails,
      ...(result.stopSequence === undefined ? {} : { stopSequence: result.stopSequence }),
      ...(result.serviceTier === undefined ? {} : { serviceTier: result.serviceTier }),
      ...metadataIfRequested(service, request, served, served.attemptNumber, startedAt),
      servedBy: servedBy(served),
    },
    overheadMs: performance.now() - startedAt - upstreamMs,
  }
}
