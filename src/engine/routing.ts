/**
 * Which endpoints to try, in which order (docs/decisions.md, Errors and routing and BYOK): the requested model's endpoints, then
 * each fallback model's; provider preferences filter and order them; the workspace's BYOK keys
 * become endpoint copies (prioritized keys first, then shared endpoints, then fallback keys).
 */

import { InvalidRequestError, NotFoundError } from '../core/errors'
import { keyVariable } from '../providers/catalog'
import { extensionsUsed, REQUEST_EXTENSION_NAMES, type RequestExtensionName, type RequestExtensions } from '../providers/types'
import type { ByokRecord } from '../repositories/byok-credentials'
import type { ModelCatalog, ModelEndpoint, ModelEntry } from './models'
import type { ProviderRegistry, ResolvedProvider } from './providers'
import type { ProviderPreferences } from './request.schemas'
import type { EndpointPolicy } from './endpoint-policy'
import { endpointKey, type EndpointFigures, type EndpointPerformance, type KeyKind, type Percentiles } from './endpoint-performance'
import { routingVariantOf } from './model-variants'
import { balanceByPrice } from './balancing'

export interface Attempt {
  model: ModelEntry
  endpoint: ModelEndpoint
  provider: ResolvedProvider
  /** The caller's own key for this attempt, or `null` for the operator's shared key. */
  credential: ByokRecord | null
  /** The measured figures a speed sort or preference ordered this endpoint by (`service_metadata`); absent otherwise. */
  figures?: EndpointFigures | null
  /** Under the default load balancing, the chance the weighted pick gave this endpoint; absent when it was no candidate. */
  share?: number
  /** Whether the weighted pick chose this endpoint (balancing.ts). */
  isWeightedPick?: boolean
}

/** What the default load balancing needs of the engine (balancing.ts): a random source and the endpoints' health. */
export interface RoutingBalancing {
  /** A number in [0, 1); `Math.random` unless a test injects its own. */
  random: () => number
  /** Whether `endpoint` is set aside: its upstream failed within the last 30 s, or it is ejected. */
  isSetAside(model: ModelEntry, endpoint: ModelEndpoint, provider: ResolvedProvider): boolean
}

export interface RoutingInput {
  /** Requested models in priority order (`model` first, then `models`). */
  models: string[]
  preferences: ProviderPreferences | null | undefined
  /** Request parameters the caller set (for `require_parameters`). */
  parametersUsed: string[]
  /** The request's `modalities`: only models that produce every one of them are routed to. */
  modalities?: readonly string[] | undefined
  /** `embeddings` plans `POST /embeddings`: embedding models only, through adapters that serve embeddings. Absent: a generation. */
  purpose?: 'embeddings'
  /**
   * Parameters the caller set that no endpoint may ignore, each with where the caller wrote it (`body.stop`):
   * request extensions, and body fields whose loss would change what the caller gets or pays for
   * (`mustHonour`). Only endpoints that honour all of them (`honoursParameter`) are tried, whatever
   * `require_parameters` says: another would drop them without a word.
   */
  mustHonour?: ReadonlyArray<{ name: string; field: string }>
  /** All BYOK credentials of the workspace. */
  credentials: ByokRecord[]
  callerKeyHash: string
  /**
   * The user behind the calling key (its `creator_user_id`), which `allowed_user_ids` match. Never
   * the request's `user` field: any caller may write anything there.
   */
  callerUserId: string
  /** The rules of the guardrails governing the caller: endpoints they refuse are never attempted. */
  policy?: EndpointPolicy
  /** The measured endpoint speeds the speed sorts and preferences order by; every endpoint unmeasured without it. */
  performance?: Pick<EndpointPerformance, 'figures'>
  /** The workspace's `default_provider_sort`, for a request that sets no `provider.sort`. */
  defaultSort?: SortBy
  /**
   * The default load balancing, for a model whose order the caller leaves to the gateway; absent (`routing.balancing:
   * 'cheapest'`), such a model's endpoints go cheapest first.
   */
  balancing?: RoutingBalancing
}

/** What endpoints are ordered by. */
export type SortBy = 'price' | 'throughput' | 'latency' | 'exacto'

const baseSlug = (slug: string) => slug.split('/', 1)[0]!

/** A base slug matches every variant of its provider (docs/decisions.md, BYOK); a variant matches only itself. */
const matchesProvider = (endpointProvider: string, wanted: string) =>
  wanted.includes('/') ? endpointProvider === wanted : baseSlug(endpointProvider) === wanted

const listPrice = (endpoint: ModelEndpoint) => endpoint.pricing.prompt + endpoint.pricing.completion

