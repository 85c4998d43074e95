/**
 * The answers of `GET /models`, `GET /models/{author}/{slug}/endpoints` and `GET /providers`, built
 * once per catalog revision: the models and providers are fixed when `createGateway` returns and only
 * refreshed prices change them, so each JSON text (and its ETag) is computed on first use and served from
 * memory until the next price refresh. What shows or orders by measured speed (the speed sorts, the endpoints'
 * latency and throughput) changes with the traffic, so it is built per request.
 */

import { cacheJson, type CachedJson } from '../core/cached-json'
import { endpointKey, type EndpointFigures } from '../engine/endpoint-performance'
import type { ModelEntry } from '../engine/models'
import { honouredParameters } from '../engine/routing'
import type { InferenceService } from '../engine/service'
import type { ListModelsQuery } from './models.schemas'
import {
  authorOf,
  inputModalitiesOf,
  modelParameters,
  outputModalitiesOf,
  tokenizerOf,
  toEndpointWire,
  toImageModelWire,
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
  /** USD per million tokens, as the listed `pricing` (the first endpoint's) says. */
  promptPrice: number
  outputPrice: number
  contextLength: number
  /** Lowercase, for `q`. */
  searchText: string
  /** Lowercase provider slugs and display names, for `providers`. */
  providerNames: ReadonlySet<string>
  isZeroDataRetention: boolean
  /** Whether the model's terms allow training other models on its output (`distillable`); unknown counts as no. */
  isDistillable: boolean
}

const DAY_SECONDS = 86_400

/**
 * The endpoints of `entry` this gateway can call: those of a provider it has an adapter for. Whether a key
 * exists is not asked: a workspace may bring its own (BYOK) for any of them.
 */
const servedEndpoints = (inference: InferenceService, entry: ModelEntry): ServedEndpoint[] =>
  entry.endpoints.flatMap((endpoint) => {
    const provider = inference.providers.get(endpoint.provider)
    if (!provider) return []
    // Only what routing would honour: a `stop` the catalog lists for the model is no use through an adapter that cannot send it.
    const supportedParameters = honouredParameters(endpoint, provider)
    const honoured = supportedParameters === endpoint.supportedParameters ? endpoint : { ...endpoint, supportedParameters }
    return [{ endpoint: honoured, provider: provider.descriptor, adapter: provider.adapter }]
  })

const toListed = (entry: ModelEntry, served: ServedEndpoint[]): ListedModel => {
  const { pricing } = served[0]!.endpoint
  return {
    entry,
    served,
    parameters: new Set(modelParameters(served)),
    promptPrice: pricing.prompt * 1_000_000,
    outputPrice: pricing.completion * 1_000_000,
    contextLength: Math.max(...served.map(({ endpoint }) => endpoint.contextLength)),
    searchText: `${entry.slug}\n${entry.name}`.toLowerCase(),
    providerNames: new Set(served.flatMap(({ provider }) => [provider.id.toLowerCase(), provider.displayName.toLowerCase()])),
    isZeroDataRetention: served.some(({ endpoint }) => endpoint.isZeroDataRetention === true),
    isDistillable: served.some(({ endpoint }) => endpoint.isDistillable === true),
  }
}

const within = (value: number, minimum: number | undefined, maximum: number | undefined) =>
  (minimum === undefined || value >= minimum) && (maximum === undefined || value <= maximum)

/**
 * Whether `model` passes every filter of `query` (docs/decisions.md, "Model and provider catalog"). Lists in
 * `supported_parameters` and `input_modalities` must all hold; `output_modalities`, `model_authors` and
 * `providers` need any one. A model of unknown release date (`created` 0) has no age, so age filters drop it.
 */
const matches = (model: ListedModel, query: ListModelsQuery, nowSeconds: number): boolean => {
  const { entry } = model
  if (query.supported_parameters?.some((parameter) => !model.parameters.has(parameter))) return false
  if (!query.output_modalities.includes('all')) {
    const outputs: readonly string[] = outputModalitiesOf(entry)
    if (!query.output_modalities.some((modality) => outputs.includes(modality))) return false
  }
  if (query.input_modalities?.some((modality) => !inputModalitiesOf(entry).includes(modality))) return false
  if (query.q && !model.searchText.includes(query.q.toLowerCase())) return false
  if (query.context !== undefined && model.contextLength < query.context) return false
  if (!within(model.promptPrice, query.min_price, query.max_price)) return false
  if (!within(model.outputPrice, query.min_output_price, query.max_output_price)) return false
  if (query.model_authors && !query.model_authors.some((author) => author.toLowerCase() === authorOf(entry.slug).toLowerCase())) return false
  if (query.providers && !query.providers.some((provider) => model.providerNames.has(provider.toLowerCase()))) return false
  if (query.arch && tokenizerOf(entry).toLowerCase() !== query.arch.toLowerCase()) return false
  if (query.zdr && !model.isZeroDataRetention) return false
  // OpenRouter's meaning: `true` keeps only the distillable models, `false` leaves them out.
  if (query.distillable !== undefined && model.isDistillable !== (query.distillable === 'true')) return false
  if (query.min_age_days !== undefined || query.max_age_days !== undefined) {
    if (!entry.created) return false
    const ageDays = Math.floor((nowSeconds - entry.created) / DAY_SECONDS)
    if (!within(ageDays, query.min_age_days, query.max_age_days)) return false
  }
  return true
}

