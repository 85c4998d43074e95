/** Issuing and guarding API keys; shared by the `/keys` routes, the admin API and the CLI. */

import { ConflictError, InvalidRequestError, NotFoundError } from '../core/errors'
import { sha256Hex } from '../core/crypto'
import type { AccountRecord } from '../repositories/accounts'
import { generateRawKey, type ApiKeyKind, type ApiKeyLimits, type ApiKeyRecord } from '../repositories/api-keys'
import type { Repositories } from '../repositories'
import type { ResponseCacheSetting } from '../repositories/response-cache'
import { isUniqueConflict } from '../repositories/mutate'
import { resolveWorkspace } from './accounts'

export interface IssueKeyInput extends Partial<ApiKeyLimits> {
  kind: ApiKeyKind
  name: string
  /** Workspace UUID or slug; the account's default workspace when omitted. */
  workspaceId?: string
  /** The user the key acts for; the account's owner when omitted. */
  creatorUserId?: string
  /** The response cache's default for the key's requests (docs/decisions.md, Response cache); off when omitted. */
  cache?: ResponseCacheSetting | null
}

/** Creates a key and returns the raw secret once; only its hash is stored. */
export const issueApiKey = async (repositories: Repositories, account: AccountRecord, input: IssueKeyInput) => {
  const workspace = await resolveWorkspace(repositories, account, input.workspaceId)
  const rawKey = generateRawKey()
  const record = await repositories.apiKeys.create(rawKey, {
    accountId: account.id,
    workspaceId: workspace.id,
    kind: input.kind,
    name: input.name,
    creatorUserId: input.creatorUserId ?? account.ownerUserId,
    limitNano: input.limitNano,
    limitReset: input.limitReset,
    includeByokInLimit: input.includeByokInLimit,
    expiresAt: input.expiresAt,
    cache: input.cache ?? undefined,
  })
  return { rawKey, record }
}

/**
 * On a store where `account` has no management key at all, mints one and returns its raw value (once);
 * otherwise `null`. Of several processes starting together on one store, exactly one mints: the key
 * claims a unique name, so the others' creates fail atomically.
 */
export const mintFirstManagementKey = async (repositories: Repositories, account: AccountRecord) => {
  const { totalCount } = await repositories.apiKeys.listForAccount(account.id, { kind: 'management' }, 0, 0)
  if (totalCount > 0) return null
  const workspace = await resolveWorkspace(repositories, account, undefined)
  const rawKey = generateRawKey()
  try {
    const record = await repositories.apiKeys.create(
      rawKey,
      { accountId: account.id, workspaceId: workspace.id, kind: 'management', name: 'First management key', creatorUserId: account.ownerUserId },
      `first-management-key:${account.id}`,
    )
    return { rawKey, record }
  } catch (error) {
    if (isUniqueConflict(error)) return null
    throw error
  }
}

/** Keys an operator may choose themselves (`MODELGATE_MANAGEMENT_KEY`) must still be hard to guess. */
export const OPERATOR_KEY_PATTERN = /^[\x21-\x7e]{16,512}$/

/**
 * Makes `rawKey` a management key of `account` (idempotent, safe from several processes at once).
 * A key that exists with another account or kind is refused rather than silently promoted.
 */
export const ensureManagementKey = async (
  repositories: Repositories,
  account: AccountRecord,
  rawKey: string,
  name = 'Operator management key',
): Promise<{ record: ApiKeyRecord; created: boolean }> => {
  if (!OPERATOR_KEY_PATTERN.test(rawKey)) {
    throw new InvalidRequestError('A management key must be 16 to 512 printable characters without spaces')
  }
  const hash = await sha256Hex(rawKey)
  const existing = await repositories.apiKeys.get(hash)
  const check = (record: ApiKeyRecord) => {
    if (record.accountId !== account.id || record.kind !== 'management') {
      throw new ConflictError('That key already exists as a key of another kind or account')
    }
    return { record, created: false }
  }
  if (existing) return check(existing)
  const workspace = await resolveWorkspace(repositories, account, undefined)
  try {
    const record = await repositories.apiKeys.create(rawKey, {
      accountId: account.id,
      workspaceId: workspace.id,
      kind: 'management',
      name,
      creatorUserId: account.ownerUserId,
    })
    return { record, created: true }
  } catch (error) {
    const winner = await repositories.apiKeys.get(hash)
    if (winner) return check(winner)
    throw error
  }
}

/**
 * Refuses to disable or delete the last enabled management key of an account: nobody could
 * manage it over HTTP afterwards. (The admin API and CLI can still mint a new one.)
 */
export const assertNotLastManagementKey = async (repositories: Repositories, key: ApiKeyRecord) => {
  if (key.kind !== 'management' || key.disabled) return
  const { totalCount } = await repositories.apiKeys.listForAccount(key.accountId, { kind: 'management', disabled: false }, 0, 0)
  if (totalCount <= 1) throw new ConflictError('This is the last enabled management key of the account; create another one first')
}

/** Hash prefixes shorter than this would match too much by accident. */
export const MIN_HASH_PREFIX = 8

/**
 * The key of `account` whose hash is `hashOrPrefix` or starts with it (at least 8 hex characters).
 * Throws 404 when none matches and 409 naming the candidates when the prefix is ambiguous.
 */
export const findKeyByHashPrefix = async (repositories: Repositories, account: AccountRecord, hashOrPrefix: string): Promise<ApiKeyRecord> => {
  const prefix = hashOrPrefix.trim().toLowerCase()
  if (!/^[0-9a-f]+$/.test(prefix) || prefix.length < MIN_HASH_PREFIX || prefix.length > 64) {
    throw new InvalidRequestError(`A key is named by its hash or a prefix of it: ${MIN_HASH_PREFIX} to 64 hex characters`)
  }
  const exact = prefix.length === 64 ? await repositories.apiKeys.get(prefix) : null
  if (exact) {
    if (exact.accountId !== account.id) throw new NotFoundError(`No key of account "${account.slug}" has a hash starting with ${prefix}`)
    return exact
  }
  const matches: ApiKeyRecord[] = []
  for (let offset = 0; ; offset += 100) {
    const { keys } = await repositories.apiKeys.listForAccount(account.id, {}, offset, 100)
    if (keys.length === 0) break
    matches.push(...keys.filter((key) => key.hash.startsWith(prefix)))
  }
  if (matches.length === 0) throw new NotFoundError(`No key of account "${account.slug}" has a hash starting with ${prefix}`)
  if (matches.length > 1) {
    throw new ConflictError(`${matches.length} keys have a hash starting with ${prefix}; give more of it (${matches.map((key) => key.hash.slice(0, 16)).join(', ')})`)
  }
  return matches[0]!
}
