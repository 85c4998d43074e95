/**
 * The provisioning sweep: every gateway looks for provisioning runs whose lease expired (their
 * gateway died) and takes them over, so an abandoned intern reaches `running` even when nobody calls
 * provision again, and a restarted single process recovers its own runs.
 */

import type { InternStatus } from '../repositories/interns'
import type { InternEnvironment } from './environment'
import { every } from '../core/lease'
import { hasLiveLease } from './lease'
import { resumeAbandonedProvisioning } from './provisioning'

const PAGE_SIZE = 100
const SWEPT: InternStatus[] = ['queued', 'provisioning']

export interface ProvisioningSweep {
  /** Stops sweeping, and resolves once a sweep under way has finished. */
  stop(): Promise<void>
}

/** Takes over every abandoned provisioning run in the store once. */
export const sweepAbandonedProvisioning = async (environment: InternEnvironment): Promise<void> => {
  for (const status of SWEPT) {
    // A takeover moves a `provisioning` intern back to `queued`, shifting later pages; the next sweep gets what this one skips.
    for (let offset = 0; ; offset += PAGE_SIZE) {
      const interns = await environment.repositories.interns.listByStatus(status, offset, PAGE_SIZE)
      for (const intern of interns) {
        if (!hasLiveLease(intern, environment.now())) await resumeAbandonedProvisioning(environment, intern)
      }
      if (interns.length < PAGE_SIZE) break
    }
  }
}

/** Sweeps every `intervalMs` until stopped; one sweep at a time, failures logged and retried at the next. */
export const startProvisioningSweep = (environment: InternEnvironment, intervalMs: number): ProvisioningSweep => {
  let current: Promise<void> | undefined
  const stopTimer = every(intervalMs, async () => {
    if (current) return
    current = sweepAbandonedProvisioning(environment)
      .catch((error) => environment.logger.warn('provisioning sweep failed', { error }))
      .finally(() => {
        current = undefined
      })
  })
  return {
    async stop() {
      stopTimer()
      await current
    },
  }
}
