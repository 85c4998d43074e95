/**
 * What outlier detection tracks for an attempt, and what an attempt's end says about it. An endpoint
 * is the provider, where it is reached and the upstream model; where the host comes from the caller's
 * key (an Azure resource), the key is part of the endpoint. A BYOK attempt is also tracked by its key.
 */

import type { GatewayError } from '../core/errors'
import { isUpstreamFailure, type ErrorType } from '../core/upstream-failure'
import { endpointKey } from './endpoint-performance'
import type { AttemptOutcome } from './outlier-detection'
import type { Attempt } from './routing'

// The upstream's own failures; 4xx are the caller's (or the key's) and say nothing about the endpoint's health.
const UPSTREAM_FAULTS = new Set<ErrorType>(['provider_unavailable', 'provider_overloaded', 'server', 'timeout'])

export const outlierKeys = (attempt: Attempt): string[] => {
  const { descriptor } = attempt.provider
  const where = descriptor.baseURL || attempt.credential?.id || 'default'
  const endpoint = `endpoint ${descriptor.id} ${where} ${attempt.endpoint.model}`
  return attempt.credential ? [endpoint, `byok ${attempt.credential.id}`] : [endpoint]
}

/** A failure counts against the target when it is the upstream's: 5xx, no connection, a timeout. */
export const outcomeOf = (failure: GatewayError): AttemptOutcome => {
  if (!isUpstreamFailure(failure)) return 'unknown'
  return UPSTREAM_FAULTS.has(failure.errorType) || failure.upstreamStatus >= 500 ? 'failed' : 'answered'
}

/** The endpoint and key kind whose speed `attempt` measures (endpoint-performance.ts). */
export const performanceKeyOf = (attempt: Attempt): string =>
  endpointKey(attempt.credential ? 'byok' : 'shared', attempt.provider.descriptor.id, attempt.endpoint.model)
