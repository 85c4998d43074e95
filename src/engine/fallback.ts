/**
 * The fallback loop (docs/decisions.md, Errors and routing): tries the planned attempts in order until one
 * answers. Before the first byte of content every failure moves on; the client sees only the last one.
 */

import { GatewayError, InternalError } from '../core/errors'
import type { UpstreamCall } from '../providers/contract'
import { redactSecrets } from '../providers/shared/errors'
import { isUpstreamFailure } from '../core/upstream-failure'
import type { AttemptEndOutcome, AttemptStarted, FallbackTaken } from '../core/telemetry'
import type { ResponsesRequest } from '../providers/types'
import { outcomeOf, outlierKeys } from './attempt-health'
import { ClientClosedError, openAttempt, toAttemptFailure, type AttemptBuilder, type AttemptRequest, type OpenedAttempt } from './attempts'
import type { AttemptOutcome } from './outlier-detection'
import { failureKey } from './recent-failures'
import type { InferenceRequest } from './request'
import { RequestDeadlineError } from './request-deadline'
import { boundedRetryAfter } from './retry-after'
import type { Attempt } from './routing'
import type { InferenceService } from './service'
import type { ResponseFailure, ServedBy } from './session-events'

export interface Served {
  attempt: Attempt
  /** 1-based, among the attempts sent. */
  attemptNumber: number
}

export const servedBy = (served: Served): ServedBy => ({
  model: served.attempt.model.slug,
  provider: served.attempt.provider.descriptor.id,
  providerName: served.attempt.provider.descriptor.displayName,
  attempt: served.attemptNumber,
  isByok: served.attempt.credential !== null,
})

/** The call `attempt` sends, as the features' turn stages shape it for that endpoint, in their order (turn-stage.ts). */
const callForAttempt = (call: UpstreamCall, attempt: Attempt, request: InferenceRequest, service: InferenceService): UpstreamCall => {
  let shaped = call
  for (const shape of service.stages.turns.shapeCall) shaped = shape(shaped, attempt, request)
  return shaped
}

const callFor = (request: InferenceRequest, attempt: Attempt, service: InferenceService, stream: boolean): UpstreamCall => ({
  request: request.body as unknown as ResponsesRequest,
  upstreamModel: attempt.endpoint.model,
  stream,
  endUserId: request.endUserId,
  maxEventBytes: service.limits.maxEventBytes,
  ...(request.extensions ? { extensions: request.extensions } : {}),
  hasExplicitPromptCache: attempt.endpoint.supportedParameters?.includes('prompt_cache_options') === true,
})

/** The gateway's own failure (the request's deadline, a key it cannot open) with `service_metadata` when it was asked for. */
const withExtraBody = (error: GatewayError, extraBody: Record<string, unknown>) =>
  new GatewayError(error.status, error.message, {
    ...(error.metadata ? { metadata: error.metadata } : {}),
    ...(error.reason === undefined ? {} : { reason: error.reason }),
    ...(error.retryable === undefined ? {} : { retryable: error.retryable }),
    ...(error.headers ? { headers: error.headers } : {}),
    extraBody: { ...error.extraBody, ...extraBody },
    cause: error,
  })

const withRetryAfter = (seconds: string | undefined) => (seconds === undefined ? {} : { headers: { 'retry-after': seconds } })

/**
 * The error the client sees for a failed attempt. A provider refusing the operator's shared key is
 * the operator's problem, not the caller's: it becomes a 502, never a 401 that blames the caller.
 */
