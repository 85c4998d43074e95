/**
 * The inference service: everything running a response needs beyond the request itself, built once per
 * gateway from its options and never changed afterwards. A request carries only its own data (request.ts).
 */

import type { Logger } from '../core/logger'
import { NO_TELEMETRY, type Telemetry } from '../core/telemetry'
import type { ProviderApi } from '../providers/catalog'
import type { SecretBox } from '../core/secrets'
import type { ProviderAdapter } from '../providers/contract'
import { createActiveStreams, type ActiveStreams } from './active-streams'
import { applyPriceOverrides, createModelCatalog, mergeModels, type ModelCatalog, type ModelEntry } from './models'
import type { PriceOverride } from './prices.schemas'
import { createOutlierDetector, disabledOutlierDetector, type OutlierDetectionOptions, type OutlierDetector } from './outlier-detection'
import { createProviderRegistry, type ProviderConfig, type ProviderRegistry } from './providers'
import type { SpendSettings } from './spend-targets'
import { createSpendBook } from './spend-book'
import type { SpendRepository } from '../repositories/spend-counters'
import { createEndpointPerformance, disabledEndpointPerformance, type EndpointPerformance } from './endpoint-performance'
import type { EndpointPerformanceRepository } from '../repositories/endpoint-performance'
import { createStickySessions, type StickySessions } from './sticky-sessions'
import type { Balancing } from './balancing'
import { createRecentFailures, type RecentFailures } from './recent-failures'
import { createRetryBudget, unlimitedRetryBudget, type RetryBudget, type RetryBudgetOptions } from './retry-budget'
import { fetchTransport, type UpstreamLimits, type UpstreamTimeouts, type UpstreamTransport } from '../transport/contract'
import { DEFAULT_REQUEST_TIMEOUT_MS } from './request-deadline'
import { createUpstreamGuard, type UpstreamGuard, type UpstreamGuardOptions } from '../core/upstream-guard'

export interface UpstreamOptions {
  connectTimeoutMs?: number
  firstByteTimeoutMs?: number
  idleTimeoutMs?: number
  totalTimeoutMs?: number
  maxResponseBytes?: number
  maxEventBytes?: number
}

export interface RetryOptions {
  maxAttempts?: number
  budget?: false | Partial<RetryBudgetOptions>
  maxRetryAfterSeconds?: number
}

export interface RetryPolicy {
  /** Upstream attempts one request may make, fallbacks included. */
  maxAttempts: number
  budget: RetryBudget
  /** The longest `Retry-After` passed on to a caller. */
  maxRetryAfterSeconds: number
}

/**
 * The features' own settings, one entry per feature (the server tools' reach, the routers' scores, the plugins'
 * backends). The engine names none of them: each feature declares its entry by declaration merging
 * (src/features/settings.ts), and the composition root builds them (`features` below).
 */
export interface FeatureSettings {}

/**
 * The features' stages, listed once by the composition root (src/engine/stages.ts): each kind of stage declares its
 * entry by declaration merging (plan-stage.ts, turn-stage.ts), whose contracts read the service in turn.
 */
export interface EngineStages {}

export interface InferenceService extends FeatureSettings {
  readonly providers: ProviderRegistry
  readonly models: ModelCatalog
  readonly transport: UpstreamTransport
  /** Per upstream exchange; each is also bounded by what is left of its request's deadline. */
  readonly timeouts: UpstreamTimeouts
  /** The deadline of a whole request: its attempts, server-tool turns and tool runs, fusion runs (request-deadline.ts). */
  readonly requestTimeoutMs: number
  readonly limits: UpstreamLimits
  /** Checks upstream locations chosen by callers (Azure BYOK endpoints). */
  readonly guard: UpstreamGuard
  /** Opens stored BYOK keys, in memory and for one call only. */
  readonly secrets: SecretBox
  /** Share of the list price charged for BYOK requests (docs/decisions.md, BYOK: 5%). */
  readonly byokFeeRate: number
  readonly region: string
  /** Secret behind the end-user hashes sent upstream. */
  readonly endUserSecret: string
  /** How long a stream may wait for content before the HTTP response is committed with keep-alives. */
  readonly commitAfterMs: number
  readonly keepAliveMs: number
  readonly retry: RetryPolicy
  /** Endpoints and BYOK keys that keep failing are skipped for a while. */
  readonly outliers: OutlierDetector
  /** Latency and throughput measured per endpoint, which speed sorts and preferences route on (endpoint-performance.ts). */
  readonly performance: EndpointPerformance
  /** Which endpoint served each recent session, which its next requests go to while it is healthy. */
  readonly sessions: StickySessions
  /** Which endpoint served each recent conversation without a session (same caller, same prompt prefix): the same rule. */
  readonly conversations: StickySessions
  /** How a model's endpoints are ordered when the caller orders none (docs/decisions.md, "Load balancing"). */
  readonly routing: RoutingSettings
  /** When each endpoint's upstream last failed: balancing sets those of the last 30 s aside. */
  readonly recentFailures: RecentFailures
  /** Streams in flight, ended in-band by `gateway.endStreams()`. */
  readonly streams: ActiveStreams
  /** Credits enforcement and the spend settlements being written. */
  readonly spend: SpendSettings
  /** The gateway's clock, in ms since the epoch: every timestamp a response carries comes from it. */
  readonly now: () => number
  readonly logger: Logger
  readonly stages: EngineStages
  /** Where the engine reports what it decided (src/core/telemetry.ts); emit with `telemetry.name?.(…)`. */
  readonly telemetry: Telemetry
}

