/**
 * BYOK credentials: creation, update (including rotation in place), listing and re-encryption.
 * The raw key is only ever in memory: sealed before it is stored, masked before it is shown.
 */

import { randomId } from '../core/crypto'
import { InvalidRequestError, NotFoundError } from '../core/errors'
import type { SecretBox } from '../core/secrets'
import type { UpstreamGuard } from '../core/upstream-guard'
import type { CredentialFormat } from '../providers/contract'
import type { AccountRecord } from '../repositories/accounts'
import type { ByokRecord } from '../repositories/byok-credentials'
import type { Repositories } from '../repositories'
import { resolveWorkspace } from './accounts'

/** Associated data binding a sealed key to its credential and workspace: a ciphertext moved elsewhere fails to open. */
const associatedData = (record: Pick<ByokRecord, 'id' | 'workspaceId'>) => `modelgate:byok:v1:${record.id}:${record.workspaceId}`

/**
 * Masks a provider key: its public type prefix (`sk-`, `sk-ant-`, `gsk_`, …, the same for every key
 * of that kind) and its last four characters. Keys too short for that to hide enough show less.
 */
export const maskProviderKey = (raw: string): string => {
  const secret = raw.trim()
  const prefix = /^[A-Za-z]{1,5}[-_](?:[A-Za-z]{1,6}[-_])?/.exec(secret)?.[0] ?? ''
  if (secret.length - prefix.length >= 16) return `${prefix}...${secret.slice(-4)}`
  return secret.length >= 16 ? `...${secret.slice(-4)}` : '****'
}

/** A provider this gateway routes to, as BYOK needs to know it. */
export interface KnownProvider {
  displayName: string
  /** How its adapter reads a structured key (Azure's JSON list); absent, a key is one opaque secret. */
  credential?: CredentialFormat
}

/**
 * The providers this gateway routes to, built-in and operator-configured (`deepinfra/turbo` names `deepinfra`):
 * a key is only worth storing for one of them.
 */
export type ProviderLookup = (slug: string) => KnownProvider | undefined

/** Checks a raw key as its provider's adapter reads it and returns its label; the message never quotes the key. */
const labelFor = (provider: KnownProvider | undefined, rawKey: string, guard: UpstreamGuard): string => {
  const checked = provider?.credential?.check(rawKey, guard)
  if (!checked) return maskProviderKey(rawKey)
  if (!checked.ok) throw new InvalidRequestError(`body.key${checked.path === undefined ? '' : `.${checked.path}`}: ${checked.reason}`)
  return maskProviderKey(checked.labelled)
}

/** Throws 400 unless `slug` names a provider the gateway can call, and returns it. */
export const requireKnownProvider = (providers: ProviderLookup, slug: string, field: string) => {
  const known = providers(slug)
  // Never the value: a key pasted into the wrong field would be echoed into the caller's logs.
  if (!known) throw new InvalidRequestError(`${field}: must be a provider this gateway routes to (GET /providers lists them)`)
  return known
}

/** spec BYOK: every listed hash must belong to a key of the caller's account (400 otherwise). */
const assertOwnKeyHashes = async (repositories: Repositories, accountId: string, hashes: string[] | null | undefined) => {
  if (!hashes) return
  for (const [index, hash] of hashes.entries()) {
    const key = await repositories.apiKeys.get(hash)
    if (!key || key.accountId !== accountId) {
      throw new InvalidRequestError(`body.allowed_api_key_hashes.${index}: not the hash of an API key of this account`)
    }
  }
}

// spec BYOK credential: is_byok_only is only valid on non-fallback credentials.
const assertCompatibleFlags = (record: Pick<ByokRecord, 'isFallback' | 'isByokOnly'>) => {
  if (record.isFallback && record.isByokOnly) throw new InvalidRequestError('body: is_fallback and is_byok_only cannot both be true')
}

export interface ByokSettings {
  /** `null` (which `@openrouter/sdk` allows) names the credential after its provider, as when none is given. */
  name?: string | null
  disabled?: boolean
  isFallback?: boolean
  isByokOnly?: boolean
  isRequired?: boolean
  allowedApiKeyHashes?: string[] | null
  allowedModels?: string[] | null
  allowedUserIds?: string[] | null
  declaredZdr?: boolean | null
}

const withoutUndefined = (settings: ByokSettings): ByokSettings =>
  Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined))

const defaultName = (provider: { displayName: string }) => `${provider.displayName} key`

export const createByokCredential = async (
  repositories: Repositories,
  secrets: SecretBox,
  account: AccountRecord,
  input: ByokSettings & { provider: string; key: string; workspaceId?: string },
  now: Date,
  guard: UpstreamGuard,
  providers: ProviderLookup,
): Promise<ByokRecord> => {
  const provider = requireKnownProvider(providers, input.provider, 'body.provider')
  assertCompatibleFlags({ isFallback: input.isFallback ?? false, isByokOnly: input.isByokOnly ?? false })
  const label = labelFor(provider, input.key, guard)
  const workspace = await resolveWorkspace(repositories, account, input.workspaceId)
  await assertOwnKeyHashes(repositories, account.id, input.allowedApiKeyHashes)
  // After the last one, even when earlier ones were deleted (listing is in sort_order).
  const { credentials: existing } = await repositories.byok.list({ workspaceId: workspace.id, provider: input.provider }, 0)
  const sortOrder = existing.length === 0 ? 0 : existing.at(-1)!.sortOrder + 1
  const id = randomId()
  const timestamp = now.toISOString()
  const record: ByokRecord = {
    id,
    accountId: account.id,
    workspaceId: workspace.id,
    provider: input.provider,
    name: input.name ?? defaultName(provider),
    label,
    sortOrder,
    disabled: input.disabled ?? false,
    isFallback: input.isFallback ?? false,
    isByokOnly: input.isByokOnly ?? false,
    isRequired: input.isRequired ?? false,
    allowedApiKeyHashes: input.allowedApiKeyHashes ?? null,
    allowedModels: input.allowedModels ?? null,
    allowedUserIds: input.allowedUserIds ?? null,
    declaredZdr: input.declaredZdr ?? null,
    secret: await secrets.seal(input.key, associatedData({ id, workspaceId: workspace.id })),
    createdAt: timestamp,
    updatedAt: timestamp,
  }
  assertCompatibleFlags(record)
  return repositories.byok.create(record)
}

