/**
 * The intern lifecycle. Creation is a sequence of idempotent steps under one claimed idempotency
 * record (claim → intern → vault → link → provision → complete), so a retry after a crash resumes
 * where the first attempt stopped, and concurrent retries from several processes converge on one
 * intern and one vault. Status moves (gaps 1.1): stopped/failed → queued → provisioning → running;
 * running/queued/provisioning → stopped (suspend); any → destroying → gone or destroy_failed.
 */

import type { Caller } from '../core/auth'
import { randomId, sha256Hex } from '../core/crypto'
import { ConflictError, GatewayError, NotFoundError, StorageConflictError } from '../core/errors'
import type { Logger } from '../core/logger'
import type { Repositories } from '../repositories'
import type { InternRecord, InternStatus } from '../repositories/interns'
import type { WorkspaceRecord } from '../repositories/workspaces'
import type { InternRuntime, InternView } from './runtime'

export interface InternEnvironment {
  repositories: Repositories
  runtime: InternRuntime
  logger: Logger
  now: () => Date
  /** Background work (provisioning, destruction) still running in this process. */
  tasks: Set<Promise<unknown>>
}

/** The spec's Intern object; every key present, null where unset (gaps §2). */
export const toInternWire = (intern: InternRecord) => ({
  id: intern.id,
  name: intern.name,
  description: intern.description,
  instructions: intern.instructions,
  model: intern.model,
  status: intern.status,
  hostname: intern.hostname,
  progress: intern.progress,
  last_failure_message: intern.lastFailureMessage,
  vault_id: intern.vaultId,
  attached_vault_id: intern.attachedVaultId,
  workspace_id: intern.workspaceId,
  created_at: intern.createdAt,
  updated_at: intern.updatedAt,
})

export const conflict = (reason: string, message: string): GatewayError => new ConflictError(message, { reason, retryable: false })

const track = (environment: InternEnvironment, work: Promise<unknown>) => {
  const task = work.catch((error) => environment.logger.error('intern background task failed', { error })).finally(() => environment.tasks.delete(task))
  environment.tasks.add(task)
}

/** The intern as its runtime sees it: the model it should run with now. */
export const toView = (intern: InternRecord, workspace: WorkspaceRecord): InternView => ({
  id: intern.id,
  name: intern.name,
  workspaceId: intern.workspaceId,
  instructions: intern.instructions,
  model: intern.runningModel ?? intern.model ?? workspace.defaultTextModel,
  vaultId: intern.vaultId,
  attachedVaultId: intern.attachedVaultId,
  hostname: intern.hostname,
})

export interface CreateInternInput {
  name: string
  description?: string | null
  instructions?: string | null
  model?: string | null
  provision: boolean
  vaultId?: string | null
}

/**
 * Creates an intern (or resumes/replays the creation keyed by `idempotencyKey`, or by the body when
 * absent). Resolves with the intern and whether this call is the one that first claimed the key.
 */