const toPerMillion = (value: string | number) => Number(value) / 1_000_000

const withinMaxPrice = (endpoint: ModelEndpoint, maxPrice: NonNullable<ProviderPreferences['max_price']>) =>
  (maxPrice.prompt === undefined || endpoint.pricing.prompt <= toPerMillion(maxPrice.prompt)) &&
  (maxPrice.completion === undefined || endpoint.pricing.completion <= toPerMillion(maxPrice.completion)) &&
  (maxPrice.request === undefined || (endpoint.pricing.request ?? 0) <= Number(maxPrice.request)) &&
  (maxPrice.image === undefined || (endpoint.pricing.image ?? 0) <= Number(maxPrice.image))

const sortBy = (preferences: ProviderPreferences | null | undefined, defaultSort: SortBy | undefined) => {
  const sort = preferences?.sort ?? defaultSort
  if (!sort) return undefined
  const chosen = typeof sort === 'string' ? { by: sort, partition: 'model' as const } : { by: sort.by, partition: sort.partition ?? 'model' }
  if (chosen.by === 'exacto') {
    throw new InvalidRequestError(
      `${preferences?.sort ? 'provider.sort' : "the workspace's default_provider_sort"}: "exacto" is not supported: the gateway has no tool-calling quality figures to route on`,
    )
  }
  return chosen
}

/** The figures an endpoint is ordered by, or null while it is unmeasured. */
type FiguresOf = (endpoint: ModelEndpoint) => EndpointFigures | null

const PERCENTILES = ['p50', 'p75', 'p90', 'p99'] as const

/** A preference as thresholds per percentile: a bare number is the median's (spec: `preferred_*`). */
const thresholdsOf = (preference: number | Partial<Percentiles> | undefined): Partial<Percentiles> | undefined =>
  preference === undefined ? undefined : typeof preference === 'number' ? { p50: preference } : preference

/**
 * Whether measured figures miss the caller's `preferred_max_latency` (seconds) or `preferred_min_throughput`
 * (tokens per second) at any percentile given. Unmeasured, an endpoint misses nothing: it is tried so figures exist.
 */
const missesPreferences = (figures: EndpointFigures | null, maxLatency: Partial<Percentiles> | undefined, minThroughput: Partial<Percentiles> | undefined) => {
  if (!figures) return false
  for (const percentile of PERCENTILES) {
    const latencyLimit = maxLatency?.[percentile]
    if (latencyLimit !== undefined && figures.latencyMs[percentile] > latencyLimit * 1000) return true
    const throughputFloor = minThroughput?.[percentile]
    // No throughput measured (answers without token counts) cannot be said to miss it.
    if (throughputFloor !== undefined && figures.tokensPerSecond && figures.tokensPerSecond[percentile] < throughputFloor) return true
  }
  return false
}

/** Which endpoints miss the caller's `preferred_*` (never one, without them). */
const missesOf = (preferences: ProviderPreferences, figuresOf: FiguresOf) => {
  const maxLatency = thresholdsOf(preferences.preferred_max_latency)
  const minThroughput = thresholdsOf(preferences.preferred_min_throughput)
  if (!maxLatency && !minThroughput) return () => false
  return (endpoint: ModelEndpoint) => missesPreferences(figuresOf(endpoint), maxLatency, minThroughput)
}

/**
 * Whether the caller left the order of a model's endpoints to the gateway (OpenRouter: load balancing applies): no
 * `provider.sort` or `provider.order`, no `:nitro` or `:floor`, and no workspace default sort but `price`, the one every
 * workspace starts with, which names OpenRouter's default: balancing that favours the cheap.
 */
const leavesOrderToGateway = (preferences: ProviderPreferences, input: RoutingInput, variant: string | undefined) =>
  preferences.sort === undefined && preferences.order === undefined && (input.defaultSort === undefined || input.defaultSort === 'price') && variant !== 'nitro' && variant !== 'floor'

/**
 * The sort key of an endpoint under `by`, smaller first. Price: the list price. Latency and throughput: unmeasured
 * endpoints first, in the order they came (so each gets measured), then the measured by median latency, or by median
 * throughput from the fastest; an endpoint with latency but no throughput figures after those with.
 */
const rankUnder = (by: SortBy, endpoint: ModelEndpoint, figures: EndpointFigures | null): [number, number] => {
  if (by === 'price') return [0, listPrice(endpoint)]
  if (!figures) return [0, 0]
  if (by === 'latency') return [1, figures.latencyMs.p50]
  return figures.tokensPerSecond ? [1, -figures.tokensPerSecond.p50] : [2, 0]
}

const compareRanks = (left: [number, number], right: [number, number]) => left[0] - right[0] || left[1] - right[1]

