/**
 * Provisioning leases. A provisioning run belongs to the gateway process that started it; the run's
 * lease (holder, expiry) sits on the intern record, renewed by a heartbeat while the run lives. A
 * process that dies (kill -9, a crash, a lost machine) stops renewing, and once the lease expires any
 * gateway takes the run over: a provision call, or the periodic sweep (sweep.ts). The lease lives on
 * the intern record rather than beside it so that one compare-and-set decides both which run is
 * wanted and whether it is alive (docs/decisions.md, "Provisioning leases").
 */

import type { InternRecord } from '../repositories/interns'

export interface ProvisioningSettings {
  /** How long a run counts as alive after its last renewal. */
  leaseTtlMs: number
  /** How often a live run renews its lease; well under `leaseTtlMs`. */
  heartbeatIntervalMs: number
  /** How often this gateway looks for abandoned runs to take over; `false` for never. */
  sweepIntervalMs: number | false
  /** Names this gateway in the leases it holds, for operators reading the store. */
  holder: string
}

export const DEFAULT_LEASE_TTL_MS = 30_000
export const DEFAULT_SWEEP_INTERVAL_MS = 15_000

/** A lease for a run of this gateway, valid from `now` for the lease's time to live. */
export const newLease = (settings: ProvisioningSettings, now: Date) => ({
  holder: settings.holder,
  expiresAt: new Date(now.getTime() + settings.leaseTtlMs).toISOString(),
})

/** True while the intern's provisioning run has a lease that has not expired; a run without one (from an older version) is abandoned. */
export const hasLiveLease = (intern: InternRecord, now: Date): boolean =>
  !!intern.provisioningLease && Date.parse(intern.provisioningLease.expiresAt) > now.getTime()

/** Calls `beat` every `intervalMs` until the returned function stops it; never keeps the process alive by itself. */
export const every = (intervalMs: number, beat: () => Promise<void>): (() => void) => {
  const timer = setInterval(() => void beat(), intervalMs)
  // Node and Bun timers can be unref'd; a run or sweep must not hold a process open on its own.
  ;(timer as { unref?: () => void }).unref?.()
  return () => clearInterval(timer)
}
