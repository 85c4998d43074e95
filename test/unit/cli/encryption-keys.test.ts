import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { resolveConfig } from '../../../src/cli/config'
import { resolveEncryptionKeys } from '../../../src/cli/encryption-keys'
import { silentLogger } from '../../../src/core/logger'

const directories: string[] = []
afterEach(async () => {
  await Promise.all(directories.splice(0).map((directory) => rm(directory, { recursive: true, force: true })))
})

const scratch = async () => {
  const directory = await mkdtemp(join(tmpdir(), 'modelgate-dev-key-'))
  directories.push(directory)
  return directory
}

const modeOf = async (path: string) => (await stat(path)).mode & 0o777

describe('the development encryption key', () => {
  it('is generated into a 0600 file in a 0700 data directory', async () => {
    const dataDir = join(await scratch(), 'data')
    const [key] = await resolveEncryptionKeys(resolveConfig({ dev: true, dataDir }), silentLogger)
    expect((await readFile(join(dataDir, 'dev-encryption-key'), 'utf8')).trim()).toBe(key)
    expect(await modeOf(dataDir)).toBe(0o700)
    expect(await modeOf(join(dataDir, 'dev-encryption-key'))).toBe(0o600)
  })

  it('tightens a data directory and key file that others could read, and keeps the key', async () => {
    const dataDir = join(await scratch(), 'data')
    await mkdir(dataDir, { mode: 0o755 })
    await chmod(dataDir, 0o755)
    const key = Buffer.alloc(32, 7).toString('base64')
    await writeFile(join(dataDir, 'dev-encryption-key'), `${key}\n`, { mode: 0o644 })
    await chmod(join(dataDir, 'dev-encryption-key'), 0o644)
    expect(await resolveEncryptionKeys(resolveConfig({ dev: true, dataDir }), silentLogger)).toEqual([key])
    expect(await modeOf(dataDir)).toBe(0o700)
    expect(await modeOf(join(dataDir, 'dev-encryption-key'))).toBe(0o600)
  })
})
