/**
 * Provider configuration: built-in providers with their default base URLs, plus configured ones
 * (self-hosted vLLM/Ollama, regional or Azure endpoints), each with an optional shared key — the
 * operator's own credential, used when a workspace has no BYOK key that applies.
 */

import { BUILT_IN_PROVIDERS, type ProviderApi, type ProviderDescriptor } from '../providers/catalog'
import type { ProviderAdapter, UpstreamTarget } from '../providers/contract'
import type { ModelEntry } from './models'

export interface ProviderConfig {
  /** Wire format; required for providers that are not built in, unless they bring their own `adapter`. */
  api?: ProviderApi
  /**
   * An adapter of your own (the contract in src/providers/contract.ts), used instead of the built-in one:
   * a wire format modelgate does not ship, or the scripted provider of `modelgate/testing`.
   */
  adapter?: ProviderAdapter
  displayName?: string
  /** Overrides the default base URL (self-hosted, proxies, regional endpoints, tests). */
  baseURL?: string
  /** The operator's shared key for this provider. Never logged or returned. */
  apiKey?: string
  /** Serve without any key (self-hosted endpoints that need none). */
  isKeyless?: boolean
  headers?: Record<string, string>
  /** Provider-specific settings handed to the adapter (e.g. Azure `apiVersion`). */
  options?: Record<string, string>
}

/** A provider as routing sees it; `api` names a custom adapter's wire format too. */
export type RegisteredProvider = Omit<ProviderDescriptor, 'api'> & { api: string }

export interface ResolvedProvider {
  descriptor: RegisteredProvider
  adapter: ProviderAdapter
  /** The target with the shared key, or `null` when the operator configured none. */
  shared: UpstreamTarget | null
  /** The target for a caller's own key. */
  withKey(apiKey: string): UpstreamTarget
}

export const createProviderRegistry = (
  configured: Record<string, ProviderConfig>,
  // Keyed by wire format: the built-in adapters, whose names are `ProviderApi`s.
  adapters: Partial<Record<string, ProviderAdapter>>,
) => {
  const resolved = new Map<string, ResolvedProvider>()
  const descriptors = new Map<string, RegisteredProvider>(BUILT_IN_PROVIDERS.map((descriptor) => [descriptor.id, descriptor]))
  for (const [id, config] of Object.entries(configured)) {
    const builtIn = descriptors.get(id)
    if (!builtIn && !config.api && !config.adapter) throw new TypeError(`modelgate: provider "${id}" is not built in, so it needs an api or an adapter`)
    if (!builtIn && !config.baseURL) throw new TypeError(`modelgate: provider "${id}" is not built in, so it needs a baseURL`)
    if (config.adapter && config.api && config.api !== config.adapter.api) {
      throw new TypeError(`modelgate: provider "${id}" names api "${config.api}" but its adapter speaks "${config.adapter.api}"; give one of them`)
    }
    descriptors.set(id, {
      id,
      displayName: config.displayName ?? builtIn?.displayName ?? id,
      api: config.adapter?.api ?? config.api ?? builtIn!.api,
      baseURL: (config.baseURL ?? builtIn!.baseURL).replace(/\/+$/, ''),
      ...(builtIn?.options ? { options: builtIn.options } : {}),
    })
  }
  for (const descriptor of descriptors.values()) {
    const config = configured[descriptor.id] ?? {}
    const adapter = config.adapter ?? adapters[descriptor.api]
    if (!adapter) continue
    const options = { ...descriptor.options, ...config.options }
    const target = (apiKey: string): UpstreamTarget => ({
      baseURL: descriptor.baseURL,
      apiKey,
      ...(config.headers ? { headers: config.headers } : {}),
      ...(Object.keys(options).length > 0 ? { options } : {}),
    })
    resolved.set(descriptor.id, {
      descriptor,
      adapter,
      shared: config.apiKey ? target(config.apiKey) : config.isKeyless ? target('') : null,
      withKey: target,
    })
  }
  return {
    /** The provider a slug names (`deepinfra/turbo` resolves to `deepinfra`). */
    get: (slug: string): ResolvedProvider | undefined => resolved.get(slug.split('/', 1)[0]!),
    ids: () => [...resolved.keys()],
  }
}

export type ProviderRegistry = ReturnType<typeof createProviderRegistry>

/**
 * Refuses configured model entries whose endpoints name a provider the gateway does not know: such an
 * endpoint could never serve, and without this the model would fail only when first requested.
 */
export const assertKnownEndpointProviders = (models: readonly ModelEntry[], registry: ProviderRegistry) => {
  for (const model of models) {
    for (const endpoint of model.endpoints) {
      if (registry.get(endpoint.provider)) continue
      throw new TypeError(
        `modelgate: model "${model.slug}" names provider "${endpoint.provider}", which is neither built in nor configured in providers`,
      )
    }
  }
}
