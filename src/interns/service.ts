/**
 * The intern lifecycle. Creation is a sequence of idempotent steps under one claimed idempotency
 * record (claim → intern → vault → link → provision → complete), so a retry after a crash resumes
 * where the first attempt stopped, and concurrent retries from several processes converge on one
 * intern and one vault. Status moves (docs/decisions.md, Interns): stopped/failed → queued → provisioning → running;
 * running/queued/provisioning → stopped (suspend); any → destroying → gone or destroy_failed.
 */

import type { Caller } from '../services/caller'
import { randomId, sha256Hex } from '../core/crypto'
import { GatewayError, NotFoundError, StorageConflictError } from '../core/errors'
import type { InternRecord } from '../repositories/interns'
import type { WorkspaceRecord } from '../repositories/workspaces'
import { conflict, invalidTransition, toView, track, type InternEnvironment } from './environment'
import { startProvisioning } from './provisioning'

export { conflict, internEnvironment, toView, type InternEnvironment } from './environment'
export { startProvisioning } from './provisioning'

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

  // The attach field borrows a vault owned by another intern of the same workspace (docs/decisions.md, Interns).
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

/** Suspends a running (or still provisioning) intern. */
export const suspendIntern = async (environment: InternEnvironment, intern: InternRecord, workspace: WorkspaceRecord) => {
  if (!['running', 'queued', 'provisioning'].includes(intern.status)) throw invalidTransition(intern.status, 'suspend')
  if (intern.status === 'running') await environment.runtime.suspend(toView(intern, workspace))
  const updated = await environment.repositories.interns.update(intern.id, (current) => {
    if (!['running', 'queued', 'provisioning'].includes(current.status)) throw invalidTransition(current.status, 'suspend')
    return { ...current, status: 'stopped', progress: null, provisioningLease: null }
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
