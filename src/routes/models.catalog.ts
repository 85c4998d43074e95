/**
 * The answers of `GET /models`, `GET /models/{author}/{slug}/endpoints` and `GET /providers`, built
 * once per catalog revision: the models and providers are fixed when `createGateway` returns and only
 * refreshed prices change them, so each JSON text (and its ETag) is computed on first use and served from
 * memory until the next price refresh.
 */

import { cacheJson, type CachedJson } from '../core/cached-json'
import type { ModelEntry } from '../engine/models'
import type { InferenceService } from '../engine/service'
import type { ListModelsQuery } from './models.schemas'
import {
  modelParameters,
  outputModalitiesOf,
  toModelEndpointsWire,
  toModelWire,
  toProviderWire,
  type ServedEndpoint,
} from './models.wire'

/** Distinct filter combinations kept per gateway; others are built per request (still correct, only slower). */
const FILTERED_LISTS_MAX = 64

interface ListedModel {
  entry: ModelEntry
  served: ServedEndpoint[]
  parameters: ReadonlySet<string>
}

/**
 * The endpoints of `entry` this gateway can call: those of a provider it has an adapter for. Whether a key
 * exists is not asked: a workspace may bring its own (BYOK) for any of them.
 */
const servedEndpoints = (inference: InferenceService, entry: ModelEntry): ServedEndpoint[] =>
  entry.endpoints.flatMap((endpoint) => {
    const provider = inference.providers.get(endpoint.provider)
    return provider ? [{ endpoint, provider: provider.descriptor }] : []
  })

const matches = (model: ListedModel, query: ListModelsQuery): boolean => {
  if (query.supported_parameters?.some((parameter) => !model.parameters.has(parameter))) return false
  if (query.output_modalities.includes('all')) return true
  const outputs: readonly string[] = outputModalitiesOf(model.entry)
  return query.output_modalities.some((modality) => outputs.includes(modality))
}

// The same filters in any order are one cache entry.
const cacheKey = (query: ListModelsQuery): string =>
  JSON.stringify([
    [...(query.supported_parameters ?? [])].sort(),
    [...query.output_modalities].sort(),
    query.offset,
    query.limit ?? null,
  ])

const nextPageLink = (basePath: string, query: ListModelsQuery, nextOffset: number): string => {
  const search = new URLSearchParams()
  if (query.supported_parameters) search.set('supported_parameters', query.supported_parameters.join(','))
  search.set('output_modalities', query.output_modalities.join(','))
  search.set('offset', String(nextOffset))
  if (query.limit !== undefined) search.set('limit', String(query.limit))
  return `${basePath}/models?${search}`
}

const createCatalogAnswers = (inference: InferenceService) => {
  const listed: ListedModel[] = inference.models.list().flatMap((entry) => {
    const served = servedEndpoints(inference, entry)
    return served.length > 0 ? [{ entry, served, parameters: new Set(modelParameters(served)) }] : []
  })
  const lists = new Map<string, Promise<CachedJson>>()
  const endpoints = new Map<string, Promise<CachedJson> | null>()
  let providers: Promise<CachedJson> | undefined

  const buildList = (query: ListModelsQuery, basePath: string): Promise<CachedJson> => {
    const selected = listed.filter((model) => matches(model, query))
    const page = selected.slice(query.offset, query.limit === undefined ? undefined : query.offset + query.limit)
    const nextOffset = query.offset + page.length
    return cacheJson({
      data: page.map(({ entry, served }) => toModelWire(entry, served, basePath)),
      total_count: selected.length,
      links: { next: nextOffset < selected.length ? nextPageLink(basePath, query, nextOffset) : null },
    })
  }

  return {
    /** `GET /models` for `query`; `basePath` is where the gateway serves, for the links in the answer. */
    list(query: ListModelsQuery, basePath: string): Promise<CachedJson> {
      const key = cacheKey(query)
      const known = lists.get(key)
      if (known) return known
      const built = buildList(query, basePath)
      if (lists.size < FILTERED_LISTS_MAX) lists.set(key, built)
      return built
    },
    /** `GET /models/{author}/{slug}/endpoints`, or `null` for a model this gateway cannot serve. */
    endpoints(slug: string): Promise<CachedJson> | null {
      const entry = inference.models.find(slug)
      if (!entry) return null
      const known = endpoints.get(entry.slug)
      if (known !== undefined) return known
      const model = listed.find((candidate) => candidate.entry === entry)
      const built = model ? cacheJson({ data: toModelEndpointsWire(entry, model.served) }) : null
      endpoints.set(entry.slug, built)
      return built
    },
    /** `GET /providers`: every provider this gateway can call. */
    providers(): Promise<CachedJson> {
      providers ??= cacheJson({
        data: inference.providers.ids().map((id) => toProviderWire(inference.providers.get(id)!.descriptor)),
      })
      return providers
    },
  }
}

const byGateway = new WeakMap<InferenceService, { revision: number; answers: ReturnType<typeof createCatalogAnswers> }>()

/** The catalog answers of the gateway `inference` belongs to, as of its catalog's current prices. */
export const catalogAnswers = (inference: InferenceService) => {
  const revision = inference.models.revision
  const known = byGateway.get(inference)
  if (known?.revision === revision) return known.answers
  const answers = createCatalogAnswers(inference)
  byGateway.set(inference, { revision, answers })
  return answers
}
