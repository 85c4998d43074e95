/**
 * Master keys for the runner: configured ones, or in development mode a generated key kept in the
 * data directory. Refuses to serve stored BYOK credentials it could never decrypt.
 */

import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { generateMasterKey } from '../core/secrets'
import type { Logger } from '../core/logger'
import type { RunnerConfig } from './config'
import { ensurePrivateDirectory, PRIVATE_FILE_MODE, tightenFile } from '../storage/private-files'

const DEV_KEY_FILE = 'dev-encryption-key'

/** The keys to run with: configured ones, a development key, or none (BYOK writes are then refused). */
export const resolveEncryptionKeys = async (config: RunnerConfig, logger: Logger): Promise<string[]> => {
  if (config.encryptionKeys && config.encryptionKeys.length > 0) return config.encryptionKeys
  if (!config.dev) return []
  const path = join(config.dataDir, DEV_KEY_FILE)
  // The key opens every BYOK secret: its directory is owner-only too, like the embedded store's.
  await ensurePrivateDirectory(config.dataDir)
  let key: string
  try {
    key = (await readFile(path, 'utf8')).trim()
  } catch {
    key = generateMasterKey()
    await writeFile(path, `${key}\n`, { mode: PRIVATE_FILE_MODE, flag: 'wx' })
  }
  await tightenFile(path)
  logger.warn(
    `DEVELOPMENT MODE: BYOK keys are sealed with a generated encryption key stored in ${path}. ` +
      'Anyone who can read that file can decrypt them. Set MODELGATE_ENCRYPTION_KEYS in production.',
  )
  return [key]
}

/** What `gateway.admin.auditSecrets()` found: the key ids stored credentials need that are not configured. */
export interface SecretsAudit {
  total: number
  configuredKeyIds: string[]
  missing: Array<{ keyId: string; count: number }>
  unreadable: string[]
}

/**
 * Fails start-up when stored credentials need a master key that is not configured, as for an unreadable store:
 * serving would answer every request that needs one of them with an error. Key ids are fingerprints, safe to show.
 */
export const assertCanOpenStoredSecrets = (audit: SecretsAudit) => {
  if (audit.total > 0 && audit.configuredKeyIds.length === 0) {
    throw new Error(
      `modelgate: the store holds ${audit.total} BYOK credential(s) but no encryption key is configured; ` +
        'set MODELGATE_ENCRYPTION_KEYS to the key they were sealed with (or start with --dev to use the development key)',
    )
  }
  if (audit.missing.length === 0) return
  const needed = audit.missing.map(({ keyId, count }) => `${keyId} (${count} credential(s))`).join(', ')
  throw new Error(
    `modelgate: stored BYOK credentials were sealed with encryption key id ${needed}, which is not configured ` +
      `(the configured keys have ids ${audit.configuredKeyIds.join(', ')}). Add that key to MODELGATE_ENCRYPTION_KEYS, ` +
      'after the primary; to retire it, run modelgate byok reencrypt with both keys, then remove it',
  )
}
