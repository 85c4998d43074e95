/**
 * What may serve a request beyond the caller's own preferences: models and endpoints allowed, zero data retention.
 * Routing (routing.ts) never attempts an endpoint the policy refuses; the guardrails' routing rules
 * (src/features/guardrails/routing-policy.ts) are the policy the composition root's features give it.
 */

import type { GatewayError } from '../core/errors'
import type { ModelEndpoint, ModelEntry } from './models'

export interface EndpointPolicy {
  allowsModel(model: ModelEntry): boolean
  allowsEndpoint(model: ModelEntry, endpoint: ModelEndpoint): boolean
  /** Whether only zero-data-retention endpoints (and BYOK keys declared ZDR) may serve `model`. */
  requiresZdr(model: ModelEntry): boolean
  /** The answer when the policy left no endpoint for `models`. */
  refusal(models: readonly string[]): GatewayError
}