/** The orders measured speed decides: their answers change with the traffic, so they are never cached. */
const SPEED_SORTS: ReadonlySet<ListModelsQuery['sort']> = new Set(['throughput-high-to-low', 'latency-low-to-high'] as const)

/** A model's measured speed: its best measured endpoint's median (`undefined` while none is measured). */
interface ModelSpeed {
  latencyMs(model: ListedModel): number | undefined
  tokensPerSecond(model: ListedModel): number | undefined
}

/** Measured models first, best first; the unmeasured after them in the catalog's order. */
const bySpeed = (models: ListedModel[], figureOf: (model: ListedModel) => number | undefined, isHigherBetter: boolean): ListedModel[] => {
  const figures = new Map(models.map((model) => [model, figureOf(model)]))
  return [...models].sort((left, right) => {
    const [one, other] = [figures.get(left), figures.get(right)]
    if (one === undefined || other === undefined) return (one === undefined ? 1 : 0) - (other === undefined ? 1 : 0)
    return isHigherBetter ? other - one : one - other
  })
}

/** Stable, so models that tie keep the catalog's order. */
const sorted = (models: ListedModel[], sort: ListModelsQuery['sort'], speed: ModelSpeed): ListedModel[] => {
  // In whole millionths of a dollar per million tokens: prices that are equal on paper (0.4 + 1.6 and 0.5 + 1.5)
  // must tie, which their binary floating-point sums do not always do.
  const averagePrice = (model: ListedModel) => Math.round((model.promptPrice + model.outputPrice) * 500_000)
  switch (sort) {
    case undefined:
      return models
    case 'pricing-low-to-high':
      return [...models].sort((left, right) => averagePrice(left) - averagePrice(right))
    case 'pricing-high-to-low':
      return [...models].sort((left, right) => averagePrice(right) - averagePrice(left))
    case 'context-high-to-low':
      return [...models].sort((left, right) => right.contextLength - left.contextLength)
    case 'newest':
      return [...models].sort((left, right) => (right.entry.created ?? 0) - (left.entry.created ?? 0))
    case 'latency-low-to-high':
      return bySpeed(models, speed.latencyMs, false)
    case 'throughput-high-to-low':
      return bySpeed(models, speed.tokensPerSecond, true)
  }
}

/** The query as a search string: every filter given, lists joined by commas, in a fixed order. */
const toSearch = (query: ListModelsQuery, offset: number): URLSearchParams => {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(query).sort(([left], [right]) => left.localeCompare(right))) {
    if (value === undefined || name === 'offset') continue
    search.set(name, Array.isArray(value) ? value.join(',') : String(value))
  }
  search.set('offset', String(offset))
  return search
}

// The same filters in any order are one cache entry.
const cacheKey = (query: ListModelsQuery): string =>
  JSON.stringify(Object.entries(query).sort(([left], [right]) => left.localeCompare(right)).map(([name, value]) => [name, Array.isArray(value) ? [...value].sort() : value]))

const nextPageLink = (basePath: string, query: ListModelsQuery, nextOffset: number): string => `${basePath}/models?${toSearch(query, nextOffset)}`