export const createIntern = async (
  environment: InternEnvironment,
  caller: Caller,
  workspace: WorkspaceRecord,
  input: CreateInternInput,
  idempotencyKey: string | null,
): Promise<{ intern: InternRecord; isFirst: boolean }> => {
  const { repositories } = environment
  const fingerprint = await sha256Hex(JSON.stringify(input))
  const creationId = await sha256Hex(`${caller.account.id}\u0000${workspace.id}\u0000${idempotencyKey ?? `body:${fingerprint}`}`)
  const claimed = await repositories.interns.creations.claim({
    id: creationId,
    accountId: caller.account.id,
    fingerprint,
    internId: randomId(),
    vaultId: randomId(),
    state: 'started',
    createdAt: environment.now().toISOString(),
  })
  const creation = claimed.record
  if (creation.fingerprint !== fingerprint) {
    throw conflict('idempotency_key_reused', 'This Idempotency-Key was already used with a different request body')
  }
  if (creation.state === 'completed') {
    const intern = await repositories.interns.get(creation.internId)
    if (intern) return { intern, isFirst: false }
    if (idempotencyKey !== null) throw new NotFoundError('The intern created with this idempotency key was deleted', { reason: 'not_found' })
    // A key derived from the body must not block creating the same intern again once it was deleted:
    // drop the stale claim (unless a concurrent retry already replaced it) and create afresh.
    await repositories.interns.creations.release(creationId, claimed.version).catch((error) => {
      if (!(error instanceof StorageConflictError)) throw error
    })
    return createIntern(environment, caller, workspace, input, idempotencyKey)
  }

  // The attach field borrows a vault owned by another intern of the same workspace (gaps 1.1).
  if (input.vaultId) {
    const vault = await repositories.interns.vaults.get(input.vaultId)
    if (!vault || vault.workspaceId !== workspace.id || vault.internId === creation.internId) {
      if (claimed.isNew) await repositories.interns.creations.release(creationId)
      throw conflict('vault_not_attachable', 'vault_id must be the vault of another intern in this workspace')
    }
  }

  const timestamp = environment.now().toISOString()
  const created = await repositories.interns.create({
    id: creation.internId,
    accountId: caller.account.id,
    workspaceId: workspace.id,
    creatorUserId: caller.account.ownerUserId,
    name: input.name,
    description: input.description ?? null,
    instructions: input.instructions ?? null,
    model: input.model ?? null,
    runningModel: null,
    provisioningId: null,
    // Not provisioned yet: stopped until a provision call (or `provision: true`) starts it.
    status: 'stopped',
    hostname: null,
    progress: null,
    lastFailureMessage: null,
    vaultId: null,
    attachedVaultId: input.vaultId ?? null,
    createdAt: timestamp,
    updatedAt: timestamp,
    sortKey: repositories.interns.newSortKey(timestamp),
  })
  if (created === 'name_taken') {
    await repositories.interns.creations.release(creationId)
    throw conflict('name_taken', `An intern named "${input.name}" already exists in this workspace`)
  }

  const vault = await repositories.interns.vaults.create({
    id: creation.vaultId,
    accountId: caller.account.id,
    workspaceId: workspace.id,
    internId: creation.internId,
    createdAt: timestamp,
  })
  let intern = await repositories.interns.update(creation.internId, (current) => (current.vaultId ? null : { ...current, vaultId: vault.id }))
  intern ??= await repositories.interns.get(creation.internId)
  if (!intern) throw new NotFoundError('Intern not found', { reason: 'not_found' })
  // spec: with `provision: true`, provisioning starts during the create operation.
  if (input.provision && intern.status === 'stopped' && intern.runningModel === null && intern.hostname === null) {
    intern = await startProvisioning(environment, intern, workspace)
  }
  await repositories.interns.creations.complete(creationId)
  return { intern, isFirst: claimed.isNew }
}

const PROVISIONABLE: ReadonlySet<InternStatus> = new Set(['stopped', 'failed'])
const PROVISIONING: ReadonlySet<InternStatus> = new Set(['queued', 'provisioning'])

