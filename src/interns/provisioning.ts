/**
 * Provisioning runs (docs/decisions.md, Interns): stopped/failed → queued → provisioning → running, or failed. Each run
 * has its own id, written on the intern together with its lease (lease.ts) in one compare-and-set,
 * so exactly one run is wanted at a time and only that run may change the record: a run overtaken
 * (by suspend and provision again, or by a takeover once its lease expired) stops at its next step
 * and its late writes are ignored.
 */

import { randomId } from '../core/crypto'
import type { InternRecord, InternStatus } from '../repositories/interns'
import type { WorkspaceRecord } from '../repositories/workspaces'
import { invalidTransition, toView, track, type InternEnvironment } from './environment'
import { every, newLease } from '../core/lease'
import { hasLiveLease } from './lease'

const PROVISIONABLE: ReadonlySet<InternStatus> = new Set(['stopped', 'failed'])
export const PROVISIONING: ReadonlySet<InternStatus> = new Set(['queued', 'provisioning'])

/**
 * Claims a new run of the intern: from stopped or failed (unless `isTakeoverOnly`), or in place of a
 * run whose lease expired. Resolves `null` when a live run already holds it.
 */
const claimRun = async (environment: InternEnvironment, internId: string, isTakeoverOnly: boolean) => {
  const { repositories, now, provisioning } = environment
  const runId = randomId()
  let claimed: { previous: InternRecord } | null = null
  const intern = await repositories.interns.update(internId, (current) => {
    claimed = null
    if (PROVISIONING.has(current.status)) {
      // A run whose gateway still renews its lease is left alone: provisioning is idempotent.
      if (hasLiveLease(current, now())) return null
    } else if (isTakeoverOnly) return null
    else if (!PROVISIONABLE.has(current.status)) throw invalidTransition(current.status, 'provision')
    claimed = { previous: current }
    return {
      ...current,
      status: 'queued',
      progress: null,
      lastFailureMessage: null,
      provisioningId: runId,
      provisioningLease: newLease(provisioning, now()),
    }
  })
  if (!claimed || !intern) return null
  const { previous } = claimed as { previous: InternRecord }
  if (PROVISIONING.has(previous.status)) {
    environment.logger.warn('taking over an abandoned provisioning run', {
      internId,
      abandonedBy: previous.provisioningLease?.holder ?? null,
      holder: provisioning.holder,
    })
  }
  return { intern, runId }
}

/** Runs a claimed provisioning in the background, renewing its lease until it ends. */
const run = (environment: InternEnvironment, queued: InternRecord, workspace: WorkspaceRecord, runId: string) => {
  const { repositories, runtime, now, provisioning } = environment
  // The configured model takes effect at this provision (spec: Update intern `model`).
  const model = queued.model ?? workspace.defaultTextModel
  const view = toView({ ...queued, runningModel: model }, workspace)
  const controller = new AbortController()
  const isWanted = (current: InternRecord) => PROVISIONING.has(current.status) && current.provisioningId === runId

  /** Applies `change` while this run is still the wanted one; once it is not (suspended, deleted, taken over), stops the run. */
  const keepGoing = async (change: (current: InternRecord) => InternRecord, options?: { shouldKeepUpdatedAt: boolean }) => {
    const next = await repositories.interns.update(queued.id, (current) => (isWanted(current) ? change(current) : null), options)
    const current = next ?? (await repositories.interns.get(queued.id))
    if (!current || !isWanted(current)) controller.abort()
  }
  const finish = (change: (current: InternRecord) => InternRecord) =>
    repositories.interns.update(queued.id, (current) => (isWanted(current) ? { ...change(current), progress: null, provisioningLease: null } : null))

  track(
    environment,
    (async () => {
      const stopHeartbeat = every(provisioning.heartbeatIntervalMs, async () => {
        try {
          await keepGoing((current) => ({ ...current, provisioningLease: newLease(provisioning, now()) }), { shouldKeepUpdatedAt: true })
        } catch (error) {
          // The next beat tries again; should the lease lapse meanwhile, another gateway takes the run over.
          environment.logger.warn('could not renew a provisioning lease', { internId: queued.id, error })
        }
      })
      try {
        const { hostname } = await runtime.provision(
          view,
          async (step) => {
            await keepGoing((current) => ({
              ...current,
              status: 'provisioning',
              progress: { step_label: step.label, step_number: step.number, total_steps: step.total },
              provisioningLease: newLease(provisioning, now()),
            }))
            if (controller.signal.aborted) throw new Error('provisioning was cancelled')
          },
          controller.signal,
        )
        await finish((current) => ({ ...current, status: 'running', hostname, runningModel: model, lastFailureMessage: null }))
      } catch (error) {
        if (controller.signal.aborted) return
        const message = error instanceof Error ? error.message : 'Provisioning failed'
        await finish((current) => ({ ...current, status: 'failed', lastFailureMessage: message.slice(0, 2000) }))
      } finally {
        stopHeartbeat()
      }
    })(),
  )
}

/**
 * Queues provisioning and runs it in the background. Idempotent while a live run holds the intern;
 * a run whose gateway died (its lease expired) is taken over and started again here.
 */
export const startProvisioning = async (environment: InternEnvironment, intern: InternRecord, workspace: WorkspaceRecord) => {
  const claim = await claimRun(environment, intern.id, false)
  if (!claim) return (await environment.repositories.interns.get(intern.id)) ?? intern
  run(environment, claim.intern, workspace, claim.runId)
  return claim.intern
}

/** Takes over the intern's provisioning if its run was abandoned (its lease expired); does nothing otherwise. */
export const resumeAbandonedProvisioning = async (environment: InternEnvironment, intern: InternRecord) => {
  if (!PROVISIONING.has(intern.status) || hasLiveLease(intern, environment.now())) return
  const workspace = await environment.repositories.workspaces.get(intern.workspaceId)
  if (!workspace) return
  const claim = await claimRun(environment, intern.id, true)
  if (claim) run(environment, claim.intern, workspace, claim.runId)
}