/**
 * Orders `items` (stable) by `by`, the price when no sort is set; then those that miss a `preferred_*` go after those
 * that do not (deprioritised, never dropped).
 */
const orderBySpeedAndPrice = <T>(items: T[], endpointOf: (item: T) => ModelEndpoint, by: SortBy, preferences: ProviderPreferences, figuresOf: FiguresOf): T[] => {
  const maxLatency = thresholdsOf(preferences.preferred_max_latency)
  const minThroughput = thresholdsOf(preferences.preferred_min_throughput)
  const ranked = items.map((item) => {
    const endpoint = endpointOf(item)
    const figures = by === 'price' && !maxLatency && !minThroughput ? null : figuresOf(endpoint)
    return { item, rank: rankUnder(by, endpoint, figures), misses: missesPreferences(figures, maxLatency, minThroughput) ? 1 : 0 }
  })
  ranked.sort((left, right) => left.misses - right.misses || compareRanks(left.rank, right.rank))
  return ranked.map(({ item }) => item)
}

/** Whether the request orders by measured speed at all (a speed sort or a preference): only then are figures read. */
const readsFigures = (by: SortBy, preferences: ProviderPreferences) =>
  by === 'latency' || by === 'throughput' || preferences.preferred_max_latency !== undefined || preferences.preferred_min_throughput !== undefined

const isFree = (endpoint: ModelEndpoint) =>
  endpoint.pricing.prompt === 0 && endpoint.pricing.completion === 0 && !endpoint.pricing.request && !endpoint.pricing.image

/** Whether a credential may serve this model for this caller (spec: allowed_* filters must all match, on the caller's key). */
const credentialApplies = (credential: ByokRecord, model: ModelEntry, input: RoutingInput) =>
  !credential.disabled &&
  (credential.allowedModels === null || credential.allowedModels.includes(model.slug)) &&
  (credential.allowedApiKeyHashes === null || credential.allowedApiKeyHashes.includes(input.callerKeyHash)) &&
  (credential.allowedUserIds === null || credential.allowedUserIds.includes(input.callerUserId))

// spec declared_zdr: true allows ZDR-requiring requests even when the shared endpoint retains data; false never.
const credentialMeetsZdr = (credential: ByokRecord, endpoint: ModelEndpoint, requiresZdr: boolean) =>
  !requiresZdr || credential.declaredZdr === true || (credential.declaredZdr === null && endpoint.isZeroDataRetention === true)

/**
 * Whether `endpoint` honours request extension `name`: its adapter sends it upstream (`requestExtensions`) and the
 * catalog lists it among the endpoint's parameters (the model behind it accepts it). Both, because the catalog
 * describes the model while the adapter decides what reaches it: a model that takes `stop` over Chat Completions
 * gets none through the Responses API.
 */
export const honoursExtension = (endpoint: ModelEndpoint, provider: Pick<ResolvedProvider, 'adapter'>, name: RequestExtensionName): boolean =>
  provider.adapter.requestExtensions?.includes(name) === true && endpoint.supportedParameters?.includes(name) === true

const isExtensionName = (parameter: string): parameter is RequestExtensionName => (REQUEST_EXTENSION_NAMES as readonly string[]).includes(parameter)

const NATIVE_WEB_SEARCH = 'web_search'
const isNativeWebSearchName = (name: string) => name === NATIVE_WEB_SEARCH || name.startsWith(`${NATIVE_WEB_SEARCH}.`)

/**
 * Whether `endpoint`'s adapter runs the provider's own web search (`web_search`) with parameter `web_search.<name>`.
 * The adapter alone decides: the catalog does not say which models search, and a provider refuses a model that
 * cannot with a 400 of its own.
 */
const honoursNativeWebSearch = (provider: Pick<ResolvedProvider, 'adapter'>, name: string): boolean => {
  const declared = provider.adapter.nativeWebSearch
  if (!declared) return false
  return name === NATIVE_WEB_SEARCH || (declared as readonly string[]).includes(name.slice(NATIVE_WEB_SEARCH.length + 1))
}

/** How `mustHonour` names a provider tool: its type behind this prefix (`tool:web_search`). */
const PROVIDER_TOOL = 'tool:'

/** How `mustHonour` names a processing tier: behind this prefix (`service_tier:flex`). */
const SERVICE_TIER = 'service_tier:'

/** `fast` is the spec's alias of `priority`; `auto` and `default` are what every provider does without a tier. */
const tierAsked = (tier: unknown): string | undefined => {
  if (typeof tier !== 'string' || tier === 'auto' || tier === 'default') return undefined
  return tier === 'fast' ? 'priority' : tier
}

