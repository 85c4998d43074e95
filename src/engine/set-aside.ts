/**
 * Which endpoints the default load balancing sets aside (docs/decisions.md, "Load balancing"): those whose upstream
 * failed within the last 30 s (recent-failures.ts) and those outlier detection ejected. A conversation held to its
 * endpoint lets go of it under the same rule.
 */

import { outlierKeys } from './attempt-health'
import { failureKey } from './recent-failures'
import type { Attempt, RoutingBalancing } from './routing'
import type { InferenceService } from './service'

export const isSetAside = (service: InferenceService, attempt: Attempt): boolean =>
  service.recentFailures.hasFailed(failureKey(attempt.provider.descriptor.id, attempt.endpoint.model)) || service.outliers.isEjected(outlierKeys(attempt))

/** What routing balances with, or nothing where the operator pinned the cheapest-first order (`routing.balancing`). */
export const routingBalancing = (service: InferenceService): RoutingBalancing | undefined =>
  service.routing.balancing === 'cheapest'
    ? undefined
    : { random: service.routing.random, isSetAside: (model, endpoint, provider) => isSetAside(service, { model, endpoint, provider, credential: null }) }
