/** Issuing and guarding API keys; shared by the `/keys` routes, the admin API and the CLI. */

import { ConflictError, InvalidRequestError } from '../core/errors'
import { sha256Hex } from '../core/crypto'
import type { AccountRecord } from '../repositories/accounts'
import { generateRawKey, type ApiKeyKind, type ApiKeyRecord } from '../repositories/api-keys'
import type { Repositories } from '../repositories'
import { resolveWorkspace } from './accounts'

export interface IssueKeyInput {
  kind: ApiKeyKind
  name: string
  /** Workspace UUID or slug; the account's default workspace when omitted. */
  workspaceId?: string
  /** The user the key acts for; the account's owner when omitted. */
  creatorUserId?: string
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
  })
  return { rawKey, record }
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