const createCatalogAnswers = (inference: InferenceService) => {
  const listed: ListedModel[] = inference.models.list().flatMap((entry) => {
    const served = servedEndpoints(inference, entry)
    return served.length > 0 ? [toListed(entry, served)] : []
  })
  const lists = new Map<string, Promise<CachedJson>>()
  /**
   * An endpoint's figures as an anonymous caller's request routes on them: those of the gateway's shared key, or of
   * callers' own keys for a provider the gateway has no key for (src/engine/routing.ts reads them the same way).
   */
  const figuresOf = ({ endpoint, provider }: ServedEndpoint): EndpointFigures | undefined =>
    inference.performance.figures(endpointKey(inference.providers.get(provider.id)?.shared === null ? 'byok' : 'shared', provider.id, endpoint.model))
  const best = (model: ListedModel, figureOf: (figures: EndpointFigures) => number | undefined, pick: (...values: number[]) => number) => {
    const measured = model.served.flatMap((one) => {
      const figures = figuresOf(one)
      const value = figures && figureOf(figures)
      return value === undefined ? [] : [value]
    })
    return measured.length > 0 ? pick(...measured) : undefined
  }
  const speed: ModelSpeed = {
    latencyMs: (model) => best(model, (figures) => figures.latencyMs.p50, Math.min),
    tokensPerSecond: (model) => best(model, (figures) => figures.tokensPerSecond?.p50, Math.max),
  }
  let providers: Promise<CachedJson> | undefined
  let imageModels: Promise<CachedJson> | undefined

  const buildList = (query: ListModelsQuery, basePath: string, isIncluded?: (entry: ModelEntry) => boolean): Promise<CachedJson> => {
    const nowSeconds = Math.floor(inference.now() / 1000)
    const selected = sorted(
      listed.filter((model) => matches(model, query, nowSeconds) && (!isIncluded || isIncluded(model.entry))),
      query.sort,
      speed,
    )
    const page = selected.slice(query.offset, query.limit === undefined ? undefined : query.offset + query.limit)
    const nextOffset = query.offset + page.length
    return cacheJson({
      data: page.map(({ entry, served }) => toModelWire(entry, served, basePath)),
      total_count: selected.length,
      links: { next: nextOffset < selected.length ? nextPageLink(basePath, query, nextOffset) : null },
    })
  }

  return {
    /**
     * `GET /models` for `query`; `basePath` is where the gateway serves, for the links in the answer.
     * `isIncluded` narrows the list further (one caller's usable models), so that answer is never cached.
     */
    list(query: ListModelsQuery, basePath: string, isIncluded?: (entry: ModelEntry) => boolean): Promise<CachedJson> {
      if (isIncluded) return buildList(query, basePath, isIncluded)
      // An age filter's answer changes with the clock, a speed sort's with the traffic: built each time.
      if (query.min_age_days !== undefined || query.max_age_days !== undefined || SPEED_SORTS.has(query.sort)) return buildList(query, basePath)
      const key = cacheKey(query)
      const known = lists.get(key)
      if (known) return known
      const built = buildList(query, basePath)
      if (lists.size < FILTERED_LISTS_MAX) lists.set(key, built)
      return built
    },
    /** `GET /models/{author}/{slug}/endpoints` with the figures measured so far, or `null` for a model this gateway cannot serve. */
    endpoints(slug: string): Promise<CachedJson> | null {
      const entry = inference.models.find(slug)
      const model = entry && listed.find((candidate) => candidate.entry === entry)
      return model ? cacheJson({ data: toModelEndpointsWire(model.entry, model.served, figuresOf) }) : null
    },
    /** `GET /model/{author}/{slug}`: the model as `GET /models` lists it, or `null` for one this gateway cannot serve. */
    model(slug: string, basePath: string): Promise<CachedJson> | null {
      const entry = inference.models.find(slug)
      const model = entry && listed.find((candidate) => candidate.entry === entry)
      return model ? cacheJson({ data: toModelWire(model.entry, model.served, basePath) }) : null
    },
    /** `GET /models/count`: how many models `GET /models` lists for these output modalities. */
    count(outputModalities: ListModelsQuery['output_modalities']): number {
      const query = { output_modalities: outputModalities, offset: 0 } as ListModelsQuery
      return listed.filter((model) => matches(model, query, 0)).length
    },
    /** `GET /endpoints/zdr`: every served endpoint that keeps no data (`isZeroDataRetention`). */
    zeroDataRetentionEndpoints(): Promise<CachedJson> {
      return cacheJson({
        data: listed.flatMap(({ entry, served }) => served.filter(({ endpoint }) => endpoint.isZeroDataRetention === true).map((one) => toEndpointWire(entry, one, figuresOf(one)))),
      })
    },
    /** `GET /images/models`: the models that draw. */
    imageModels(basePath: string): Promise<CachedJson> {
      imageModels ??= cacheJson({
        data: listed.filter(({ entry }) => outputModalitiesOf(entry).includes('image')).map(({ entry, served }) => toImageModelWire(entry, served, basePath)),
      })
      return imageModels
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
/** How long anyone may reuse a catalog answer: the same for every caller; a minute bounds how long a redeploy goes unseen. */
export const CATALOG_CACHE_CONTROL = 'public, max-age=60'

/**
 * The gateway's base path as `request` reached it, for the links in catalog answers: its path without the segments
 * of `routePath` (the route's own pattern, so `/model/:author/:slug` takes three, however they were encoded).
 */
export const basePathOf = (request: Request, routePath: string): string => {
  const segments = new URL(request.url).pathname.replace(/\/+$/, '').split('/')
  return segments.slice(0, segments.length - (routePath.split('/').length - 1)).join('/')
}

export const catalogAnswers = (inference: InferenceService) => {
  const revision = inference.models.revision
  const known = byGateway.get(inference)
  if (known?.revision === revision) return known.answers
  const answers = createCatalogAnswers(inference)
  byGateway.set(inference, { revision, answers })
  return answers
}