/**
 * Whether `endpoint` honours parameter `name`: a provider tool when its adapter sends that tool type upstream, an
 * extension as `honoursExtension` says, the native web search as its adapter declares, any other when the catalog
 * lists it.
 */
const honoursParameter = (endpoint: ModelEndpoint, provider: Pick<ResolvedProvider, 'adapter'>, name: string): boolean => {
  if (name.startsWith(SERVICE_TIER)) return provider.adapter.serviceTiers?.includes(name.slice(SERVICE_TIER.length)) === true
  if (name.startsWith(PROVIDER_TOOL)) return provider.adapter.providerTools?.includes(name.slice(PROVIDER_TOOL.length)) === true
  if (isExtensionName(name)) return honoursExtension(endpoint, provider, name)
  if (isNativeWebSearchName(name)) return honoursNativeWebSearch(provider, name)
  return endpoint.supportedParameters?.includes(name) === true
}

/**
 * The parameters `endpoint` honours through `provider`: the catalog's, less the extensions its adapter cannot send
 * (and `top_logprobs` with `logprobs`), so `GET /models` never lists what routing would refuse.
 */
export const honouredParameters = (endpoint: ModelEndpoint, provider: Pick<ResolvedProvider, 'adapter'>): readonly string[] | undefined => {
  const parameters = endpoint.supportedParameters
  if (!parameters) return parameters
  const isHonoured = (parameter: string) =>
    isExtensionName(parameter) ? honoursExtension(endpoint, provider, parameter) : parameter !== 'top_logprobs' || honoursExtension(endpoint, provider, 'logprobs')
  return parameters.every(isHonoured) ? parameters : parameters.filter(isHonoured)
}

/**
 * Every endpoint that could otherwise serve was left out because it cannot honour a parameter the caller set:
 * a 400 naming the fields, since no retry can help.
 */
const unhonouredError = (models: string[], mustHonour: NonNullable<RoutingInput['mustHonour']>, ruledOut: Array<{ endpoint: ModelEndpoint; provider: ResolvedProvider }>) => {
  const missing = mustHonour.filter(({ name }) => ruledOut.some(({ endpoint, provider }) => !honoursParameter(endpoint, provider, name)))
  return new InvalidRequestError(`${listed(missing.map(({ field }) => field))}: not supported by any endpoint of ${models.join(', ')}`)
}

