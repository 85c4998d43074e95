/**
 * The runner's storage picker: SQLite by default, in `<dataDir>/modelgate.db`, and the embedded file store of the
 * previous release moved into it at the first start (src/storage/sql/sqlite-import.ts), written here by that
 * release's own driver.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, rename, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { resolveConfig } from '../../../src/cli/config'
import { openStorage, sqlitePathOf } from '../../../src/cli/storage'
import { isGatewayError } from '../../../src/core/errors'
import type { StorageDriver } from '../../../src/storage/contract'
import { openFileStorage } from '../../../src/storage/file'
import { createRecordingLogger } from '../../helpers/logger'

const TTL_MS = 86_400_000
const directories: string[] = []
const drivers: StorageDriver[] = []

const scratch = async () => {
  const directory = await mkdtemp(join(tmpdir(), 'modelgate-storage-picker-'))
  directories.push(directory)
  return directory
}

afterEach(async () => {
  await Promise.all(drivers.splice(0).map((driver) => driver.close()))
  await Promise.all(directories.splice(0).map((directory) => rm(directory, { recursive: true, force: true })))
})

const openTracked = async (config: Parameters<typeof openStorage>[0], logger = createRecordingLogger().logger) => {
  const driver = await openStorage(config, logger)
  drivers.push(driver)
  return driver
}

const rejectionOf = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

/** A store as the file driver of the previous release leaves it: records, counters, tallies, a settled id and a live hold. */
const writeFileStore = async (dataDir: string) => {
  const store = await openFileStorage({ directory: dataDir })
  await store.create('widgets', { id: 'w1', data: { n: 1 }, uniques: ['slug:one'], indexes: { color: 'red' }, sortKey: 'b' })
  await store.update('widgets', 'w1', 1, { id: 'w1', data: { n: 2 }, uniques: ['slug:uno'], indexes: { color: 'blue' }, sortKey: 'b' })
  await store.create('widgets', { id: 'w2', data: { n: 3 }, indexes: { color: 'blue' }, sortKey: 'a' })
  await store.createMany('generations', [
    { id: 'g1', data: { cost: 1 }, indexes: { accountId: 'acc', accountDay: 'acc|2025-01-01' }, sortKey: '2025-01-01T00:00:00.000Z' },
    { id: 'g2', data: { cost: 2 }, indexes: { accountId: 'acc', accountDay: 'acc|2025-01-02' }, sortKey: '2025-01-02T00:00:00.000Z' },
  ])
  const rate = await store.increment('rate:k1:minute', 3, 600_000)
  // Spend as a release before tallies kept it: a counter, carried into the tally of the same key.
  await store.increment('spend:key:old:usage:total', 500, TTL_MS)
  await store.hold({ id: 'settled-hold', owner: 'old-process', leaseMs: 600_000, changes: [{ key: 'spend:key:k1:usage:total', amount: 1_000, ttlMs: TTL_MS }] })
  await store.settle([{ id: 'settled-hold', changes: [{ key: 'spend:key:k1:usage:total', amount: 250, ttlMs: TTL_MS }] }])
  // Held by a process that is gone: released, so the 1 000 it reserved is free again.
  await store.hold({ id: 'open-hold', owner: 'old-process', leaseMs: 600_000, changes: [{ key: 'spend:key:k1:usage:total', amount: 1_000, ttlMs: TTL_MS }] })
  await store.close()
  return { rate }
}

const storeFiles = async (dataDir: string) => (await readdir(dataDir)).filter((name) => /^(snapshot|journal)\./.test(name)).sort()

