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

/** Fails start-up when credentials exist that no configured key can open. */
export const assertCanOpenStoredSecrets = (credentialCount: number, keys: string[]) => {
  if (credentialCount > 0 && keys.length === 0) {
    throw new Error(
      `modelgate: the store holds ${credentialCount} BYOK credential(s) but no encryption key is configured; ` +
        'set MODELGATE_ENCRYPTION_KEYS to the key they were sealed with (or start with --dev to use the development key)',
    )
  }
}