export const clientError = (failure: GatewayError, attempt: Attempt | undefined, service: InferenceService, extraBody?: Record<string, unknown>) => {
  if (!isUpstreamFailure(failure)) return extraBody ? withExtraBody(failure, extraBody) : failure
  const provider = attempt?.provider.descriptor
  const isSharedCredentialProblem = attempt?.credential === null && ['authentication', 'permission_denied', 'payment_required'].includes(failure.errorType)
  const errorType = isSharedCredentialProblem ? 'provider_unavailable' : failure.errorType
  const status = isSharedCredentialProblem ? 502 : failure.status
  const message = isSharedCredentialProblem ? `${provider?.displayName ?? 'The provider'} is unavailable` : `${provider?.displayName ?? 'Provider'}: ${failure.message}`
  return new GatewayError(status, redactSecrets(message), {
    metadata: {
      error_type: errorType,
      ...(provider ? { provider_name: provider.id } : {}),
      ...(failure.providerCode && !isSharedCredentialProblem ? { provider_code: failure.providerCode } : {}),
    },
    ...withRetryAfter(boundedRetryAfter(failure.retryAfterSeconds, service.retry.maxRetryAfterSeconds)),
    ...(extraBody ? { extraBody } : {}),
    cause: failure,
  })
}

/** A client-visible failure as the response reports it in-band. */
export const toResponseFailure = (error: GatewayError): ResponseFailure => ({
  status: error.status,
  errorType: typeof error.metadata?.error_type === 'string' ? error.metadata.error_type : 'server',
  message: error.status === 500 ? 'Internal server error' : error.message,
})

export type ServedOutcome<T> =
  | { isServed: true; value: T; served: Served; opened: OpenedAttempt }
  | { isServed: false; failure: GatewayError; attempt: Attempt | undefined; attemptsMade: number }

/** What kind of failure an attempt met: the upstream's classification, else the gateway's own reason. */
const errorTypeOf = (failure: GatewayError): string =>
  isUpstreamFailure(failure) ? failure.errorType : typeof failure.metadata?.error_type === 'string' ? failure.metadata.error_type : `http_${failure.status}`

const fallbackOf = (requestId: string, failure: GatewayError, from: Attempt, to: Attempt): FallbackTaken => ({
  requestId,
  reason: errorTypeOf(failure),
  fromProvider: from.provider.descriptor.id,
  toProvider: to.provider.descriptor.id,
})

const logAttemptFailure = (service: InferenceService, requestId: string, attempt: Attempt, attemptNumber: number, failure: GatewayError) => {
  service.logger.warn('upstream attempt failed', {
    requestId,
    attempt: attemptNumber,
    model: attempt.model.slug,
    provider: attempt.provider.descriptor.id,
    isByok: attempt.credential !== null,
    status: failure.status,
    errorType: isUpstreamFailure(failure) ? failure.errorType : undefined,
  })
}

/**
 * Tries the attempts in order until `use` succeeds on an opened one, within `retry.maxAttempts` and the
 * gateway's retry budget. Endpoints and keys that keep failing are skipped unless every planned one is
 * (then all are tried, as Envoy's panic routing does: a wrong ejection must not fail every request).
 * The client closing stops everything.
 */
