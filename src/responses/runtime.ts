/** Everything inference routes need beyond storage, built once per gateway from its options. */

import type { ProviderApi } from '../providers/catalog'
import { inProcessRuntime } from '../interns/in-process'
import type { InternRuntime } from '../interns/runtime'
import type { ProviderAdapter } from '../providers/contract'
import { createModelCatalog, mergeModels, type ModelCatalog, type ModelEntry } from './models'
import { createProviderRegistry, type ProviderConfig, type ProviderRegistry } from './providers'
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

export interface GatewayRuntime {
  providers: ProviderRegistry
  models: ModelCatalog
  transport: UpstreamTransport
  timeouts: UpstreamTimeouts
  limits: UpstreamLimits
  /** Checks upstream locations chosen by callers (Azure BYOK endpoints). */
  upstreamGuard: UpstreamGuard
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
  defaultTextModel: string
  endUserSecret: string
  streamCommitAfterMs?: number
  keepAliveMs?: number
  internRuntime?: InternRuntime
  regionalHostnames?: string[]
}): GatewayRuntime => ({
  providers: createProviderRegistry(options.providers ?? {}, options.adapters),
  models: createModelCatalog(mergeModels(options.models)),
  transport: options.transport ?? fetchTransport(),
  timeouts: upstreamTimeouts(options.upstream),
  limits: upstreamLimits(options.upstream),
  upstreamGuard: createUpstreamGuard(options.upstreamGuard),
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
  },
})
