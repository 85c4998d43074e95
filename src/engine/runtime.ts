/** Everything inference routes need beyond storage, built once per gateway from its options. */

import type { Logger } from '../core/logger'
import type { ProviderApi } from '../providers/catalog'
import { randomId } from '../core/crypto'
import { DEFAULT_HISTORY_LIMITS, type HistoryLimits } from '../interns/history'
import { DEFAULT_LEASE_TTL_MS, DEFAULT_SWEEP_INTERVAL_MS, type ProvisioningSettings } from '../interns/lease'
import { inProcessRuntime } from '../interns/in-process'
import type { InternRuntime } from '../interns/runtime'
import type { ProviderAdapter } from '../providers/contract'
import { createActiveStreams, type ActiveStreams } from './active-streams'
import { createModelCatalog, mergeModels, type ModelCatalog, type ModelEntry } from './models'
import { createOutlierDetector, disabledOutlierDetector, type OutlierDetectionOptions, type OutlierDetector } from './outlier-detection'
import { createProviderRegistry, type ProviderConfig, type ProviderRegistry } from './providers'
import { createRetryBudget, unlimitedRetryBudget, type RetryBudget, type RetryBudgetOptions } from './retry-budget'
import { fetchTransport, type UpstreamLimits, type UpstreamTimeouts, type UpstreamTransport } from './transport'
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

export interface GatewayRuntime {
  providers: ProviderRegistry
  models: ModelCatalog
  transport: UpstreamTransport
  timeouts: UpstreamTimeouts
  limits: UpstreamLimits
  /** Checks upstream locations chosen by callers (Azure BYOK endpoints). */
  upstreamGuard: UpstreamGuard
  /** Share of the list price charged for BYOK requests (docs/decisions.md, BYOK: 5%). */
  byokFeeRate: number
  region: string
  /** Secret behind the end-user hashes sent upstream. */
  endUserSecret: string
  commitAfterMs: number
  keepAliveMs: number
  /** The header a trusted proxy sets to the requested hostname; none means the host the server was reached on. */
  trustedHostHeader: string | undefined
  retry: RetryPolicy
  /** Endpoints and BYOK keys that keep failing are skipped for a while. */
  outliers: OutlierDetector
  /** Streams in flight, ended in-band by `gateway.endStreams()`. */
  streams: ActiveStreams
  /** The gateway's clock, in ms since the epoch. */
  now: () => number
  interns: {
    runtime: InternRuntime
    /** Hostnames of regional deployments, where intern routes are refused (spec Authentication 3). */
    regionalHostnames: ReadonlySet<string>
    /** Refuse intern routes whatever the hostname: the whole deployment is regional. */
    isRegionalDeployment: boolean
    /** Background work (provisioning, destruction) running in this process. */
    tasks: Set<Promise<unknown>>
    /** How much of each intern's conversation is kept (and so sent upstream with every turn). */
    history: HistoryLimits
    /** Leases of provisioning runs, and the sweep that takes over abandoned ones. */
    provisioning: ProvisioningSettings
  }
}

export interface ProvisioningOptions {
  leaseTtlMs?: number
  heartbeatIntervalMs?: number
  sweepIntervalMs?: number | false
}

const provisioningSettings = (options: ProvisioningOptions = {}): ProvisioningSettings => {
  const leaseTtlMs = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS
  return {
    leaseTtlMs,
    // Three beats per lease: one late or lost renewal does not let the lease lapse.
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? Math.max(1, Math.floor(leaseTtlMs / 3)),
    sweepIntervalMs: options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS,
    holder: `gateway-${randomId()}`,
  }
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
 * first byte may wait up to the first-byte timeout. The budget's 20 % with 3 in reserve is Envoy's and
 * Finagle's default shape, over Finagle's 10 s window. docs/decisions.md has the reasoning.
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

const outlierDetector = (options: false | Partial<OutlierDetectionOptions> | undefined, now: () => number, logger: Logger): OutlierDetector => {
  if (options === false) return disabledOutlierDetector
  const settings: OutlierDetectionOptions = {
    consecutiveFailures: options?.consecutiveFailures ?? DEFAULT_OUTLIER_DETECTION.consecutiveFailures,
    baseEjectionSeconds: options?.baseEjectionSeconds ?? DEFAULT_OUTLIER_DETECTION.baseEjectionSeconds,
    maxEjectionSeconds: options?.maxEjectionSeconds ?? DEFAULT_OUTLIER_DETECTION.maxEjectionSeconds,
  }
  return createOutlierDetector(settings, now, (target, seconds) =>
    logger.warn('upstream target ejected after repeated failures', { target, seconds, consecutiveFailures: settings.consecutiveFailures }),
  )
}

// Generous: a whole answer of 32 MiB is hundreds of thousands of tokens, and an event of 8 MiB a large image.
const upstreamLimits = (upstream: UpstreamOptions = {}): UpstreamLimits => ({
  maxResponseBytes: upstream.maxResponseBytes ?? 32 * 1024 * 1024,
  maxEventBytes: upstream.maxEventBytes ?? 8 * 1024 * 1024,
})

export const createRuntime = (options: {
  providers?: Record<string, ProviderConfig>
  models?: ModelEntry[]
  transport?: UpstreamTransport
  upstream?: UpstreamOptions
  upstreamGuard?: UpstreamGuardOptions
  adapters: Partial<Record<ProviderApi, ProviderAdapter>>
  byokFeeRate?: number
  region?: string
  endUserSecret: string
  streamCommitAfterMs?: number
  keepAliveMs?: number
  internRuntime?: InternRuntime
  regionalHostnames?: string[]
  isRegionalDeployment?: boolean
  trustedHostHeader?: string
  retry?: RetryOptions
  outlierDetection?: false | Partial<OutlierDetectionOptions>
  now?: () => Date
  logger: Logger
  internHistory?: Partial<HistoryLimits>
  internProvisioning?: ProvisioningOptions
}): GatewayRuntime => {
  const now = options.now ? () => options.now!().getTime() : Date.now
  return {
    providers: createProviderRegistry(options.providers ?? {}, options.adapters),
    models: createModelCatalog(mergeModels(options.models)),
    transport: options.transport ?? fetchTransport(),
    timeouts: upstreamTimeouts(options.upstream),
    limits: upstreamLimits(options.upstream),
    upstreamGuard: createUpstreamGuard(options.upstreamGuard),
    byokFeeRate: options.byokFeeRate ?? 0.05,
    region: options.region ?? 'default',
    endUserSecret: options.endUserSecret,
    commitAfterMs: options.streamCommitAfterMs ?? 8_000,
    keepAliveMs: options.keepAliveMs ?? 15_000,
    retry: retryPolicy(options.retry, now),
    outliers: outlierDetector(options.outlierDetection, now, options.logger),
    streams: createActiveStreams(),
    now,
    trustedHostHeader: options.trustedHostHeader,
    interns: {
      runtime: options.internRuntime ?? inProcessRuntime(),
      regionalHostnames: new Set((options.regionalHostnames ?? []).map((hostname) => hostname.toLowerCase().replace(/\.$/, ''))),
      isRegionalDeployment: options.isRegionalDeployment ?? false,
      tasks: new Set(),
      history: {
        maxItems: options.internHistory?.maxItems ?? DEFAULT_HISTORY_LIMITS.maxItems,
        maxBytes: options.internHistory?.maxBytes ?? DEFAULT_HISTORY_LIMITS.maxBytes,
      },
      provisioning: provisioningSettings(options.internProvisioning),
    },
  }
}
