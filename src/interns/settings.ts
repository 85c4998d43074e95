/** The intern settings of a gateway, built once from its options beside the inference service. */

import { randomId } from '../core/crypto'
import { DEFAULT_HISTORY_LIMITS, type HistoryLimits } from './history'
import { inProcessRuntime } from './in-process'
import { DEFAULT_LEASE_SWEEP_INTERVAL_MS, DEFAULT_LEASE_TTL_MS, heartbeatFor } from '../core/lease'
import type { ProvisioningSettings } from './lease'
import type { InternRuntime } from './runtime'

export interface InternSettings {
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

export interface ProvisioningOptions {
  leaseTtlMs?: number
  heartbeatIntervalMs?: number
  sweepIntervalMs?: number | false
}

const provisioningSettings = (options: ProvisioningOptions = {}): ProvisioningSettings => {
  const leaseTtlMs = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS
  return {
    leaseTtlMs,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? heartbeatFor(leaseTtlMs),
    sweepIntervalMs: options.sweepIntervalMs ?? DEFAULT_LEASE_SWEEP_INTERVAL_MS,
    holder: `gateway-${randomId()}`,
  }
}

export const createInternSettings = (options: {
  internRuntime?: InternRuntime
  regionalHostnames?: string[]
  isRegionalDeployment?: boolean
  internHistory?: Partial<HistoryLimits>
  internProvisioning?: ProvisioningOptions
}): InternSettings => ({
  runtime: options.internRuntime ?? inProcessRuntime(),
  regionalHostnames: new Set((options.regionalHostnames ?? []).map((hostname) => hostname.toLowerCase().replace(/\.$/, ''))),
  isRegionalDeployment: options.isRegionalDeployment ?? false,
  tasks: new Set(),
  history: {
    maxItems: options.internHistory?.maxItems ?? DEFAULT_HISTORY_LIMITS.maxItems,
    maxBytes: options.internHistory?.maxBytes ?? DEFAULT_HISTORY_LIMITS.maxBytes,
  },
  provisioning: provisioningSettings(options.internProvisioning),
})