describe('the runner storage picker', () => {
  it('opens SQLite in the data directory by default, or at the path after sqlite:', async () => {
    const dataDir = await scratch()
    expect(sqlitePathOf(resolveConfig({ dataDir }))).toBe(join(dataDir, 'modelgate.db'))
    expect(sqlitePathOf(resolveConfig({ dataDir, storage: `sqlite:${dataDir}/elsewhere.db` }))).toBe(join(dataDir, 'elsewhere.db'))
    expect(sqlitePathOf(resolveConfig({ storage: 'memory' }))).toBeUndefined()
    expect(() => resolveConfig({ storage: 'sqlite:' })).toThrow('modelgate: invalid configuration: storage: a SQLite store needs the path of its file after the colon')

    const driver = await openTracked(resolveConfig({ dataDir }))
    expect(driver.name).toBe('sqlite')
    await driver.create('widgets', { id: 'w1', data: {} })
    expect(existsSync(join(dataDir, 'modelgate.db'))).toBe(true)
    const elsewhere = await openTracked(resolveConfig({ dataDir, storage: `sqlite:${dataDir}/elsewhere.db` }))
    expect(await elsewhere.get('widgets', 'w1')).toBeNull()
  })

  it('moves the embedded store of the previous release into SQLite at the first start, once, and its files aside', async () => {
    const dataDir = await scratch()
    const { rate } = await writeFileStore(dataDir)
    const recording = createRecordingLogger()
    const driver = await openTracked(resolveConfig({ dataDir }), recording.logger)

    expect(await driver.get('widgets', 'w1')).toEqual({ id: 'w1', data: { n: 2 }, version: 2, uniques: ['slug:uno'], indexes: { color: 'blue' }, sortKey: 'b' })
    expect((await driver.findByUnique('widgets', 'slug:uno'))?.id).toBe('w1')
    expect(await driver.findByUnique('widgets', 'slug:one')).toBeNull()
    expect((await driver.list('widgets', { where: { color: 'blue' } })).items.map((item) => item.id)).toEqual(['w2', 'w1'])
    expect(await driver.list('widgets', { where: { color: 'red' } })).toEqual({ items: [], totalCount: 0 })
    expect((await driver.list('generations', { where: { accountDay: 'acc|2025-01-02' } })).items.map((item) => item.data)).toEqual([{ cost: 2 }])
    // A write of the new store goes on where the old one left off: the next version, the same counter and expiry.
    expect((await driver.update('widgets', 'w1', 2, { id: 'w1', data: { n: 4 } }))?.version).toBe(3)
    expect(await driver.increment('rate:k1:minute', 1, 600_000)).toEqual({ value: 4, expiresAt: rate.expiresAt })

    expect(await driver.readTallies(['spend:key:k1:usage:total', 'spend:key:old:usage:total'])).toEqual([250, 500])
    expect(await driver.renewHolds(['open-hold'], 600_000)).toBe(0)
    // The settled id is remembered: its settlement again changes nothing, and no hold can land under it.
    await driver.settle([{ id: 'settled-hold', changes: [{ key: 'spend:key:k1:usage:total', amount: 250, ttlMs: TTL_MS }] }])
    expect(await driver.readTallies(['spend:key:k1:usage:total'])).toEqual([250])
    const refused = await rejectionOf(driver.hold({ id: 'settled-hold', owner: 'new', leaseMs: 1_000, changes: [{ key: 'spend:x', amount: 1, ttlMs: 1_000 }] }))
    expect(isGatewayError(refused) && (refused as { kind?: string }).kind).toBe('unique')

    expect(await storeFiles(dataDir)).toEqual([])
    expect(existsSync(join(dataDir, 'LOCK'))).toBe(false)
    const [backup] = (await readdir(dataDir)).filter((name) => name.startsWith('file-store-backup-'))
    expect(await storeFiles(join(dataDir, backup!))).toEqual(['journal.jsonl'])
    expect(recording.entries).toEqual([
      {
        level: 'info',
        message: 'moved the embedded store into the SQLite store',
        fields: { path: join(dataDir, 'modelgate.db'), records: 4, counters: 1, tallies: 2, releasedHolds: 1, backupDirectory: join(dataDir, backup!) },
      },
    ])

    // The next start finds nothing to move.
    await driver.close()
    const again = createRecordingLogger()
    const reopened = await openTracked(resolveConfig({ dataDir }), again.logger)
    expect((await reopened.get('widgets', 'w1'))?.version).toBe(3)
    expect(again.entries).toEqual([])
  })

  it('only moves the files aside when an earlier start copied them and stopped before moving them', async () => {
    const dataDir = await scratch()
    await writeFileStore(dataDir)
    const first = await openTracked(resolveConfig({ dataDir }))
    await first.close()
    const [backup] = (await readdir(dataDir)).filter((name) => name.startsWith('file-store-backup-'))
    // As if the first start had stopped between its commit and the move.
    await rename(join(dataDir, backup!, 'journal.jsonl'), join(dataDir, 'journal.jsonl'))
    const recording = createRecordingLogger()
    const driver = await openTracked(resolveConfig({ dataDir }), recording.logger)
    expect(recording.entries.map((entry) => entry.message)).toEqual(['moved aside the embedded store an earlier start had copied into the SQLite store'])
    expect((await driver.list('widgets')).totalCount).toBe(2)
    expect(await storeFiles(dataDir)).toEqual([])
  })

  it('refuses to move a file store another process holds, and changes nothing', async () => {
    const dataDir = await scratch()
    const running = await openFileStorage({ directory: dataDir })
    drivers.push(running)
    await running.create('widgets', { id: 'w1', data: {} })
    const error = (await rejectionOf(openStorage(resolveConfig({ dataDir }), createRecordingLogger().logger))) as Error
    expect(error.message).toMatch(/^modelgate: cannot move the embedded store in .+ into .+modelgate\.db: modelgate: the store at .+ is in use by process \d+$/)
    expect(await storeFiles(dataDir)).toEqual(['journal.jsonl'])
    // The file store of `MODELGATE_STORAGE=file` is still there for whoever wants it.
    expect((await running.get('widgets', 'w1'))?.id).toBe('w1')
  })

  it('keeps the embedded file store selectable as it was, and memory', async () => {
    const dataDir = await scratch()
    const file = await openTracked(resolveConfig({ dataDir, storage: 'file' }))
    expect(file.name).toBe('file')
    await file.create('widgets', { id: 'w1', data: {} })
    expect(existsSync(join(dataDir, 'modelgate.db'))).toBe(false)
    expect((await openTracked(resolveConfig({ dataDir, storage: 'memory' }))).name).toBe('memory')
  })
})
