/**
 * Provisioning leases. A provisioning run belongs to the gateway process that started it; the run's
 * lease (holder, expiry) sits on the intern record, renewed by a heartbeat while the run lives. A
 * process that dies (kill -9, a crash, a lost machine) stops renewing, and once the lease expires any
 * gateway takes the run over: a provision call, or the periodic sweep (sweep.ts). The lease lives on
 * the intern record rather than beside it so that one compare-and-set decides both which run is
 * wanted and whether it is alive (docs/decisions.md, "Provisioning leases").
 */

import { isLeaseLive, type LeaseSettings } from '../core/lease'
import type { InternRecord } from '../repositories/interns'

/** The lease machinery is shared (src/core/lease.ts); a provisioning run's settings are a lease's. */
export type ProvisioningSettings = LeaseSettings

/** True while the intern's provisioning run has a lease that has not expired; a run without one (from an older version) is abandoned. */
export const hasLiveLease = (intern: InternRecord, now: Date): boolean => isLeaseLive(intern.provisioningLease, now)
