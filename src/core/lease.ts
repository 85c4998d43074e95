/**
 * Leases on runs that must outlive the process that started them (an intern's provisioning, a background response):
 * the run's record names its holder and an expiry, the holder renews it on a heartbeat while the run lives, and once
 * it expires (the holder died) any process may take the run over with a compare-and-set on the record.
 */

/** Who holds a run, and until when (ISO 8601) the run counts as alive without a renewal. */
export interface Lease {
  holder: string
  expiresAt: string
}

export interface LeaseSettings {
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
export const DEFAULT_LEASE_SWEEP_INTERVAL_MS = 15_000

/** Three beats per lease: one late or lost renewal does not let the lease lapse. */
export const heartbeatFor = (leaseTtlMs: number) => Math.max(1, Math.floor(leaseTtlMs / 3))

/** A lease for a run of this gateway, valid from `now` for the lease's time to live. */
export const newLease = (settings: Pick<LeaseSettings, 'holder' | 'leaseTtlMs'>, now: Date): Lease => ({
  holder: settings.holder,
  expiresAt: new Date(now.getTime() + settings.leaseTtlMs).toISOString(),
})

/** True while `lease` has not expired; a run without one (from an older version, or released) is abandoned. */
export const isLeaseLive = (lease: Lease | null | undefined, now: Date): boolean => !!lease && Date.parse(lease.expiresAt) > now.getTime()

/** Calls `beat` every `intervalMs` until the returned function stops it; never keeps the process alive by itself. */
export const every = (intervalMs: number, beat: () => Promise<void>): (() => void) => {
  const timer = setInterval(() => void beat(), intervalMs)
  // Node and Bun timers can be unref'd; a run or sweep must not hold a process open on its own.
  ;(timer as { unref?: () => void }).unref?.()
  return () => clearInterval(timer)
}
