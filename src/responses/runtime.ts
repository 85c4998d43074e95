/** Everything inference routes need beyond storage, built once per gateway from its options. */

import type { ProviderApi } from '../providers/catalog'
import { randomId } from '../core/crypto'
import { DEFAULT_HISTORY_LIMITS, type HistoryLimits } from '../interns/history'
import { DEFAULT_LEASE_TTL_MS, DEFAULT_SWEEP_INTERVAL_MS, type ProvisioningSettings } from '../interns/lease'
import { inProcessRuntime } from '../interns/in-process'
import type { InternRuntime } from '../interns/runtime'
import type { ProviderAdapter } from '../providers/contract'
import { createModelCatalog, mergeModels, type ModelCatalog, type ModelEntry } from './models'
import { createProviderRegistry, type ProviderConfig, type ProviderRegistry } from './providers'
import { fetchTransport, type UpstreamTimeouts, type UpstreamTransport } from './transport'

export interface UpstreamOptions {
  connectTimeoutMs?: number
  firstByteTimeoutMs?: number
  totalTimeoutMs?: number
}

export interface GatewayRuntime {
  providers: ProviderRegistry
  models: ModelCatalog
  transport: UpstreamTransport
  timeouts: UpstreamTimeouts
  /** Share of the list price charged for BYOK requests (gaps 1.7: 5%). */
  byokFeeRate: number
  region: string
  /** The gateway's default text model, for callers whose workspace is gone. */
  defaultTextModel: string
  /** Secret behind the end-user hashes sent upstream. */
  endUserSecret: string
  commitAfterMs: number
  keepAliveMs: number
  interns: {
    runtime: InternRuntime
    /** Hostnames of regional deployments, where intern routes are refused (spec Authentication 3). */
    regionalHostnames: ReadonlySet<string>
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

const upstreamTimeouts = (upstream: { connectTimeoutMs?: number; firstByteTimeoutMs?: number; totalTimeoutMs?: number } = {}): UpstreamTimeouts => {
  const totalMs = upstream.totalTimeoutMs ?? 600_000
  // The total bounds the wait for the first byte too.
  return { connectMs: upstream.connectTimeoutMs ?? 10_000, firstByteMs: Math.min(upstream.firstByteTimeoutMs ?? 300_000, totalMs), totalMs }
}

export const createRuntime = (options: {
  providers?: Record<string, ProviderConfig>
  models?: ModelEntry[]
  transport?: UpstreamTransport
  upstream?: UpstreamOptions
  adapters: Partial<Record<ProviderApi, ProviderAdapter>>
  byokFeeRate?: number
  region?: string
  defaultTextModel: string
  endUserSecret: string
  streamCommitAfterMs?: number
  keepAliveMs?: number
  internRuntime?: InternRuntime
  regionalHostnames?: string[]
  internHistory?: Partial<HistoryLimits>
  internProvisioning?: ProvisioningOptions
}): GatewayRuntime => ({
  providers: createProviderRegistry(options.providers ?? {}, options.adapters),
  models: createModelCatalog(mergeModels(options.models)),
  transport: options.transport ?? fetchTransport(),
  timeouts: upstreamTimeouts(options.upstream),
  byokFeeRate: options.byokFeeRate ?? 0.05,
  region: options.region ?? 'default',
  defaultTextModel: options.defaultTextModel,
  endUserSecret: options.endUserSecret,
  commitAfterMs: options.streamCommitAfterMs ?? 8_000,
  keepAliveMs: options.keepAliveMs ?? 15_000,
  interns: {
    runtime: options.internRuntime ?? inProcessRuntime(),
    regionalHostnames: new Set((options.regionalHostnames ?? []).map((hostname) => hostname.toLowerCase())),
    tasks: new Set(),
    history: {
      maxItems: options.internHistory?.maxItems ?? DEFAULT_HISTORY_LIMITS.maxItems,
      maxBytes: options.internHistory?.maxBytes ?? DEFAULT_HISTORY_LIMITS.maxBytes,
    },
    provisioning: provisioningSettings(options.internProvisioning),
  },
})
