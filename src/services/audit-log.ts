/**
 * The audit log (docs/decisions.md, Audit log): every administrative change, written after the change itself, logged
 * at info and kept in the store for `retentionDays`, swept in bounded pages as the usage ledger is. A failed write
 * never undoes or fails the change: it is logged at error with the whole entry, which the info line carries too.
 */

import { randomId } from '../core/crypto'
import type { Logger } from '../core/logger'
import { causeOf, startPeriodicTask, sweepOlderThan } from '../core/periodic'
import type { AuditAction, AuditActor, AuditEntryRecord, AuditLogRepository, AuditTargetType } from '../repositories/audit-log'
import type { ApiKeyRecord } from '../repositories/api-keys'
import type { JsonObject, JsonValue } from '../storage/contract'

export const DEFAULT_AUDIT_RETENTION_DAYS = 90
export const DEFAULT_AUDIT_SWEEP_INTERVAL_MS = 10 * 60_000

const DAY_MS = 86_400_000
/** How many hex characters of a key hash an entry may hold, wherever it appears. */
const HASH_PREFIX_LENGTH = 8

/** The acting key as an entry names it: its kind and hash prefix, never the key or its whole hash. */
export const actorOfKey = (key: Pick<ApiKeyRecord, 'hash' | 'kind'>): AuditActor => ({ keyPrefix: key.hash.slice(0, HASH_PREFIX_LENGTH), kind: key.kind })

/** The operator, acting through `gateway.admin` or the CLI, with no key. */
export const OPERATOR: AuditActor = { keyPrefix: null, kind: 'operator' }

/** A key as a target: by its hash prefix, as the actor is. */
export const keyTargetId = (hash: string): string => hash.slice(0, HASH_PREFIX_LENGTH)

/** Fields whose value is a secret: only that they were set is recorded. */
const SECRET_FIELDS = new Set(['key', 'api_key', 'apiKey', 'raw_key', 'rawKey', 'secret', 'password', 'token'])
/** Fields holding key hashes: recorded as their prefixes. */
const KEY_HASH_FIELDS = new Set(['hash', 'key_hash', 'keyHash', 'key_hashes', 'allowed_api_key_hashes', 'allowedApiKeyHashes'])

export const REDACTED = '[redacted]'
/** A longer string (instructions, a system prompt) is kept as its start and its length. */
const STRING_MAX = 256

// Defence in depth, for a secret or hash under a name the lists above do not know: raw keys of ours, whole hashes.
const RAW_KEY = /mg-v1-[0-9a-f]+/g
const WHOLE_HASH = /[0-9a-f]{64}/g

const redactString = (value: string): string => {
  const cleaned = value.replace(RAW_KEY, REDACTED).replace(WHOLE_HASH, (hash) => `${hash.slice(0, HASH_PREFIX_LENGTH)}…`)
  return cleaned.length <= STRING_MAX ? cleaned : `${cleaned.slice(0, STRING_MAX)}… (${cleaned.length} characters)`
}

const redactValue = (value: unknown): JsonValue | undefined => {
  if (value === undefined) return undefined
  if (value === null || typeof value === 'boolean') return value
  if (typeof value === 'number') return Number.isFinite(value) ? value : null
  if (typeof value === 'string') return redactString(value)
  if (Array.isArray(value)) return value.map((item) => redactValue(item) ?? null)
  if (typeof value === 'object') return redactChanges(value as Record<string, unknown>)
  return null
}

/**
 * `changes` as an entry keeps them: secrets as `[redacted]`, key hashes as their prefixes, long strings cut, omitted
 * (undefined) fields dropped.
 */
export const redactChanges = (changes: Record<string, unknown>): JsonObject => {
  const kept: JsonObject = {}
  for (const [field, value] of Object.entries(changes)) {
    if (value === undefined) continue
    if (SECRET_FIELDS.has(field)) kept[field] = value === null ? null : REDACTED
    else if (KEY_HASH_FIELDS.has(field) && typeof value === 'string') kept[field] = value.slice(0, HASH_PREFIX_LENGTH)
    else if (KEY_HASH_FIELDS.has(field) && Array.isArray(value)) kept[field] = value.map((hash) => String(hash).slice(0, HASH_PREFIX_LENGTH))
    else kept[field] = redactValue(value) ?? null
  }
  return kept
}

/** One administrative change, as its maker describes it. */
export interface AuditEvent {
  action: AuditAction
  actor: AuditActor
  target: { type: AuditTargetType; id: string }
  accountId: string | null
  workspaceId?: string | null
  /** The changed fields (wire names) and their new values; secrets are redacted here, whatever the caller passes. */
  changes?: Record<string, unknown>
  requestId?: string | null
}

export interface AuditLogSettings {
  /** Days an entry is kept. */
  retentionDays: number
  /** How often this process sweeps expired entries; `false` for never (another process sweeps). */
  sweepIntervalMs: number | false
}

export interface AuditLog {
  readonly retentionDays: number
  /** Logs and stores an entry for a change already made; never rejects (a failed store write is logged at error). */
  record(event: AuditEvent): Promise<void>
  /** Deletes expired entries, at most a bounded number per call; resolves with how many went. */
  sweep(): Promise<number>
  /** Stops the sweep and waits for one under way. */
  close(): Promise<void>
}

/** The entry's fields as the log line carries them (the same as the stored entry, in the wire's names). */
export const toAuditWire = (entry: Omit<AuditEntryRecord, 'sortKey'>) => ({
  id: entry.id,
  created_at: entry.createdAt,
  actor: { key_prefix: entry.actor.keyPrefix, kind: entry.actor.kind },
  action: entry.action,
  target: entry.target,
  account_id: entry.accountId,
  workspace_id: entry.workspaceId,
  changes: entry.changes,
  request_id: entry.requestId,
})

export const createAuditLog = (repository: AuditLogRepository, settings: AuditLogSettings, now: () => Date, logger: Logger): AuditLog => {
  const record = async (event: AuditEvent): Promise<void> => {
    const entry = {
      id: randomId(),
      createdAt: now().toISOString(),
      actor: event.actor,
      action: event.action,
      target: event.target,
      accountId: event.accountId,
      workspaceId: event.workspaceId ?? null,
      changes: redactChanges(event.changes ?? {}),
      requestId: event.requestId ?? null,
    }
    const fields = toAuditWire(entry)
    logger.info('audit', fields)
    try {
      await repository.append(entry)
    } catch (error) {
      // The change is made and its answer is due: failing it now would invite a retry that changes things twice (a
      // second key, whose first raw key is lost). The line above and this one keep the entry for the operator.
      logger.error('audit entry not stored; the change it records stands', { entry: fields, error, ...causeOf(error) })
    }
  }

  const sweep = () => sweepOlderThan(repository.deleteOlderThan, new Date(now().getTime() - settings.retentionDays * DAY_MS).toISOString(), logger, 'audit log')
  const sweeping = startPeriodicTask(settings.sweepIntervalMs, sweep, (error) => logger.warn('audit log sweep failed; retrying at the next', { error }))

  return {
    retentionDays: settings.retentionDays,
    record,
    sweep,
    async close() {
      await sweeping.stop()
    },
  }
}