/** Queues provisioning and runs it in the background. Idempotent while already queued or provisioning. */
export const startProvisioning = async (environment: InternEnvironment, intern: InternRecord, workspace: WorkspaceRecord) => {
  const { repositories, runtime } = environment
  if (PROVISIONING.has(intern.status)) return intern
  let queued: InternRecord | null = null
  // Each provisioning run has its own id, so a run overtaken by suspend + provision cannot finish the newer one.
  const attemptId = randomId()
  const updated = await repositories.interns.update(intern.id, (current) => {
    if (PROVISIONING.has(current.status)) return null
    if (!PROVISIONABLE.has(current.status)) throw invalidTransition(current.status, 'provision')
    queued = { ...current, status: 'queued', progress: null, lastFailureMessage: null, provisioningId: attemptId }
    return queued
  })
  if (!queued || !updated) return (await repositories.interns.get(intern.id)) ?? intern
  // The configured model takes effect at this provision (spec: Update intern `model`).
  const model = updated.model ?? workspace.defaultTextModel
  const view = toView({ ...updated, runningModel: model }, workspace)
  const controller = new AbortController()
  const stillWanted = (current: InternRecord) => PROVISIONING.has(current.status) && current.provisioningId === attemptId

  track(
    environment,
    (async () => {
      try {
        const { hostname } = await runtime.provision(
          view,
          async (step) => {
            const next = await repositories.interns.update(intern.id, (current) =>
              stillWanted(current)
                ? { ...current, status: 'provisioning', progress: { step_label: step.label, step_number: step.number, total_steps: step.total } }
                : null,
            )
            // Suspended or deleted meanwhile: stop provisioning.
            const current = next ?? (await repositories.interns.get(intern.id))
            if (!current || !stillWanted(current)) controller.abort()
            if (controller.signal.aborted) throw new Error('provisioning was cancelled')
          },
          controller.signal,
        )
        await repositories.interns.update(intern.id, (current) =>
          stillWanted(current) ? { ...current, status: 'running', progress: null, hostname, runningModel: model, lastFailureMessage: null } : null,
        )
      } catch (error) {
        if (controller.signal.aborted) return
        const message = error instanceof Error ? error.message : 'Provisioning failed'
        await repositories.interns.update(intern.id, (current) =>
          stillWanted(current) ? { ...current, status: 'failed', progress: null, lastFailureMessage: message.slice(0, 2000) } : null,
        )
      }
    })(),
  )
  return updated
}

export const invalidTransition = (status: InternStatus, action: string): GatewayError =>
  conflict('invalid_transition', `Cannot ${action} an intern whose status is ${status}`)

/** Suspends a running (or still provisioning) intern. */
export const suspendIntern = async (environment: InternEnvironment, intern: InternRecord, workspace: WorkspaceRecord) => {
  if (!['running', 'queued', 'provisioning'].includes(intern.status)) throw invalidTransition(intern.status, 'suspend')
  if (intern.status === 'running') await environment.runtime.suspend(toView(intern, workspace))
  const updated = await environment.repositories.interns.update(intern.id, (current) => {
    if (!['running', 'queued', 'provisioning'].includes(current.status)) throw invalidTransition(current.status, 'suspend')
    return { ...current, status: 'stopped', progress: null }
  })
  if (!updated) throw new NotFoundError('Intern not found', { reason: 'not_found' })
  return updated
}

/** Starts destruction: the record goes (with its vault and conversation) or ends in destroy_failed. */
export const destroyIntern = async (environment: InternEnvironment, intern: InternRecord, workspace: WorkspaceRecord) => {
  const { repositories, runtime } = environment
  if (intern.status === 'destroying') return intern
  const updated = await repositories.interns.update(intern.id, (current) =>
    current.status === 'destroying' ? null : { ...current, status: 'destroying', progress: null },
  )
  if (!updated) return (await repositories.interns.get(intern.id)) ?? intern
  track(
    environment,
    (async () => {
      try {
        await runtime.destroy(toView(updated, workspace))
        if (updated.vaultId) await repositories.interns.vaults.delete(updated.vaultId)
        await repositories.interns.conversations.delete(updated.id)
        await repositories.interns.delete(updated.id)
      } catch (error) {
        await repositories.interns.update(intern.id, (current) =>
          current.status === 'destroying'
            ? { ...current, status: 'destroy_failed', lastFailureMessage: error instanceof Error ? error.message.slice(0, 2000) : 'Destroy failed' }
            : null,
        )
      }
    })(),
  )
  return updated
}

/** Applies an update; a taken name → 409 `name_taken`. */
export const updateIntern = async (
  environment: InternEnvironment,
  intern: InternRecord,
  changes: { name?: string; description?: string | null; instructions?: string | null; model?: string | null },
) => {
  const fields = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined))
  try {
    const updated = await environment.repositories.interns.update(intern.id, (current) => ({ ...current, ...fields }))
    if (!updated) throw new NotFoundError('Intern not found', { reason: 'not_found' })
    return updated
  } catch (error) {
    if (error instanceof GatewayError && 'kind' in error && error.kind === 'unique') {
      throw conflict('name_taken', `An intern named "${changes.name}" already exists in this workspace`)
    }
    throw error
  }
}