const listed = (items: string[]) => (items.length === 1 ? items[0]! : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`)

/**
 * No endpoint is usable because no key is: say which provider needs one, where the gateway reads it and that the
 * caller's own (BYOK) key works too. A 404 as for other "no endpoint" answers: retrying cannot help, so never a 5xx.
 */
const noKeyError = (models: string[], providers: ResolvedProvider[]) => {
  const ids = providers.map((provider) => provider.descriptor.id)
  const option = ids.length === 1 ? `providers.${ids[0]}.apiKey` : 'providers.<id>.apiKey'
  return new NotFoundError(
    `No provider key for ${models.join(', ')}: the gateway has none for ${listed(providers.map((provider) => provider.descriptor.displayName))} ` +
      `(set ${listed(ids.map(keyVariable))}, or ${option}) and this workspace has no BYOK credential that applies ` +
      `(POST /byok with provider ${listed(ids.map((id) => `"${id}"`))})`,
    { metadata: { error_type: 'not_found' } },
  )
}

const outputsOf = (model: ModelEntry): readonly string[] => model.outputModalities ?? ['text']

/** An embedding model writes vectors, not text: only `POST /embeddings` runs it. */
export const isEmbeddingModel = (model: ModelEntry): boolean => outputsOf(model).includes('embeddings')

/** A model of the wrong kind for the request: an embedding model asked to generate, or the other way round. */
const wrongKindError = (slug: string, purpose: RoutingInput['purpose']) =>
  new InvalidRequestError(
    purpose === 'embeddings'
      ? `model: "${slug}" is not an embedding model (GET /embeddings/models lists them)`
      : `model: "${slug}" is an embedding model; send it to POST /embeddings`,
  )

/** Whether `model` produces every modality asked for (OpenRouter routes only to such models). */
const producesAll = (model: ModelEntry, modalities: readonly string[] | undefined) =>
  !modalities || modalities.every((modality) => outputsOf(model).includes(modality))

/** None of the requested models can answer with what `modalities` asks for: the caller's request to fix. */
const modalitiesError = (models: ModelEntry[], modalities: readonly string[]) => {
  const lacking = modalities.filter((modality) => models.some((model) => !outputsOf(model).includes(modality)))
  return new InvalidRequestError(
    `modalities: ${listed(models.map((model) => model.slug))} cannot answer with ${listed([...new Set(lacking)].map((modality) => `"${modality}"`))} output; ` +
      'choose a model whose output_modalities include it (GET /models?output_modalities=image lists the image models)',
  )
}

export const planAttempts = (catalog: ModelCatalog, registry: ProviderRegistry, input: RoutingInput): Attempt[] => {
  const preferences = input.preferences ?? {}
  const sort = sortBy(preferences, input.defaultSort)
  const requiresZdr = preferences.zdr === true
  const perModel: Attempt[][] = []
  // Providers whose endpoints were left out only because neither the gateway nor the workspace has a key for them.
  const withoutKey = new Map<string, ResolvedProvider>()
  // Requested models that cannot produce what `modalities` asks for, skipped as OpenRouter skips them.
  const incapable: ModelEntry[] = []
  const mustHonour = input.mustHonour ?? []
  // Endpoints left out because they cannot honour a parameter the caller set.
  const unhonoured: Array<{ endpoint: ModelEndpoint; provider: ResolvedProvider }> = []
  const policy = input.policy
  // Preference fields that left out endpoints whose facts (data policy, quantization) the catalog lacks.
  const unknownFacts = new Set<string>()
  // Preference fields that left out endpoints the catalog knows fail them, each with what the facts say.
  const failedFacts = new Map<string, string>()
  // Requested `:free` and `:thinking` models none of whose endpoints is free, or reasons.
  const unservedVariants: Array<{ slug: string; variant: 'free' | 'thinking' }> = []
  // Whether a guardrail left out a model or an endpoint: with nothing left, the guardrail is what to name.
  let isNarrowedByPolicy = false

  for (const slug of input.models) {
    const model = catalog.find(slug)
    if (!model) throw new NotFoundError(`Model "${slug}" not found`, { metadata: { error_type: 'not_found' } })
    const variant = routingVariantOf(slug, model)
    if ((input.purpose === 'embeddings') !== isEmbeddingModel(model)) {
      // A generation's fallback list may hold one by mistake: skipped like a model that cannot draw, refused when it is all there is.
      if (input.purpose === 'embeddings' || input.models.length === 1) throw wrongKindError(slug, input.purpose)
      incapable.push(model)
      continue
    }
    if (!producesAll(model, input.modalities)) {
      incapable.push(model)
      continue
    }

    if (policy && !policy.allowsModel(model)) {
      isNarrowedByPolicy = true
      continue
    }
    let endpoints = model.endpoints.filter((endpoint) => registry.get(endpoint.provider))
    if (input.purpose === 'embeddings') endpoints = endpoints.filter((endpoint) => registry.get(endpoint.provider)!.adapter.embeddings !== undefined)
    if (policy) {
      const allowed = endpoints.filter((endpoint) => policy.allowsEndpoint(model, endpoint))
      if (allowed.length < endpoints.length) isNarrowedByPolicy = true
      endpoints = allowed
    }
    const requiresZdrHere = requiresZdr || policy?.requiresZdr(model) === true
    if (preferences.only) endpoints = endpoints.filter((endpoint) => preferences.only!.some((wanted) => matchesProvider(endpoint.provider, wanted)))
    if (preferences.ignore) endpoints = endpoints.filter((endpoint) => !preferences.ignore!.some((wanted) => matchesProvider(endpoint.provider, wanted)))
    if (preferences.max_price) endpoints = endpoints.filter((endpoint) => withinMaxPrice(endpoint, preferences.max_price!))
    if (preferences.require_parameters) {
      endpoints = endpoints.filter((endpoint) => input.parametersUsed.every((parameter) => endpoint.supportedParameters?.includes(parameter)))
    }
    // Filters on data policy and weights: an endpoint whose fact the catalog lacks is excluded, and the 404 says so.
    for (const filter of factFilters(preferences)) {
      const kept = endpoints.filter(filter.keeps)
      if (kept.length < endpoints.length && endpoints.some((endpoint) => filter.isUnknown(endpoint))) unknownFacts.add(filter.field)
      if (endpoints.some((endpoint) => !filter.keeps(endpoint) && !filter.isUnknown(endpoint))) failedFacts.set(filter.field, filter.failedAs)
      endpoints = kept
    }
    if (mustHonour.length > 0) {
      endpoints = endpoints.filter((endpoint) => {
        const provider = registry.get(endpoint.provider)!
        if (mustHonour.every(({ name }) => honoursParameter(endpoint, provider, name))) return true
        unhonoured.push({ endpoint, provider })
        return false
      })
    }

    if (variant === 'free' || variant === 'thinking') {
      const kept = endpoints.filter(variant === 'free' ? isFree : reasons)
      if (kept.length === 0 && endpoints.length > 0) unservedVariants.push({ slug, variant })
      endpoints = kept
    }

    // `:nitro` and `:floor` choose this model's order; else the request's sort, the workspace's, or price.
    const by: SortBy = variant === 'nitro' ? 'throughput' : variant === 'floor' ? 'price' : (sort?.by ?? 'price')
    const figuresOf = figuresFor(input, registry)
    endpoints = orderBySpeedAndPrice(endpoints, (endpoint) => endpoint, by, preferences, figuresOf)
    if (preferences.order) {
      const rank = (endpoint: ModelEndpoint) => {
        const index = preferences.order!.findIndex((wanted) => matchesProvider(endpoint.provider, wanted))
        return index < 0 ? Number.MAX_SAFE_INTEGER : index
      }
      endpoints = [...endpoints].sort((left, right) => rank(left) - rank(right))
      // allow_fallbacks false with an order: only the listed providers.
      if (preferences.allow_fallbacks === false) endpoints = endpoints.filter((endpoint) => rank(endpoint) !== Number.MAX_SAFE_INTEGER)
    }

    // Each endpoint's attempts: the caller's prioritized keys, the shared key, the caller's fallback keys.
    const servable: EndpointAttempts[] = []
    for (const endpoint of endpoints) {
      const prioritized: Attempt[] = []
      const shared: Attempt[] = []
      const fallbackKeys: Attempt[] = []
      const provider = registry.get(endpoint.provider)!
      const forProvider = input.credentials.filter((credential) => baseSlug(credential.provider) === baseSlug(endpoint.provider) && (!credential.provider.includes('/') || credential.provider === endpoint.provider))
      const active = forProvider.filter((credential) => !credential.disabled)
      // spec is_byok_only: shared capacity on this provider is gone for every model; is_required: for the models it covers.
      const isSharedRemoved = active.some(
        (credential) => credential.isByokOnly || (credential.isRequired && (credential.allowedModels === null || credential.allowedModels.includes(model.slug))),
      )
      const usable = active
        .filter((credential) => credentialApplies(credential, model, input) && credentialMeetsZdr(credential, endpoint, requiresZdrHere))
        .sort((left, right) => left.sortOrder - right.sortOrder || left.createdAt.localeCompare(right.createdAt))
      const figures = readsFigures(by, preferences) ? { figures: figuresOf(endpoint) } : {}
      for (const credential of usable) {
        ;(credential.isFallback ? fallbackKeys : prioritized).push({ model, endpoint, provider, credential, ...figures })
      }
      const sharedMayServe = !isSharedRemoved && (!requiresZdrHere || endpoint.isZeroDataRetention === true)
      if (!sharedMayServe && requiresZdrHere && !requiresZdr && usable.length === 0) isNarrowedByPolicy = true
      if (sharedMayServe && provider.shared !== null) shared.push({ model, endpoint, provider, credential: null, ...figures })
      else if (sharedMayServe && usable.length === 0) withoutKey.set(provider.descriptor.id, provider)
      if (prioritized.length + shared.length + fallbackKeys.length > 0) servable.push({ endpoint, prioritized, shared, fallbackKeys })
    }
    // Balanced among the endpoints some key can reach: a pick no key serves would hand its share to the next one.
    const balancing = input.balancing
    const ordered =
      balancing && servable.length > 1 && leavesOrderToGateway(preferences, input, variant)
        ? balanceAttempts(servable, tierOf(model, balancing, registry, missesOf(preferences, figuresOf)), balancing.random)
        : servable
    perModel.push([...ordered.flatMap((entry) => entry.prioritized), ...ordered.flatMap((entry) => entry.shared), ...ordered.flatMap((entry) => entry.fallbackKeys)])
  }

  if (incapable.length === input.models.length && input.modalities) throw modalitiesError(incapable, input.modalities)
  if (incapable.length === input.models.length) throw wrongKindError(input.models[0]!, input.purpose)
  let attempts =
    sort?.partition === 'none' ? orderBySpeedAndPrice(perModel.flat(), (attempt) => attempt.endpoint, sort.by, preferences, figuresFor(input, registry)) : perModel.flat()
  if (preferences.allow_fallbacks === false && !preferences.order && attempts.length > 0) {
    // Only each model's primary endpoint (its provider, through any of the caller's keys for it, then shared): the
    // provider fallback is off, the `models` fallback is not (OpenRouter keeps the two apart).
    const primaries = new Map<ModelEntry, ModelEndpoint>()
    for (const attempt of attempts) if (!primaries.has(attempt.model)) primaries.set(attempt.model, attempt.endpoint)
    attempts = attempts.filter((attempt) => primaries.get(attempt.model) === attempt.endpoint)
  }
  if (attempts.length === 0 && isNarrowedByPolicy) throw policy!.refusal(input.models)
  if (attempts.length === 0 && withoutKey.size > 0) throw noKeyError(input.models, [...withoutKey.values()])
  if (attempts.length === 0 && unhonoured.length > 0) throw unhonouredError(input.models, mustHonour, unhonoured)
  if (attempts.length === 0 && unservedVariants.length > 0) throw unservedVariantError(unservedVariants)
  if (attempts.length === 0) {
    throw new NotFoundError(
      `No endpoints found for ${input.models.join(', ')} that match the provider preferences and available credentials` +
        [...failedFacts].map(([field, failedAs]) => `; ${field} left out endpoints ${failedAs}`).join('') +
        (unknownFacts.size > 0
          ? `; ${listed([...unknownFacts])} left out endpoints the catalog has no such facts for (an operator adds them to the model entries: collectsData, quantization, isDistillable)`
          : ''),
      { metadata: { error_type: 'not_found' } },
    )
  }
  return attempts
}

/** An endpoint's attempts, by the group each goes in (BYOK routing: prioritized keys, shared, fallback keys). */
interface EndpointAttempts {
  endpoint: ModelEndpoint
  prioritized: Attempt[]
  shared: Attempt[]
  fallbackKeys: Attempt[]
}

/**
 * A model's endpoints in the load balancing's order (balancing.ts), the weighted pick first; each candidate's attempts
 * carry its chance (`share`) and the pick's are marked, for `service_metadata`.
 */
const balanceAttempts = (servable: EndpointAttempts[], tier: (endpoint: ModelEndpoint) => number, random: () => number): EndpointAttempts[] => {
  const balanced = balanceByPrice(servable, (entry) => listPrice(entry.endpoint), (entry) => tier(entry.endpoint), random)!
  for (const [entry, share] of balanced.shares) {
    for (const attempt of [...entry.prioritized, ...entry.shared, ...entry.fallbackKeys]) {
      attempt.share = share
      if (entry === balanced.pick) attempt.isWeightedPick = true
    }
  }
  return balanced.order
}

/** A balanced endpoint's tier: 0 stable, 1 stable but missing a `preferred_*`, 2 and 3 the same set aside. */
const tierOf =
  (model: ModelEntry, balancing: RoutingBalancing, registry: ProviderRegistry, misses: (endpoint: ModelEndpoint) => boolean) =>
  (endpoint: ModelEndpoint) =>
    (balancing.isSetAside(model, endpoint, registry.get(endpoint.provider)!) ? 2 : 0) + (misses(endpoint) ? 1 : 0)

interface FactFilter {
  /** The preference, as the 404 names it. */
  field: string
  keeps(endpoint: ModelEndpoint): boolean
  isUnknown(endpoint: ModelEndpoint): boolean
  /** What the catalog's facts say of an endpoint the filter leaves out, as the 404 words it. */
  failedAs: string
}

/** The preferences that filter on catalog facts: only an endpoint known to meet one is kept. */
const factFilters = (preferences: ProviderPreferences): FactFilter[] => {
  const filters: FactFilter[] = []
  if (preferences.data_collection === 'deny') {
    filters.push({
      field: 'provider.data_collection "deny"',
      keeps: (endpoint) => endpoint.collectsData === false,
      isUnknown: (endpoint) => endpoint.collectsData === undefined,
      failedAs: 'whose provider trains on the prompts it is sent',
    })
  }
  if (preferences.enforce_distillable_text === true) {
    filters.push({
      field: 'provider.enforce_distillable_text',
      keeps: (endpoint) => endpoint.isDistillable === true,
      isUnknown: (endpoint) => endpoint.isDistillable === undefined,
      failedAs: "whose terms forbid using the model's output to train other models",
    })
  }
  const quantizations = preferences.quantizations
  if (quantizations && quantizations.length > 0) {
    filters.push({
      field: 'provider.quantizations',
      // `unknown` in the list admits the endpoints whose format the catalog does not say.
      keeps: (endpoint) => (quantizations as readonly string[]).includes(endpoint.quantization ?? 'unknown'),
      isUnknown: (endpoint) => endpoint.quantization === undefined,
      failedAs: `served in a quantization not listed (${quantizations.join(', ')})`,
    })
  }
  return filters
}

const reasons = (endpoint: ModelEndpoint) => endpoint.supportedParameters?.includes('reasoning') === true

/**
 * `:free` asked for a model with no free endpoint (never served on a paid one), or `:thinking` for one none of whose
 * endpoints reasons: a 404 naming them, as for any model without a usable endpoint.
 */
const unservedVariantError = (unserved: Array<{ slug: string; variant: 'free' | 'thinking' }>) =>
  new NotFoundError(
    `No endpoint for ${listed(
      unserved.map(({ slug, variant }) => (variant === 'free' ? `${slug} (no endpoint of it is free)` : `${slug} (no endpoint of it reasons)`)),
    )}`,
    { metadata: { error_type: 'not_found' } },
  )

/**
 * Reads an endpoint's figures for the key kind that would serve it first: the caller's own when the workspace has a
 * key for its provider, else the gateway's shared key.
 */
const figuresFor = (input: RoutingInput, registry: ProviderRegistry): FiguresOf => {
  const performance = input.performance
  if (!performance) return () => null
  return (endpoint) => {
    const provider = registry.get(endpoint.provider)
    const hasKey = input.credentials.some((credential) => !credential.disabled && !credential.isFallback && baseSlug(credential.provider) === baseSlug(endpoint.provider))
    const kind: KeyKind = hasKey || provider?.shared === null ? 'byok' : 'shared'
    return performance.figures(endpointKey(kind, provider?.descriptor.id ?? endpoint.provider, endpoint.model)) ?? null
  }
}

/**
 * The request parameters that need endpoint support (for `require_parameters`): the body's by their Responses
 * names, the extensions' by OpenRouter's (`top_logprobs` too when alternatives are asked for).
 */
export const parametersUsed = (request: Record<string, unknown>, extensions?: RequestExtensions): string[] => {
  const names = ['max_output_tokens', 'temperature', 'top_p', 'top_k', 'tools', 'tool_choice', 'parallel_tool_calls', 'reasoning', 'text', 'frequency_penalty', 'presence_penalty', 'include']
  const used: string[] = names.filter((name) => request[name] !== undefined && request[name] !== null)
  used.push(...extensionsUsed(extensions))
  if ((extensions?.logprobs?.topLogprobs ?? 0) > 0) used.push('top_logprobs')
  return used
}

/**
 * Body fields no endpoint may ignore (and the provider tools, below): `prompt_cache_options` changes what is cached and paid for; `prompt` (a stored
 * prompt template) is the request's own instructions, which only OpenAI can resolve.
 */
const HONOURED_OR_REFUSED = ['prompt_cache_options', 'prompt']

/**
 * The parameters of `request` that no endpoint may ignore (`RoutingInput.mustHonour`): those body fields, named as
 * written, and the route's extensions, at the fields `fieldNames` gives (`body.<name>` by default).
 */
export const mustHonour = (
  request: Record<string, unknown>,
  extensions?: RequestExtensions,
  fieldNames?: Partial<Record<RequestExtensionName, string>>,
): Array<{ name: string; field: string }> => [
  ...HONOURED_OR_REFUSED.filter((name) => request[name] !== undefined && request[name] !== null).map((name) => ({ name, field: name })),
  ...providerToolsUsed(request.tools),
  ...serviceTierUsed(request.service_tier),
  ...extensionsUsed(extensions).map((name) => ({ name, field: fieldNames?.[name] ?? `body.${name}` })),
]

/** A processing tier beyond `auto` and `default`: only an endpoint whose adapter sends it may serve the request. */
const serviceTierUsed = (tier: unknown): Array<{ name: string; field: string }> => {
  const asked = tierAsked(tier)
  return asked === undefined ? [] : [{ name: `${SERVICE_TIER}${asked}`, field: `body.service_tier ("${String(tier)}")` }]
}

/**
 * The request's provider tools (any type but `function` and the gateway's own `service:*`): only an endpoint whose
 * adapter sends that type may serve it, whoever would run it.
 */
const providerToolsUsed = (tools: unknown): Array<{ name: string; field: string }> =>
  (Array.isArray(tools) ? (tools as Array<{ type?: unknown }>) : []).flatMap((tool, index) =>
    typeof tool.type === 'string' && tool.type !== 'function' && !tool.type.startsWith('service:')
      ? [{ name: `${PROVIDER_TOOL}${tool.type}`, field: `body.tools.${index} (type "${tool.type}")` }]
      : [],
  )

/** Requested models in order: `model` (or the workspace default) then `models`, without repeats. */
export const requestedModels = (model: string | undefined, models: string[] | undefined, workspaceDefault: string): string[] => {
  const all = [model ?? models?.[0] ?? workspaceDefault, ...(models ?? [])]
  const unique = [...new Set(all)]
  if (unique.length === 0) throw new InvalidRequestError('body.model: is required')
  return unique
}