const upstreamTimeouts = (upstream: UpstreamOptions = {}): UpstreamTimeouts => {
  const totalMs = upstream.totalTimeoutMs ?? 600_000
  // The total bounds the wait for the first byte too.
  return {
    connectMs: upstream.connectTimeoutMs ?? 10_000,
    firstByteMs: Math.min(upstream.firstByteTimeoutMs ?? 300_000, totalMs),
    idleMs: upstream.idleTimeoutMs ?? 60_000,
    totalMs,
  }
}

/**
 * Three attempts cover the usual fallbacks (the primary endpoint, another provider, a fallback model or
 * BYOK key) while bounding what one request can cost an upstream that is down: each attempt before the
 * first byte may wait up to the first-byte timeout, and all of them together no longer than the request's
 * deadline. The budget's 20 % with 3 in reserve is Envoy's and Finagle's default shape, over Finagle's 10 s window. docs/decisions.md has the reasoning.
 */
const DEFAULT_RETRY = { maxAttempts: 3, ratio: 0.2, minRetries: 3, windowSeconds: 10, maxRetryAfterSeconds: 600 }
const DEFAULT_OUTLIER_DETECTION: OutlierDetectionOptions = { consecutiveFailures: 5, baseEjectionSeconds: 30, maxEjectionSeconds: 300 }

const retryPolicy = (retry: RetryOptions = {}, now: () => number): RetryPolicy => ({
  maxAttempts: retry.maxAttempts ?? DEFAULT_RETRY.maxAttempts,
  budget:
    retry.budget === false
      ? unlimitedRetryBudget
      : createRetryBudget(
          {
            ratio: retry.budget?.ratio ?? DEFAULT_RETRY.ratio,
            minRetries: retry.budget?.minRetries ?? DEFAULT_RETRY.minRetries,
            windowSeconds: retry.budget?.windowSeconds ?? DEFAULT_RETRY.windowSeconds,
          },
          now,
        ),
  maxRetryAfterSeconds: retry.maxRetryAfterSeconds ?? DEFAULT_RETRY.maxRetryAfterSeconds,
})

/** A target's kind and, for an endpoint, its provider: what a metric may name (never a key's id). */
const ejectedTarget = (target: string) => {
  const [kind, provider] = target.split(' ')
  return kind === 'byok' ? { kind: 'byok' as const } : { kind: 'endpoint' as const, ...(provider ? { provider } : {}) }
}

export interface EndpointPerformanceSettings {
  /** How long a measurement keeps half its weight (default 150 s: five minutes of traffic decide). */
  halfLifeSeconds?: number
  /** How often a process merges its measurements with the other processes' through the store (default 15 s). */
  mergeIntervalMs?: number
}

const DEFAULT_PERFORMANCE = { halfLifeSeconds: 150, mergeIntervalMs: 15_000 }

const endpointPerformance = (options: InferenceServiceOptions, now: () => number): EndpointPerformance => {
  const settings = options.endpointPerformance
  if (settings === false) return disabledEndpointPerformance
  return createEndpointPerformance({
    now,
    halfLifeMs: (settings?.halfLifeSeconds ?? DEFAULT_PERFORMANCE.halfLifeSeconds) * 1000,
    mergeEveryMs: settings?.mergeIntervalMs ?? DEFAULT_PERFORMANCE.mergeIntervalMs,
    ...(options.performanceRepository ? { repository: options.performanceRepository } : {}),
    logger: options.logger,
  })
}

const outlierDetector = (options: false | Partial<OutlierDetectionOptions> | undefined, now: () => number, logger: Logger, telemetry: Telemetry): OutlierDetector => {
  if (options === false) return disabledOutlierDetector
  const settings: OutlierDetectionOptions = {
    consecutiveFailures: options?.consecutiveFailures ?? DEFAULT_OUTLIER_DETECTION.consecutiveFailures,
    baseEjectionSeconds: options?.baseEjectionSeconds ?? DEFAULT_OUTLIER_DETECTION.baseEjectionSeconds,
    maxEjectionSeconds: options?.maxEjectionSeconds ?? DEFAULT_OUTLIER_DETECTION.maxEjectionSeconds,
  }
  return createOutlierDetector(settings, now, (target, seconds) => {
    logger.warn('upstream target ejected after repeated failures', { target, seconds, consecutiveFailures: settings.consecutiveFailures })
    telemetry.outlierEjected?.({ ...ejectedTarget(target), seconds })
  })
}

