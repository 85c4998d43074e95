/**
 * The models a router may choose from: catalog entries this gateway can reach for the caller (an endpoint whose
 * provider is configured with the operator's key, or a BYOK key of the workspace), with what routing needs to
 * know of each. A router never picks a model the request could not be sent to.
 */

import type { ByokRecord } from '../../../repositories/byok-credentials'
import type { ModelEndpoint, ModelEntry } from '../../../engine/models'
import type { InferenceService } from '../../../engine/service'

export interface Candidate {
  slug: string
  entry: ModelEntry
  /** USD per input token at the cheapest reachable endpoint. */
  promptPrice: number
  /** USD per token, input and output blended 3:1 (the usual chat mix), at the cheapest reachable endpoint. */
  blendedPrice: number
  /** The largest context among reachable endpoints. */
  contextLength: number
  readsImages: boolean
  takesTools: boolean
  takesReasoning: boolean
}

const baseSlug = (slug: string) => slug.split('/', 1)[0]!

/** Input and output blended 3:1, as price comparisons commonly weigh them. */
export const blendedPrice = (endpoint: ModelEndpoint) => (3 * endpoint.pricing.prompt + endpoint.pricing.completion) / 4

const hasCredentialFor = (credentials: readonly ByokRecord[], provider: string) =>
  credentials.some((credential) => !credential.disabled && baseSlug(credential.provider) === baseSlug(provider))

/** Text-answering catalog models with at least one endpoint this caller can reach, in catalog order. */
export const routableModels = (service: InferenceService, credentials: readonly ByokRecord[]): Candidate[] =>
  service.models.list().flatMap((entry): Candidate[] => {
    if (!(entry.outputModalities ?? ['text']).includes('text')) return []
    const endpoints = entry.endpoints.filter((endpoint) => {
      const provider = service.providers.get(endpoint.provider)
      return provider !== undefined && (provider.shared !== null || hasCredentialFor(credentials, endpoint.provider))
    })
    if (endpoints.length === 0) return []
    const cheapest = endpoints.reduce((best, endpoint) => (blendedPrice(endpoint) < blendedPrice(best) ? endpoint : best))
    return [
      {
        slug: entry.slug,
        entry,
        promptPrice: Math.min(...endpoints.map((endpoint) => endpoint.pricing.prompt)),
        blendedPrice: blendedPrice(cheapest),
        contextLength: Math.max(...endpoints.map((endpoint) => endpoint.contextLength)),
        readsImages: (entry.inputModalities ?? ['text']).includes('image'),
        takesTools: endpoints.some((endpoint) => endpoint.supportedParameters?.includes('tools') ?? false),
        takesReasoning: endpoints.some((endpoint) => endpoint.supportedParameters?.includes('reasoning') ?? false),
      },
    ]
  })
