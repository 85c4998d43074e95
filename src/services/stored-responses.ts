/**
 * Stored responses (docs/decisions.md, Stored responses): a `/responses` answer kept with its input and the
 * conversation before it, under the asking key's workspace, for `retentionDays`, swept in bounded pages as the usage
 * ledger is. The content follows the workspace's data-logging settings: readable where the workspace keeps content
 * readable (its I/O logging), else sealed with the gateway's encryption key, and never stored where it could be
 * neither.
 */

import type { Logger } from '../core/logger'
import { startPeriodicTask, sweepOlderThan } from '../core/periodic'
import type { SecretBox } from '../core/secrets'
import type { StoredResponseContent, StoredResponseRecord, StoredResponsesRepository } from '../repositories/stored-responses'
import type { WorkspaceRecord } from '../repositories/workspaces'
import { keepContent, openContent } from './sealed-content'

export const DEFAULT_STORED_RESPONSE_RETENTION_DAYS = 30
export const DEFAULT_STORED_RESPONSE_SWEEP_INTERVAL_MS = 10 * 60_000

const DAY_MS = 86_400_000

export interface StoredResponsesSettings {
  retentionDays: number
  /** How often expired responses are swept; `false` never (tests call `sweep`). */
  sweepIntervalMs: number | false
}

/** Whose a response is: only the workspace that stored it may read, continue or delete it. */
export interface ResponseOwner {
  accountId: string
  workspaceId: string
}

/** Why a workspace's responses cannot be stored, or null when they can. */
export type StoreRefusal = 'workspace_off' | 'no_encryption_key'

/** The workspace setting that turns storing off; workspaces stored before it existed store. */
export const isResponseStorageOn = (workspace: Pick<WorkspaceRecord, 'isResponseStorageEnabled'>) => workspace.isResponseStorageEnabled !== false

// Binds a sealed content to its response and workspace: moved to another record, it no longer opens.
const associatedData = (id: string, owner: ResponseOwner) => `stored-response:${owner.accountId}:${owner.workspaceId}:${id}`

export const createStoredResponses = (
  repository: StoredResponsesRepository,
  secrets: SecretBox,
  settings: StoredResponsesSettings,
  now: () => Date,
  logger: Logger,
) => {
  const cutoff = () => new Date(now().getTime() - settings.retentionDays * DAY_MS).toISOString()
  const sweep = () => sweepOlderThan(repository.deleteOlderThan, cutoff(), logger, 'stored responses')
  const sweeping = startPeriodicTask(settings.sweepIntervalMs, sweep, (error) => logger.warn('stored responses sweep failed; retrying at the next', { error }))

  /** The record of `id` if `owner` may see it and its retention has not run out. */
  const find = async (id: string, owner: ResponseOwner): Promise<StoredResponseRecord | null> => {
    const record = await repository.get(id)
    if (!record || record.accountId !== owner.accountId || record.workspaceId !== owner.workspaceId) return null
    return record.createdAt < cutoff() ? null : record
  }

  return {
    retentionDays: settings.retentionDays,

    /** Why `workspace` cannot store responses, or null: it turned storing off, or wants sealed content and no key can seal. */
    refusal(workspace: Pick<WorkspaceRecord, 'isResponseStorageEnabled' | 'isObservabilityIoLoggingEnabled'>): StoreRefusal | null {
      if (!isResponseStorageOn(workspace)) return 'workspace_off'
      if (!workspace.isObservabilityIoLoggingEnabled && !secrets.isConfigured) return 'no_encryption_key'
      return null
    },

    async save(id: string, owner: ResponseOwner, workspace: Pick<WorkspaceRecord, 'isObservabilityIoLoggingEnabled'>, content: StoredResponseContent): Promise<void> {
      await repository.save({ id, ...owner, createdAt: now().toISOString(), content: await keepContent(secrets, workspace, content, associatedData(id, owner)) })
    },

    /** The content of `id` as `owner` may read it; null when it is not there for this owner (absent, expired, another's). */
    async load(id: string, owner: ResponseOwner): Promise<StoredResponseContent | null> {
      const record = await find(id, owner)
      if (!record) return null
      return openContent(secrets, record.content, associatedData(id, owner))
    },

    /** Whether `owner` had `id` to delete. */
    async delete(id: string, owner: ResponseOwner): Promise<boolean> {
      return (await find(id, owner)) !== null && (await repository.delete(id))
    },

    sweep,
    async close() {
      await sweeping.stop()
    },
  }
}

export type StoredResponses = ReturnType<typeof createStoredResponses>