/** A credential of the account, or 404 (another account's reads as absent). */
export const requireByokCredential = async (repositories: Repositories, accountId: string, id: string) => {
  const record = await repositories.byok.get(id)
  if (!record || record.accountId !== accountId) throw new NotFoundError('BYOK credential not found')
  return record
}

export const updateByokCredential = async (
  repositories: Repositories,
  secrets: SecretBox,
  account: AccountRecord,
  id: string,
  input: ByokSettings & { key?: string },
  guard: UpstreamGuard,
  providers: ProviderLookup,
): Promise<ByokRecord> => {
  const current = await requireByokCredential(repositories, account.id, id)
  await assertOwnKeyHashes(repositories, account.id, input.allowedApiKeyHashes)
  const { key: _key, name, ...given } = withoutUndefined(input) as ByokSettings & { key?: string }
  // A provider the gateway no longer serves keeps its slug as the name.
  const fields = name === undefined ? given : { ...given, name: name ?? defaultName(providers(current.provider) ?? { displayName: current.provider }) }
  assertCompatibleFlags({ ...current, ...fields })
  // Rotation overwrites the sealed key in place; the seal is prepared before the compare-and-set.
  const rotated =
    input.key === undefined
      ? undefined
      : { label: labelFor(providers(current.provider), input.key, guard), secret: await secrets.seal(input.key, associatedData(current)) }
  const updated = await repositories.byok.update(id, (latest) => {
    const next = { ...latest, ...fields, ...rotated }
    assertCompatibleFlags(next)
    return next
  })
  if (!updated) throw new NotFoundError('BYOK credential not found')
  return updated
}

/** Decrypts a credential's raw key, in memory only, for one upstream call. */
export const revealByokKey = (secrets: SecretBox, record: ByokRecord): Promise<string> =>
  secrets.open(record.secret, associatedData(record))

/** Visits every credential of every account, a page at a time. */
const forEachCredential = async (repositories: Repositories, visit: (credential: ByokRecord) => Promise<void> | void) => {
  for (let offset = 0; ; offset += 100) {
    const { credentials } = await repositories.byok.list({}, offset, 100)
    if (credentials.length === 0) return
    for (const credential of credentials) await visit(credential)
  }
}

/**
 * Which master keys the stored credentials were sealed with, and whether this gateway holds them: key ids in use
 * that are not configured (`missing`, with how many credentials each), and credentials that fail to open with a
 * configured key (`unreadable`: altered or moved records). One credential per key id is opened as a sample.
 */
export const auditSealedSecrets = async (repositories: Repositories, secrets: SecretBox) => {
  const configured = new Set(await secrets.keyIds())
  const byKeyId = new Map<string, { count: number; sample: ByokRecord }>()
  let total = 0
  await forEachCredential(repositories, (credential) => {
    total++
    const entry = byKeyId.get(credential.secret.kid)
    if (entry) entry.count++
    else byKeyId.set(credential.secret.kid, { count: 1, sample: credential })
  })
  const missing: Array<{ keyId: string; count: number }> = []
  const unreadable: string[] = []
  for (const [keyId, { count, sample }] of byKeyId) {
    if (!configured.has(keyId)) {
      missing.push({ keyId, count })
      continue
    }
    await revealByokKey(secrets, sample).catch(() => unreadable.push(sample.id))
  }
  return { total, configuredKeyIds: [...configured], missing, unreadable }
}

/**
 * Re-seals every credential not sealed with the primary key (after a master-key rotation).
 * Returns how many were moved; safe to run while gateways serve (compare-and-set per record).
 */
export const reencryptByokCredentials = async (repositories: Repositories, secrets: SecretBox) => {
  const primary = await secrets.primaryKeyId()
  let moved = 0
  let scanned = 0
  // One unreadable credential (tampered, or sealed with a key no longer configured) must not stop the rest.
  const failed: string[] = []
  await forEachCredential(repositories, async (credential) => {
    scanned++
    if (credential.secret.kid === primary) return
    let raw: string
    try {
      raw = await revealByokKey(secrets, credential)
    } catch {
      failed.push(credential.id)
      return
    }
    const secret = await secrets.seal(raw, associatedData(credential))
    const updated = await repositories.byok.update(credential.id, (latest) =>
      latest.secret.kid === credential.secret.kid && latest.secret.ct === credential.secret.ct ? { ...latest, secret } : null,
    )
    if (updated) moved++
  })
  return failed.length > 0 ? { scanned, moved, failed } : { scanned, moved }
}