export const firstServedAttempt = async <T>(
  service: InferenceService,
  request: InferenceRequest,
  attemptRequest: AttemptRequest,
  stream: boolean,
  // `startedAt` lets `use` stop the upstream's clock where the gateway's own work begins.
  use: (opened: OpenedAttempt, call: UpstreamCall, attempt: Attempt, startedAt: number) => Promise<T>,
  // Another operation than a generation (embeddings) builds its own upstream request.
  build?: AttemptBuilder,
): Promise<ServedOutcome<T>> => {
  const { retry, outliers, telemetry } = service
  retry.budget.deposit()
  const isPanic = request.attempts.every((attempt) => outliers.isEjected(outlierKeys(attempt)))
  // Built only when every attempt failed: an error's stack trace is not free on every request.
  let lastFailure: GatewayError | undefined
  let lastAttempt: Attempt | undefined
  let attemptsMade = 0
  const { deadline } = attemptRequest
  for (const attempt of request.attempts) {
    const keys = outlierKeys(attempt)
    if (!isPanic && outliers.isEjected(keys)) continue
    if (attemptsMade >= retry.maxAttempts) break
    // The fallback stopped for want of time, not for want of attempts: that is what the client is told.
    if (deadline.isPassed) {
      lastFailure = deadline.error()
      lastAttempt = undefined
      break
    }
    if (attemptsMade > 0 && !retry.budget.tryWithdraw()) {
      service.logger.warn('retry budget exhausted: no further attempt', { requestId: request.requestId, attempts: attemptsMade })
      break
    }
    if (lastFailure && lastAttempt) telemetry.fallbackTaken?.(fallbackOf(request.requestId, lastFailure, lastAttempt, attempt))
    attemptsMade++
    deadline.countAttempt()
    outliers.admit(keys)
    const call = callForAttempt(callFor(request, attempt, service, stream), attempt, request, service)
    let opened: OpenedAttempt | undefined
    let outcome: AttemptOutcome = 'unknown'
    const attemptStarted = performance.now()
    let firstByteAt: number | undefined
    const started: AttemptStarted | undefined = telemetry.attemptStarted
      ? {
          requestId: request.requestId,
          attemptNumber: attemptsMade,
          provider: attempt.provider.descriptor.id,
          model: attempt.model.slug,
          endpoint: attempt.endpoint.model,
          isByok: attempt.credential !== null,
        }
      : undefined
    if (started) telemetry.attemptStarted!(started)
    const report = (status: number | null, ended: AttemptEndOutcome, failure?: GatewayError) => {
      const latencyMs = Math.round(performance.now() - attemptStarted)
      request.attemptReports.push({
        provider: attempt.provider.descriptor.id,
        model: attempt.model.slug,
        endpoint: attempt.endpoint.model,
        isByok: attempt.credential !== null,
        status,
        latencyMs,
      })
      telemetry.attemptEnded?.({
        requestId: request.requestId,
        attemptNumber: attemptsMade,
        provider: attempt.provider.descriptor.id,
        model: attempt.model.slug,
        isByok: attempt.credential !== null,
        outcome: ended,
        status,
        ...(failure ? { errorType: errorTypeOf(failure) } : {}),
        ...(firstByteAt === undefined ? {} : { timeToFirstByteMs: Math.round(firstByteAt - attemptStarted) }),
        durationMs: latencyMs,
        ...(started ? { started } : {}),
      })
    }
    try {
      const sending = started && telemetry.upstreamSending
      opened = await openAttempt(attempt, call, service, attemptRequest, build, sending ? (headers) => sending({ attempt: started, headers }) : undefined)
      if (telemetry.attemptEnded) firstByteAt = performance.now()
      const value = await use(opened, call, attempt, attemptStarted)
      outcome = 'answered'
      report(200, 'answered')
      if (request.sticky) (request.sticky.by === 'session' ? service.sessions : service.conversations).remember(request.sticky.key, attempt)
      return { isServed: true, value, served: { attempt, attemptNumber: attemptsMade }, opened }
    } catch (error) {
      opened?.abort()
      if (error instanceof ClientClosedError || attemptRequest.signal.aborted) {
        report(null, 'client_closed')
        throw new ClientClosedError()
      }
      lastFailure = toAttemptFailure(error, attempt, opened?.secrets ?? [])
      lastAttempt = attempt
      outcome = outcomeOf(lastFailure)
      // The provider's own status where it answered one (OpenRouter's `provider_responses`), else what the client would see.
      report(isUpstreamFailure(lastFailure) ? lastFailure.upstreamStatus : lastFailure.status, 'failed', lastFailure)
      logAttemptFailure(service, request.requestId, attempt, attemptsMade, lastFailure)
      // Cut short by the request's deadline: no time is left for another attempt.
      if (lastFailure instanceof RequestDeadlineError) {
        lastAttempt = undefined
        break
      }
    } finally {
      outliers.record(keys, outcome)
      if (outcome === 'failed') service.recentFailures.record(failureKey(attempt.provider.descriptor.id, attempt.endpoint.model))
    }
  }
  return { isServed: false, failure: lastFailure ?? new InternalError('No attempt was made'), attempt: lastAttempt, attemptsMade }
}