// Generous: a whole answer of 32 MiB is hundreds of thousands of tokens, and an event of 8 MiB a large image.
const upstreamLimits = (upstream: UpstreamOptions = {}): UpstreamLimits => ({
  maxResponseBytes: upstream.maxResponseBytes ?? 32 * 1024 * 1024,
  maxEventBytes: upstream.maxEventBytes ?? 8 * 1024 * 1024,
})

export interface RoutingSettings {
  readonly balancing: Balancing
  /** The weighted pick's random source, a number in [0, 1). */
  readonly random: () => number
}

export interface RoutingOptions {
  /** `weighted` (default): OpenRouter's price-weighted pick; `cheapest`: the cheapest endpoint first, always. */
  balancing?: Balancing
  /** The weighted pick's random source (`Math.random` by default), for tests that need the pick repeatable. */
  random?: () => number
}

export interface InferenceServiceOptions {
  providers?: Record<string, ProviderConfig>
  models?: ModelEntry[]
  /** Price overrides over the merged catalog (docs/interface.md, "Model catalog and prices"). */
  prices?: PriceOverride[]
  transport?: UpstreamTransport
  upstream?: UpstreamOptions
  requestTimeoutMs?: number
  upstreamGuard?: UpstreamGuardOptions
  adapters: Partial<Record<ProviderApi, ProviderAdapter>>
  secrets: SecretBox
  byokFeeRate?: number
  region?: string
  endUserSecret: string
  streamCommitAfterMs?: number
  keepAliveMs?: number
  retry?: RetryOptions
  outlierDetection?: false | Partial<OutlierDetectionOptions>
  /** How a model's endpoints are ordered when the caller orders none (docs/decisions.md, "Load balancing"). */
  routing?: RoutingOptions
  /** Endpoint speed measurement (docs/decisions.md, "Routing by measured speed"); `false` turns it off. */
  endpointPerformance?: false | EndpointPerformanceSettings
  /** Where processes share what they measured (the gateway's store); each process keeps its own without it. */
  performanceRepository?: EndpointPerformanceRepository
  enforceCredits?: boolean
  /** Where spend is held and settled (the gateway's store). */
  spendRepository: SpendRepository
  /** A spend hold's lease (docs/decisions.md, "Books that balance"; default 60 s). */
  spendLeaseMs?: number
  now?: () => Date
  logger: Logger
  /** The gateway's telemetry channel; none observed when absent. */
  telemetry?: Telemetry
  /** The features' settings, built by the composition root once the providers are known (a plugin reads their adapters). */
  features: (providers: ProviderRegistry) => FeatureSettings
  /** The features' stages, in the order they run (src/engine/stages.ts). */
  stages: EngineStages
}

export const createInferenceService = (options: InferenceServiceOptions): InferenceService => {
  const now = options.now ? () => options.now!().getTime() : Date.now
  const providers = createProviderRegistry(options.providers ?? {}, options.adapters)
  const telemetry = options.telemetry ?? NO_TELEMETRY
  return Object.freeze({
    providers,
    models: createModelCatalog(applyPriceOverrides(mergeModels(options.models), options.prices ?? [], 'options.prices')),
    transport: options.transport ?? fetchTransport(),
    timeouts: upstreamTimeouts(options.upstream),
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    limits: upstreamLimits(options.upstream),
    guard: createUpstreamGuard(options.upstreamGuard),
    secrets: options.secrets,
    byokFeeRate: options.byokFeeRate ?? 0.05,
    region: options.region ?? 'default',
    endUserSecret: options.endUserSecret,
    commitAfterMs: options.streamCommitAfterMs ?? 8_000,
    keepAliveMs: options.keepAliveMs ?? 15_000,
    retry: retryPolicy(options.retry, now),
    outliers: outlierDetector(options.outlierDetection, now, options.logger, telemetry),
    performance: endpointPerformance(options, now),
    sessions: createStickySessions(),
    conversations: createStickySessions(),
    routing: { balancing: options.routing?.balancing ?? 'weighted', random: options.routing?.random ?? Math.random },
    recentFailures: createRecentFailures(now),
    streams: createActiveStreams(telemetry),
    spend: {
      enforceCredits: options.enforceCredits ?? false,
      book: createSpendBook({ repository: options.spendRepository, logger: options.logger, ...(options.spendLeaseMs === undefined ? {} : { leaseMs: options.spendLeaseMs }) }),
    },
    now,
    logger: options.logger,
    stages: options.stages,
    telemetry,
    ...options.features(providers),
  })
}
