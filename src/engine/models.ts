/**
 * The model catalog: the built-in entries (models.snapshot.ts, generated from a maintained dataset by
 * scripts/generate-model-catalog.ts), the operator's entries added or replacing by slug, and the operator's
 * price overrides on top (docs/decisions.md, "Model catalog").
 */

import type { EndpointPricing, ModelEntry } from './model-entry'
import { SNAPSHOT_MODELS } from './models.snapshot'
import type { PriceOverride } from './prices.schemas'

export type { EndpointPricing, Modality, ModelEndpoint, ModelEntry, OutputModality } from './model-entry'

/** The text model of new workspaces unless `workspaceDefaults.textModel` says otherwise. */
export const DEFAULT_TEXT_MODEL = 'openai/gpt-4.1-mini'

/** List prices as the dataset had them when this release was built; override them in configuration as they change. */
export const BUILT_IN_MODELS: readonly ModelEntry[] = SNAPSHOT_MODELS

const indexBySlug = (entries: readonly ModelEntry[]) => new Map(entries.map((entry) => [entry.slug, entry]))

/**
 * A catalog lookup that honours a `:variant` suffix by falling back to the base slug. Refreshed prices
 * replace the whole index at once, so a request routed before a refresh keeps the entries it read, and
 * `revision` tells answers built from the catalog (`GET /models`) that they are stale.
 */
export const createModelCatalog = (entries: readonly ModelEntry[]) => {
  let bySlug = indexBySlug(entries)
  let revision = 0
  return {
    find(slug: string): ModelEntry | undefined {
      return bySlug.get(slug) ?? bySlug.get(slug.split(':', 1)[0]!)
    },
    list: (): ModelEntry[] => [...bySlug.values()],
    /** Counts price refreshes: 0 until the first. */
    get revision(): number {
      return revision
    },
    /**
     * Prices `overrides` over the entries the catalog was built with (configured overrides included), replacing
     * any earlier refresh. Throws `UnknownPriceTargetError`, leaving the catalog as it was, when one names
     * a model or endpoint the catalog lacks.
     */
    reprice(overrides: readonly PriceOverride[], path?: string): void {
      bySlug = indexBySlug(applyPriceOverrides(entries, overrides, path))
      revision += 1
    },
  }
}

export type ModelCatalog = ReturnType<typeof createModelCatalog>

/** Built-ins, with configured entries added or replacing built-ins of the same slug. */
export const mergeModels = (configured: readonly ModelEntry[] = []): ModelEntry[] => {
  const merged = indexBySlug(BUILT_IN_MODELS)
  for (const entry of configured) merged.set(entry.slug, entry)
  return [...merged.values()]
}

const OPTIONAL_PRICES = ['cachedPrompt', 'cacheWritePrompt', 'cacheWrite1hPrompt', 'request', 'image', 'webSearch'] as const

const overridePricing = (pricing: EndpointPricing, override: PriceOverride['pricing']): EndpointPricing => {
  const next: EndpointPricing = { ...pricing }
  if (override.prompt !== undefined) next.prompt = override.prompt
  if (override.completion !== undefined) next.completion = override.completion
  for (const field of OPTIONAL_PRICES) {
    const value = override[field]
    if (value === null) delete next[field]
    else if (value !== undefined) next[field] = value
  }
  return next
}

/** Thrown when an override names a model or endpoint the catalog does not have; `path` locates it. */
export class UnknownPriceTargetError extends Error {
  constructor(readonly path: string, message: string) {
    super(`${path}: ${message}`)
    this.name = 'UnknownPriceTargetError'
  }
}

/**
 * `entries` with `overrides` applied in order (a later override of the same price wins). Entries are copied,
 * never changed in place. An override of a model or provider endpoint the catalog lacks is an error, not
 * a no-op: a price that silently applies to nothing is a bill nobody expected.
 */
export const applyPriceOverrides = (entries: readonly ModelEntry[], overrides: readonly PriceOverride[], path = 'prices'): ModelEntry[] => {
  if (overrides.length === 0) return [...entries]
  const bySlug = indexBySlug(entries)
  const changed = new Map<string, ModelEntry>()
  overrides.forEach((override, index) => {
    const entry = changed.get(override.model) ?? bySlug.get(override.model)
    if (!entry) throw new UnknownPriceTargetError(`${path}[${index}].model`, `no model "${override.model}" in the catalog`)
    if (override.provider !== undefined && !entry.endpoints.some((endpoint) => endpoint.provider === override.provider)) {
      throw new UnknownPriceTargetError(`${path}[${index}].provider`, `model "${override.model}" has no endpoint on provider "${override.provider}"`)
    }
    changed.set(entry.slug, {
      ...entry,
      endpoints: entry.endpoints.map((endpoint) =>
        override.provider === undefined || endpoint.provider === override.provider ? { ...endpoint, pricing: overridePricing(endpoint.pricing, override.pricing) } : endpoint,
      ),
    })
  })
  return entries.map((entry) => changed.get(entry.slug) ?? entry)
}
