/**
 * Which catalog models a caller can run: those routing finds an endpoint for with the workspace's BYOK
 * keys (its required and BYOK-only keys, allowed models and users included) and the gateway's shared
 * keys, with no request preferences. The same planning a request does, so the list never promises a
 * model that would answer "no endpoints".
 */

import type { ByokRecord } from '../repositories/byok-credentials'
import type { EndpointPolicy } from './endpoint-policy'
import type { ModelEntry } from './models'
import { planAttempts } from './routing'
import type { InferenceService } from './service'

export interface UsableModelsInput {
  credentials: ByokRecord[]
  callerKeyHash: string
  callerUserId: string
  /** What the caller's guardrails allow (their models, providers, zero data retention). */
  policy?: EndpointPolicy
}

/** A predicate over catalog entries: whether a request of this caller for the model has an endpoint to try. */
export const usableModels = (service: InferenceService, input: UsableModelsInput): ((entry: ModelEntry) => boolean) => {
  const known = new Map<string, boolean>()
  return (entry) => {
    let isUsable = known.get(entry.slug)
    if (isUsable === undefined) {
      try {
        isUsable = planAttempts(service.models, service.providers, { models: [entry.slug], preferences: undefined, parametersUsed: [], ...input }).length > 0
      } catch {
        // "No endpoint" and "no key" are how routing says the caller cannot run it.
        isUsable = false
      }
      known.set(entry.slug, isUsable)
    }
    return isUsable
  }
}
