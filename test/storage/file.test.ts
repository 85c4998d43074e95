import { spawnSync } from 'node:child_process'
import { appendFile, chmod, cp, mkdtemp, open, readFile, rm, stat, truncate, writeFile, type FileHandle } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { isGatewayError } from '../../src/core/errors'
import { SETTLEMENT_MEMORY_MS, type StorageDriver } from '../../src/storage/contract'
import { fileStorage, openFileStorage, type FileStorageOptions } from '../../src/storage/file'
import { IN_PROCESS_SETTLEMENT_MEMORY_MS } from '../../src/storage/memory-engine'
import { describeStorageContract } from './contract'
import { describeGenerationLedger } from './generations'
import { describeAuditLog } from './audit-log'
import { describeStoredResponses } from './stored-responses'
import { describePresets } from './presets'

const directories: string[] = []
const drivers: StorageDriver[] = []

const makeDirectory = async (): Promise<string> => {
  const directory = await mkdtemp(join(tmpdir(), 'modelgate-file-storage-'))
  directories.push(directory)
  return directory
}

/** Opens a driver that is closed after the test even when an assertion fails first. */
const openTracked = async (options: FileStorageOptions): Promise<StorageDriver> => {
  const driver = await openFileStorage(options)
  drivers.push(driver)
  return driver
}

afterEach(async () => {
  vi.restoreAllMocks()
  await Promise.all(drivers.splice(0).map((driver) => driver.close()))
  await Promise.all(directories.splice(0).map((directory) => rm(directory, { recursive: true, force: true })))
})

const rejectionOf = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

const journalLines = async (directory: string): Promise<string[]> =>
  (await readFile(join(directory, 'journal.jsonl'), 'utf8')).split('\n').filter((line) => line !== '')

/** The prototype every `FileHandle` shares, so a test can make the journal's writes fail. */
const fileHandlePrototype = async (directory: string): Promise<FileHandle> => {
  const handle = await open(join(directory, 'probe'), 'w')
  await handle.close()
  return Object.getPrototypeOf(handle) as FileHandle
}

const diskError = () => Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' })

/** Everything a driver holds for the fixed collections and counters these tests use. */
const dump = async (driver: StorageDriver, counterKeys: string[] = []) => ({
  widgets: await driver.list('widgets'),
  gadgets: await driver.list('gadgets'),
  counters: await Promise.all(counterKeys.map((key) => driver.increment(key, 0, 60_000))),
})

describeStorageContract('file', async () => openFileStorage({ directory: await makeDirectory() }))

describeGenerationLedger('file', async () => openFileStorage({ directory: await makeDirectory() }))

describePresets('file', async () => openFileStorage({ directory: await makeDirectory() }))
describeAuditLog('file', async () => openFileStorage({ directory: await makeDirectory() }))
describeStoredResponses('file', async () => openFileStorage({ directory: await makeDirectory() }))

describeStorageContract('file, compacting every 3 writes', async () =>
  openFileStorage({ directory: await makeDirectory(), compactAfter: 3, fsync: false }),
)

describeStorageContract('file, opened in the background', async () => fileStorage({ directory: await makeDirectory() }))

describe('fileStorage', () => {
  it('is named file and checks its options when built', async () => {
    expect(() => fileStorage({ directory: '' })).toThrow(TypeError)
    expect(() => fileStorage({ directory: 'x', compactAfter: 0 })).toThrow(TypeError)
    expect(() => fileStorage({ directory: 'x', fsync: 'yes' as unknown as boolean })).toThrow(TypeError)
    const driver = await openTracked({ directory: await makeDirectory() })
    expect(driver.name).toBe('file')
  })

  it('adds several counters in one journal append (incrementMany), kept across a reopen', async () => {
    const directory = await makeDirectory()
    const first = await openFileStorage({ directory })
    await first.increment('a', 5, 60_000)
    const appendsBefore = (await journalLines(directory)).length
    const results = await first.incrementMany!([
      { key: 'a', amount: 2, ttlMs: 60_000 },
      { key: 'b', amount: -3, ttlMs: 60_000 },
    ])
    expect(results.map((result) => result.value)).toEqual([7, -3])
    expect(await journalLines(directory)).toHaveLength(appendsBefore + 2)
    await expect(first.incrementMany!([{ key: 'a', amount: 1, ttlMs: 1000 }, { key: 'a', amount: 1, ttlMs: 1000 }])).rejects.toThrow(
      'incrementMany changes must name distinct counters',
    )
    expect(await first.incrementMany!([])).toEqual([])
    await first.close()
    const second = await openTracked({ directory })
    expect((await second.increment('a', 0, 60_000)).value).toBe(7)
    expect((await second.increment('b', 0, 60_000)).value).toBe(-3)
  })

  it('writes nothing of an incrementMany whose append fails', async () => {
    const directory = await makeDirectory()
    const driver = await openTracked({ directory })
    await driver.increment('a', 1, 60_000)
    vi.spyOn(await fileHandlePrototype(directory), 'write').mockRejectedValueOnce(diskError())
    await expect(driver.incrementMany!([{ key: 'a', amount: 1, ttlMs: 60_000 }, { key: 'b', amount: 1, ttlMs: 60_000 }])).rejects.toMatchObject({ status: 503 })
    expect((await driver.increment('a', 0, 60_000)).value).toBe(1)
    expect((await driver.increment('b', 0, 60_000)).value).toBe(0)
  })

  it('creates a missing directory', async () => {
    const directory = join(await makeDirectory(), 'nested', 'store')
    const driver = await openTracked({ directory })
    await driver.create('widgets', { id: 'w1', data: {} })
    expect((await stat(join(directory, 'journal.jsonl'))).isFile()).toBe(true)
  })

  it('keeps every kind of write across close and reopen', async () => {
    const directory = await makeDirectory()
    let time = 1_000_000
    const now = () => time
    const first = await openFileStorage({ directory, now })
    await first.create('widgets', {
      id: 'w1',
      data: { n: 1 },
      indexes: { color: 'red' },
      uniques: ['slug:one'],
      sortKey: 'b',
    })
    await first.create('widgets', { id: 'w2', data: { n: 2 }, uniques: ['slug:two'], sortKey: 'a' })
    await first.create('widgets', { id: 'w3', data: { n: 3 }, uniques: ['slug:three'] })
    await first.create('gadgets', { id: 'g1', data: { deep: { list: [1, null, 'ü'] } } })
    await first.update('widgets', 'w1', 1, {
      id: 'w1',
      data: { n: 10 },
      indexes: { color: 'blue' },
      uniques: ['slug:uno'],
      sortKey: 'c',
    })
    await first.delete('widgets', 'w3')
    await first.increment('hits', 2, 60_000)
    time += 1_000
    await first.increment('hits', 3, 60_000)
    await first.increment('short', 1, 10)
    const before = await dump(first)
    await first.close()

    const second = await openTracked({ directory, now })
    expect(await dump(second)).toEqual(before)
    expect((await second.get('widgets', 'w1'))?.version).toBe(2)
    expect(await second.findByUnique('widgets', 'slug:one')).toBeNull()
    expect((await second.findByUnique('widgets', 'slug:uno'))?.id).toBe('w1')
    expect(
      isGatewayError(await rejectionOf(second.create('widgets', { id: 'w9', data: {}, uniques: ['slug:two'] }))),
    ).toBe(true)
    await second.create('widgets', { id: 'w4', data: {}, uniques: ['slug:three', 'slug:one'] })
    expect(await second.increment('hits', 1, 60_000)).toEqual({ value: 6, expiresAt: 1_060_000 })
    time += 10
    expect(await second.increment('short', 1, 10)).toEqual({ value: 1, expiresAt: time + 10 })
  })

  it('waits for a background open before answering', async () => {
    const directory = await makeDirectory()
    const first = await openFileStorage({ directory })
    await first.create('widgets', { id: 'w1', data: { kept: true } })
    await first.close()
    const second = fileStorage({ directory })
    drivers.push(second)
    expect((await second.get('widgets', 'w1'))?.data).toEqual({ kept: true })
  })

  it('ignores a torn last line and cuts it away', async () => {
    const directory = await makeDirectory()
    const first = await openFileStorage({ directory })
    await first.create('widgets', { id: 'w1', data: { n: 1 }, uniques: ['slug:one'] })
    await first.update('widgets', 'w1', 1, { id: 'w1', data: { n: 2 }, uniques: ['slug:one'] })
    const before = await dump(first)
    await first.close()
    const journalPath = join(directory, 'journal.jsonl')
    const intactSize = (await stat(journalPath)).size
    await appendFile(journalPath, '{"seq":3,"op":"put","collection":"widgets","record":{"id":"w2","da')

    const second = await openTracked({ directory })
    expect(await dump(second)).toEqual(before)
    expect((await stat(journalPath)).size).toBe(intactSize)
    await second.create('widgets', { id: 'w2', data: { n: 3 } })
    await second.close()

    const third = await openTracked({ directory })
    expect((await third.list('widgets')).items.map((item) => item.id)).toEqual(['w1', 'w2'])
  })

  it('treats an unparsable final line (zeros from a crash) as torn', async () => {
    const directory = await makeDirectory()
    const first = await openFileStorage({ directory })
    await first.create('widgets', { id: 'w1', data: {} })
    await first.close()
    await appendFile(join(directory, 'journal.jsonl'), '\0\0\0\0\n')
    const second = await openTracked({ directory })
    expect((await second.get('widgets', 'w1'))?.version).toBe(1)
    expect(await journalLines(directory)).toHaveLength(1)
  })

  it('refuses a journal corrupted before its last line, and releases its lock', async () => {
    const directory = await makeDirectory()
    const first = await openFileStorage({ directory })
    await first.create('widgets', { id: 'w1', data: {} })
    await first.create('widgets', { id: 'w2', data: {} })
    await first.close()
    const [line1, line2] = await journalLines(directory)
    await writeFile(join(directory, 'journal.jsonl'), `${line1}\nnot json\n${line2}\n`)

    const error = await rejectionOf(openFileStorage({ directory }))
    expect(String(error)).toMatch(/journal .* is corrupt/)
    await expect(stat(join(directory, 'LOCK'))).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('compacts into a snapshot, shrinking the journal and keeping the state', async () => {
    const directory = await makeDirectory()
    let time = 5_000
    const now = () => time
    const first = await openFileStorage({ directory, compactAfter: 5, now })
    await first.increment('expired-counter', 1, 10)
    time += 100
    for (let index = 0; index < 12; index++) {
      await first.create('widgets', {
        id: `w${index}`,
        data: { index },
        uniques: [`slug:${index}`],
        sortKey: `${index % 3}`,
      })
    }
    await first.update('widgets', 'w3', 1, { id: 'w3', data: { updated: true }, uniques: ['slug:new'] })
    await first.delete('widgets', 'w4')
    await first.increment('live-counter', 7, 60_000)
    const before = await dump(first, ['live-counter'])
    await first.close()

    const snapshot = await readFile(join(directory, 'snapshot.jsonl'), 'utf8')
    // The journal waits for as many lines as the last snapshot holds (and at least compactAfter) before it is folded.
    const header = JSON.parse(snapshot.split('\n')[0]!) as { records: number; counters: number }
    expect((await journalLines(directory)).length).toBeLessThan(Math.max(5, header.records + header.counters))
    expect(snapshot).toContain('"id":"w0"')
    expect(snapshot).not.toContain('expired-counter')

    const second = await openTracked({ directory, compactAfter: 5, now })
    expect(await dump(second, ['live-counter'])).toEqual(before)
    expect(await second.findByUnique('widgets', 'slug:3')).toBeNull()
    expect((await second.findByUnique('widgets', 'slug:new'))?.id).toBe('w3')
    expect(await second.findByUnique('widgets', 'slug:4')).toBeNull()
  })

  describe('compaction by size', () => {
    const payload = (kilobytes: number) => ({ blob: 'x'.repeat(kilobytes * 1024) })
    const sizeOf = async (directory: string, file: string) => (await stat(join(directory, file))).size
    const snapshotSeq = async (directory: string) =>
      (JSON.parse((await readFile(join(directory, 'snapshot.jsonl'), 'utf8').catch(() => '{"seq":0}')).split('\n')[0]!) as { seq: number }).seq

    it('folds a journal past compactAfterBytes into a snapshot, however few its lines', async () => {
      const directory = await makeDirectory()
      const first = await openFileStorage({ directory, compactAfter: 10_000, compactAfterBytes: 64 * 1024 })
      // One record rewritten: the state stays one record while the journal grows by one copy per write.
      await first.create('widgets', { id: 'w1', data: payload(20) })
      for (let version = 1; version <= 12; version++) await first.update('widgets', 'w1', version, { id: 'w1', data: { ...payload(20), version } })
      await first.close()
      expect(await sizeOf(directory, 'journal.jsonl')).toBeLessThan(64 * 1024 + 21 * 1024)
      expect(await snapshotSeq(directory)).toBeGreaterThan(0)
      const second = await openTracked({ directory })
      expect((await second.get<{ version: number }>('widgets', 'w1'))?.data.version).toBe(12)
    })

    it('waits for a journal as large as the last snapshot, so a large state is not rewritten on every write', async () => {
      const directory = await makeDirectory()
      const driver = await openTracked({ directory, compactAfter: 10_000, compactAfterBytes: 1_024 })
      const snapshots = new Set<number>()
      for (let index = 0; index < 32; index++) {
        await driver.create('widgets', { id: `w${index}`, data: payload(4) })
        snapshots.add(await snapshotSeq(directory))
        // The disk holds the state about twice, never the history of every write.
        const disk = (await sizeOf(directory, 'journal.jsonl')) + (await sizeOf(directory, 'snapshot.jsonl').catch(() => 0))
        expect(disk).toBeLessThan(2 * (index + 1) * 4.5 * 1024 + 8 * 1024)
      }
      // The threshold doubles with the state: about log2(32) compactions, not 32 (nor none).
      expect(snapshots.size).toBeGreaterThanOrEqual(4)
      expect(snapshots.size).toBeLessThanOrEqual(7)
      expect((await driver.list('widgets')).totalCount).toBe(32)
    })

    it('waits for a journal as long as the last snapshot, so many small records are not rewritten every compactAfter writes', async () => {
      const directory = await makeDirectory()
      const driver = await openTracked({ directory, compactAfter: 10, fsync: false })
      const snapshots = new Set<number>()
      for (let index = 0; index < 320; index++) {
        await driver.create('widgets', { id: `w${index}`, data: { index } })
        snapshots.add(await snapshotSeq(directory))
      }
      // The line threshold doubles with the state too: about log2(320 / 10) compactions, not 32.
      expect(snapshots.size).toBeGreaterThanOrEqual(4)
      expect(snapshots.size).toBeLessThanOrEqual(8)
      expect((await driver.list('widgets')).totalCount).toBe(320)
    })

    it('checks compactAfterBytes', () => {
      for (const compactAfterBytes of [0, -1, 1.5, Number.NaN]) {
        expect(() => fileStorage({ directory: 'x', compactAfterBytes }), String(compactAfterBytes)).toThrow(
          'fileStorage: options.compactAfterBytes must be a positive integer',
        )
      }
    })
  })

  it('does not apply twice a journal that a crash left behind after its snapshot', async () => {
    const directory = await makeDirectory()
    const journalPath = join(directory, 'journal.jsonl')
    const first = await openFileStorage({ directory, compactAfter: 1_000 })
    await first.create('widgets', { id: 'w1', data: { n: 1 }, uniques: ['slug:shared'] })
    await first.update('widgets', 'w1', 1, { id: 'w1', data: { n: 2 }, uniques: ['slug:shared'] })
    await first.increment('hits', 2, 60_000)
    await first.increment('hits', 2, 60_000)
    await first.create('widgets', { id: 'w2', data: {}, uniques: ['slug:other'] })
    await first.delete('widgets', 'w1')
    await first.create('widgets', { id: 'w3', data: {}, uniques: ['slug:shared'] })
    await first.close()
    const foldedJournal = await readFile(journalPath, 'utf8')

    // Reopening with a tiny threshold folds all of it into a snapshot.
    const second = await openFileStorage({ directory, compactAfter: 1 })
    await second.close()
    expect(await journalLines(directory)).toHaveLength(0)
    const expected = await (async () => {
      const reader = await openFileStorage({ directory })
      const state = { widgets: await reader.list('widgets'), deleted: await reader.get('widgets', 'w1') }
      await reader.close()
      return state
    })()

    // The crash: the snapshot was renamed into place but the old journal was never emptied.
    await writeFile(journalPath, foldedJournal)
    const third = await openTracked({ directory, compactAfter: 1_000 })
    expect({ widgets: await third.list('widgets'), deleted: await third.get('widgets', 'w1') }).toEqual(expected)
    expect((await third.increment('hits', 0, 60_000)).value).toBe(4)
    expect((await third.findByUnique('widgets', 'slug:shared'))?.id).toBe('w3')

    await third.create('widgets', { id: 'w4', data: {} })
    await third.close()
    const fourth = await openTracked({ directory })
    expect((await fourth.list('widgets')).items.map((item) => item.id)).toEqual(['w2', 'w3', 'w4'])
  })

  it('ignores a temporary snapshot left by a crash while writing it', async () => {
    const directory = await makeDirectory()
    await writeFile(join(directory, 'snapshot.jsonl.tmp'), '{"format":2,"seq":99,"records":1,"counters":0}\n{"op":"put","coll')
    const driver = await openTracked({ directory })
    expect(await driver.list('widgets')).toEqual({ items: [], totalCount: 0 })
    await expect(stat(join(directory, 'snapshot.jsonl.tmp'))).rejects.toMatchObject({ code: 'ENOENT' })
  })

  describe('large states (files read and written piece by piece)', () => {
    /** Holds the snapshot's first write until `release` is called; `started` resolves when it is reached. */
    const holdSnapshotWrite = async (directory: string) => {
      const prototype = await fileHandlePrototype(directory)
      const originalWrite = prototype.write as (this: FileHandle, ...args: unknown[]) => Promise<{ bytesWritten: number }>
      let release!: () => void
      const released = new Promise<void>((resolve) => (release = resolve))
      let reached!: () => void
      const started = new Promise<void>((resolve) => (reached = resolve))
      vi.spyOn(prototype, 'write').mockImplementation(async function (this: FileHandle, ...args: unknown[]) {
        if (String((args[0] as Buffer).subarray(0, 16)).startsWith('{"format":')) {
          reached()
          await released
        }
        return originalWrite.apply(this, args)
      } as FileHandle['write'])
      return { release, started }
    }

    it('takes writes while a compaction writes its snapshot, and keeps only those in the journal', async () => {
      const directory = await makeDirectory()
      const { release, started } = await holdSnapshotWrite(directory)
      const driver = await openFileStorage({ directory, compactAfter: 4, fsync: false })
      for (let index = 0; index < 4; index++) await driver.create('widgets', { id: `w${index}`, data: { index } })
      await started
      // The snapshot under way holds w0…w3 (seq 1 to 4); these land beside it, not after it.
      await driver.create('widgets', { id: 'late', data: {}, uniques: ['slug:late'] })
      await driver.update('widgets', 'w0', 1, { id: 'w0', data: { updated: true } })
      await driver.increment('hits', 3, 60_000)
      const expected = await driver.list('widgets')
      release()
      await driver.close()

      const snapshot = await readFile(join(directory, 'snapshot.jsonl'), 'utf8')
      expect(JSON.parse(snapshot.split('\n')[0]!)).toMatchObject({ format: 3, seq: 4, records: 4, counters: 0, tallies: 0, holds: 0, settled: 0 })
      expect((await journalLines(directory)).map((line) => (JSON.parse(line) as { seq: number }).seq)).toEqual([5, 6, 7])
      const reopened = await openTracked({ directory })
      expect(await reopened.list('widgets')).toEqual(expected)
      expect((await reopened.get<{ updated: boolean }>('widgets', 'w0'))?.data.updated).toBe(true)
      expect((await reopened.findByUnique('widgets', 'slug:late'))?.id).toBe('late')
      expect((await reopened.increment('hits', 0, 60_000)).value).toBe(3)
    })

    it('writes and reads a snapshot and a journal larger than a piece, with a line larger than a piece', async () => {
      const directory = await makeDirectory()
      const prototype = await fileHandlePrototype(directory)
      const originalWrite = prototype.write as (this: FileHandle, ...args: unknown[]) => Promise<{ bytesWritten: number }>
      /** The sizes of each snapshot's writes, a list per snapshot. */
      const snapshots: number[][] = []
      vi.spyOn(prototype, 'write').mockImplementation(async function (this: FileHandle, ...args: unknown[]) {
        const bytes = args[0] as Buffer
        if (String(bytes.subarray(0, 16)).startsWith('{"format":')) snapshots.push([])
        const result = await originalWrite.apply(this, args)
        if (!String(bytes.subarray(0, 8)).startsWith('{"seq"')) snapshots.at(-1)?.push(result.bytesWritten)
        return result
      } as FileHandle['write'])

      const first = await openFileStorage({ directory, compactAfter: 1_000_000, compactAfterBytes: 2 ** 40, fsync: false })
      // 1.5 MiB in one record: one line longer than a read and a write piece, in both files; non-ASCII text across pieces.
      await first.create('widgets', { id: 'big', data: { text: 'é€'.repeat(512 * 1024) + 'x'.repeat(512 * 1024 - 3) } })
      for (let index = 0; index < 3_000; index++) {
        await first.create('widgets', { id: `w${String(index).padStart(4, '0')}`, data: { filler: 'y'.repeat(400) }, sortKey: 'a' })
      }
      const expected = await first.list('widgets')
      await first.close()
      // The journal (about 3 MiB) is read back in pieces, its lines crossing their boundaries.
      const second = await openFileStorage({ directory, compactAfter: 1, fsync: false })
      expect(await second.list('widgets')).toEqual(expected)
      await second.close()

      expect(snapshots.length).toBeGreaterThan(0)
      for (const pieces of snapshots) {
        expect(pieces.length).toBeGreaterThanOrEqual(3)
        // Pieces of about 1 MiB; only the one that carries the long record is larger.
        expect(pieces.filter((bytes) => bytes > 1024 * 1024 + 4096)).toHaveLength(1)
      }
      expect(await journalLines(directory)).toHaveLength(0)
      const third = await openTracked({ directory })
      expect(await third.list('widgets')).toEqual(expected)
      expect((await third.get<{ text: string }>('widgets', 'big'))?.data.text.slice(0, 4)).toBe('é€é€')
    })

    it('loads a snapshot of the first format (one JSON document) and replaces it at the next compaction', async () => {
      const directory = await makeDirectory()
      const record = { id: 'w1', data: { n: 1 }, version: 1, indexes: { color: 'red' }, uniques: ['slug:one'], sortKey: 'w1' }
      const counter = { key: 'hits', value: 2, expiresAt: Date.now() + 60_000 }
      await writeFile(
        join(directory, 'snapshot.json'),
        JSON.stringify({ format: 1, seq: 1, state: { collections: { widgets: [record] }, counters: [counter] } }),
      )
      // An entry the snapshot already holds, and one after it.
      await writeFile(
        join(directory, 'journal.jsonl'),
        `${JSON.stringify({ seq: 1, op: 'put', collection: 'widgets', record })}\n` +
          `${JSON.stringify({ seq: 2, op: 'put', collection: 'widgets', record: { ...record, id: 'w2', uniques: [], sortKey: 'w2' } })}\n`,
      )
      const first = await openFileStorage({ directory, compactAfter: 3 })
      expect((await first.list('widgets', { where: { color: 'red' } })).items.map((item) => item.id)).toEqual(['w1', 'w2'])
      expect((await first.findByUnique('widgets', 'slug:one'))?.id).toBe('w1')
      await first.increment('hits', 1, 60_000)
      await first.close()

      await expect(stat(join(directory, 'snapshot.json'))).rejects.toMatchObject({ code: 'ENOENT' })
      expect(JSON.parse((await readFile(join(directory, 'snapshot.jsonl'), 'utf8')).split('\n')[0]!)).toMatchObject({ seq: 3, records: 2 })
      const second = await openTracked({ directory })
      expect((await second.list('widgets')).totalCount).toBe(2)
      expect((await second.increment('hits', 0, 60_000)).value).toBe(3)
    })

    it('refuses a snapshot that lacks lines its header counts, naming it, and releases its lock', async () => {
      const directory = await makeDirectory()
      const record = { id: 'w1', data: {}, version: 1, indexes: {}, uniques: [], sortKey: 'w1' }
      await writeFile(
        join(directory, 'snapshot.jsonl'),
        `${JSON.stringify({ format: 2, seq: 2, records: 2, counters: 0 })}\n${JSON.stringify({ op: 'put', collection: 'widgets', record })}\n`,
      )
      const error = await rejectionOf(openFileStorage({ directory }))
      expect(String(error)).toMatch(/snapshot .*snapshot\.jsonl is unreadable \(incomplete\)/)
      await expect(stat(join(directory, 'LOCK'))).rejects.toMatchObject({ code: 'ENOENT' })
    })

    it('ignores and removes a temporary journal left by a crash while the journal was rewritten', async () => {
      const directory = await makeDirectory()
      const first = await openFileStorage({ directory })
      await first.create('widgets', { id: 'w1', data: {} })
      await first.close()
      const stray = { seq: 2, op: 'put', collection: 'widgets', record: { id: 'w9', data: {}, version: 1, indexes: {}, uniques: [], sortKey: 'w9' } }
      await writeFile(join(directory, 'journal.jsonl.tmp'), `${JSON.stringify(stray)}\n`)
      const second = await openTracked({ directory })
      expect((await second.list('widgets')).items.map((item) => item.id)).toEqual(['w1'])
      await expect(stat(join(directory, 'journal.jsonl.tmp'))).rejects.toMatchObject({ code: 'ENOENT' })
    })
  })

  describe('private files', () => {
    const modeOf = async (path: string) => (await stat(path)).mode & 0o777

    it('creates its directory 0700 and every file 0600: journal, lock, snapshot', async () => {
      const directory = join(await makeDirectory(), 'store')
      const driver = await openTracked({ directory, compactAfter: 2 })
      await driver.create('widgets', { id: 'w1', data: { secret: 'sealed' } })
      await driver.create('widgets', { id: 'w2', data: {} })
      await vi.waitFor(async () => expect((await stat(join(directory, 'snapshot.jsonl'))).isFile()).toBe(true))
      expect(await modeOf(directory)).toBe(0o700)
      for (const file of ['journal.jsonl', 'LOCK', 'snapshot.jsonl']) expect(await modeOf(join(directory, file)), file).toBe(0o600)
    })

    it('tightens a directory and files that an older version left readable to others', async () => {
      const directory = await makeDirectory()
      const first = await openFileStorage({ directory, compactAfter: 1 })
      await first.create('widgets', { id: 'w1', data: {} })
      await vi.waitFor(async () => expect((await stat(join(directory, 'snapshot.jsonl'))).isFile()).toBe(true))
      await first.create('widgets', { id: 'w2', data: {} })
      await first.close()
      await writeFile(join(directory, 'journal.jsonl'), '', { flag: 'a' })
      for (const file of ['journal.jsonl', 'snapshot.jsonl']) await chmod(join(directory, file), 0o644)
      await chmod(directory, 0o755)

      const driver = await openTracked({ directory })
      expect(await modeOf(directory)).toBe(0o700)
      for (const file of ['journal.jsonl', 'snapshot.jsonl']) expect(await modeOf(join(directory, file)), file).toBe(0o600)
      expect((await driver.list('widgets')).items.map((item) => item.id)).toEqual(['w1', 'w2'])
    })

    it('writes its temporary snapshot 0600 even over a leftover one', async () => {
      const directory = await makeDirectory()
      const driver = await openTracked({ directory, compactAfter: 1 })
      // A leftover made after opening (opening removes one): the next snapshot is written over it.
      await writeFile(join(directory, 'snapshot.jsonl.tmp'), 'partial', { mode: 0o644 })
      const modes: number[] = []
      const prototype = await fileHandlePrototype(directory)
      const originalWrite = prototype.write as (this: FileHandle, ...args: unknown[]) => Promise<{ bytesWritten: number }>
      vi.spyOn(prototype, 'write').mockImplementation(async function (this: FileHandle, ...args: unknown[]) {
        // The snapshot's writes start with its header; the journal's are checked elsewhere.
        if (String(args[0]).startsWith('{"format":')) modes.push((await this.stat()).mode & 0o777)
        return originalWrite.apply(this, args)
      } as FileHandle['write'])
      await driver.create('widgets', { id: 'w1', data: {} })
      await vi.waitFor(async () => expect((await readFile(join(directory, 'snapshot.jsonl'), 'utf8')).length).toBeGreaterThan(0))
      expect(modes.length).toBeGreaterThan(0)
      expect(modes.every((mode) => mode === 0o600)).toBe(true)
    })
  })

  describe('lock', () => {
    it('refuses a second open while the first is open, naming the holder', async () => {
      const directory = await makeDirectory()
      const first = await openTracked({ directory })
      const error = await rejectionOf(openFileStorage({ directory }))
      expect(error).toBeInstanceOf(Error)
      expect((error as Error).message).toBe(`modelgate: the store at ${directory} is in use by process ${process.pid}`)
      await first.create('widgets', { id: 'w1', data: {} })
      await first.close()

      await expect(stat(join(directory, 'LOCK'))).rejects.toMatchObject({ code: 'ENOENT' })
      const second = await openTracked({ directory })
      expect((await second.get('widgets', 'w1'))?.id).toBe('w1')
    })

    it('makes every method of a driver that could not open reject as unavailable', async () => {
      const directory = await makeDirectory()
      await openTracked({ directory })
      const blocked = fileStorage({ directory })
      const error = await rejectionOf(blocked.get('widgets', 'w1'))
      expect(error).toMatchObject({ status: 503 })
      expect(String((error as Error).cause)).toMatch(/in use by process/)
      await blocked.close()
    })

    it('takes over a lock left by a process that is gone', async () => {
      const directory = await makeDirectory()
      const exited = spawnSync(process.execPath, ['-e', ''])
      expect(exited.status).toBe(0)
      await writeFile(join(directory, 'LOCK'), String(exited.pid))
      const driver = await openTracked({ directory })
      expect(await readFile(join(directory, 'LOCK'), 'utf8')).toBe(String(process.pid))
      await driver.create('widgets', { id: 'w1', data: {} })
    })

    it('takes over a lock with its own pid from an earlier run, as after a container restart', async () => {
      const directory = await makeDirectory()
      await writeFile(join(directory, 'LOCK'), String(process.pid))
      const driver = await openTracked({ directory })
      expect(String(await rejectionOf(openFileStorage({ directory })))).toMatch(/in use by process/)
      await driver.create('widgets', { id: 'w1', data: {} })
    })

    it('lets only one of two simultaneous opens in one process win', async () => {
      const directory = await makeDirectory()
      const outcomes = await Promise.allSettled([openFileStorage({ directory }), openFileStorage({ directory })])
      const opened = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []))
      drivers.push(...opened)
      expect(opened).toHaveLength(1)
    })

    it('refuses an unreadable lock file instead of guessing', async () => {
      const directory = await makeDirectory()
      await writeFile(join(directory, 'LOCK'), '')
      expect(String(await rejectionOf(openFileStorage({ directory })))).toMatch(/unreadable lock file/)
    })
  })

  describe('a failed append', () => {
    it('leaves the state unchanged and rejects as unavailable, even after a partial write', async () => {
      const directory = await makeDirectory()
      const prototype = await fileHandlePrototype(directory)
      const originalWrite = prototype.write as (
        this: FileHandle,
        ...args: unknown[]
      ) => Promise<{ bytesWritten: number }>
      const driver = await openTracked({ directory })
      await driver.create('widgets', { id: 'w1', data: {}, uniques: ['slug:one'] })
      const before = await dump(driver)

      vi.spyOn(prototype, 'write').mockImplementationOnce(async function (this: FileHandle, ...args: unknown[]) {
        const [buffer, offset, length] = args as [Buffer, number, number]
        await originalWrite.call(this, buffer, offset, Math.floor(length / 2))
        throw diskError()
      })
      const error = await rejectionOf(driver.create('widgets', { id: 'w2', data: {}, uniques: ['slug:two'] }))
      expect(isGatewayError(error)).toBe(true)
      expect(error).toMatchObject({ status: 503, name: 'StorageUnavailableError' })
      expect((error as Error).cause).toMatchObject({ code: 'EIO' })

      expect(await dump(driver)).toEqual(before)
      expect(await driver.get('widgets', 'w2')).toBeNull()
      expect(await driver.findByUnique('widgets', 'slug:two')).toBeNull()

      // The store keeps working, and the half-written line is gone from the journal.
      await driver.create('widgets', { id: 'w2', data: {}, uniques: ['slug:two'] })
      await driver.close()
      expect(await journalLines(directory)).toHaveLength(2)
      const reopened = await openTracked({ directory })
      expect((await reopened.list('widgets')).items.map((item) => item.id)).toEqual(['w1', 'w2'])
    })

    it('rolls back an update and an increment whose fsync failed', async () => {
      const directory = await makeDirectory()
      const prototype = await fileHandlePrototype(directory)
      const driver = await openTracked({ directory })
      await driver.create('widgets', { id: 'w1', data: { n: 1 }, uniques: ['slug:one'] })
      const counter = await driver.increment('hits', 1, 60_000)
      const before = await dump(driver)

      const sync = vi.spyOn(prototype, 'sync').mockRejectedValueOnce(diskError())
      const updateError = await rejectionOf(
        driver.update('widgets', 'w1', 1, { id: 'w1', data: { n: 2 }, uniques: ['slug:uno'] }),
      )
      expect(updateError).toMatchObject({ status: 503 })
      sync.mockRejectedValueOnce(diskError())
      expect(await rejectionOf(driver.increment('hits', 5, 60_000))).toMatchObject({ status: 503 })
      sync.mockRejectedValueOnce(diskError())
      expect(await rejectionOf(driver.delete('widgets', 'w1'))).toMatchObject({ status: 503 })

      expect(await dump(driver)).toEqual(before)
      expect((await driver.findByUnique('widgets', 'slug:one'))?.id).toBe('w1')
      expect(await driver.increment('hits', 1, 60_000)).toEqual({ value: 2, expiresAt: counter.expiresAt })
      await driver.close()

      const reopened = await openTracked({ directory })
      expect((await reopened.get('widgets', 'w1'))?.data).toEqual({ n: 1 })
      expect((await reopened.increment('hits', 0, 60_000)).value).toBe(2)
    })
  })

  describe('tallies', () => {
    const DAY_MS = 86_400_000
    const change = (key: string, amount: number, ttlMs = DAY_MS) => ({ key, amount, ttlMs })
    const holdOf = (id: string, changes: Array<ReturnType<typeof change>>, leaseMs = 600_000) => ({ id, owner: 'owner-a', leaseMs, changes })
    const entries = async (directory: string) => (await journalLines(directory)).map((line) => JSON.parse(line) as { seq: number; op: string; mutations?: Array<{ op: string }> })

    it('journals a hold, a batch of settlements and a release as one line each, kept across a reopen', async () => {
      const directory = await makeDirectory()
      let time = 1_000_000
      const now = () => time
      const first = await openFileStorage({ directory, now })
      await first.hold(holdOf('h1', [change('spend:a', 1_000), change('spend:b', 1_000)]))
      await first.hold(holdOf('h2', [change('spend:a', 500)], 10))
      await first.settle([
        { id: 'h1', changes: [change('spend:a', 300), change('spend:b', 300)] },
        { id: 'free', changes: [change('spend:a', 7)] },
      ])
      time += 11
      expect(await first.releaseExpiredHolds(10)).toBe(1)
      // Nothing to settle, renew or release writes nothing.
      await first.settle([{ id: 'h1', changes: [change('spend:a', 300)] }])
      expect(await first.renewHolds(['h1'], 1_000)).toBe(0)
      expect(await first.releaseExpiredHolds(10)).toBe(0)
      const written = await entries(directory)
      expect(written.map((entry) => entry.op)).toEqual(['batch', 'batch', 'batch', 'batch'])
      expect(written[2]!.mutations!.map((mutation) => mutation.op)).toEqual(['settled', 'unhold', 'settled', 'tally', 'tally'])
      expect(written[3]!.mutations!.map((mutation) => mutation.op)).toEqual(['unhold', 'tally'])
      expect(await first.readTallies(['spend:a', 'spend:b'])).toEqual([307, 300])
      await first.close()

      const second = await openTracked({ directory, now })
      expect(await second.readTallies(['spend:a', 'spend:b'])).toEqual([307, 300])
      // The settled ids are remembered: a hold under one is refused, a settlement sent again changes nothing.
      await expect(second.hold(holdOf('h1', [change('spend:a', 1)]))).rejects.toMatchObject({ status: 409, kind: 'unique' })
      await second.settle([{ id: 'free', changes: [change('spend:a', 7)] }])
      expect(await second.readTallies(['spend:a'])).toEqual([307])
      // Tallies are not counters: the counter of the same key was never touched.
      expect((await second.increment('spend:a', 0, DAY_MS)).value).toBe(0)
    })

    it('keeps all or none of a settlement batch whose journal line a crash tore', async () => {
      const directory = await makeDirectory()
      const first = await openFileStorage({ directory })
      await first.settle([{ id: 'before', changes: [change('spend:a', 5)] }])
      const intact = (await stat(join(directory, 'journal.jsonl'))).size
      await first.settle([
        { id: 's1', changes: [change('spend:a', 100), change('spend:b', 100)] },
        { id: 's2', changes: [change('spend:a', 40)] },
      ])
      const full = (await stat(join(directory, 'journal.jsonl'))).size
      await first.close()
      // Every prefix of the line, down to its first byte: the same state as before the batch.
      for (const cut of [full - 2, Math.floor((intact + full) / 2), intact + 1]) {
        const copy = await makeDirectory()
        await cp(directory, copy, { recursive: true })
        await truncate(join(copy, 'journal.jsonl'), cut)
        const reopened = await openFileStorage({ directory: copy })
        expect(await reopened.readTallies(['spend:a', 'spend:b']), `cut at ${cut}`).toEqual([5, 0])
        expect((await stat(join(copy, 'journal.jsonl'))).size).toBe(intact)
        // Not settled, so sending the batch again applies it whole.
        await reopened.settle([
          { id: 's1', changes: [change('spend:a', 100), change('spend:b', 100)] },
          { id: 's2', changes: [change('spend:a', 40)] },
        ])
        expect(await reopened.readTallies(['spend:a', 'spend:b'])).toEqual([145, 100])
        await reopened.close()
      }
      const whole = await openTracked({ directory })
      expect(await whole.readTallies(['spend:a', 'spend:b'])).toEqual([145, 100])
    })

    it('writes nothing of a hold or a settlement whose append fails', async () => {
      const directory = await makeDirectory()
      const driver = await openTracked({ directory })
      await driver.hold(holdOf('h1', [change('spend:a', 1_000)]))
      const prototype = await fileHandlePrototype(directory)
      vi.spyOn(prototype, 'write').mockRejectedValueOnce(diskError())
      await expect(driver.hold(holdOf('h2', [change('spend:a', 1), change('spend:b', 1)]))).rejects.toMatchObject({ status: 503 })
      vi.spyOn(prototype, 'sync').mockRejectedValueOnce(diskError())
      await expect(driver.settle([{ id: 'h1', changes: [change('spend:a', 10)] }])).rejects.toMatchObject({ status: 503 })
      expect(await driver.readTallies(['spend:a', 'spend:b'])).toEqual([1_000, 0])
      // Neither id counts as held or settled: both go through now.
      await driver.hold(holdOf('h2', [change('spend:b', 1)]))
      await driver.settle([{ id: 'h1', changes: [change('spend:a', 10)] }])
      expect(await driver.readTallies(['spend:a', 'spend:b'])).toEqual([10, 1])
    })

    it('releases on open every hold a closed store kept, once, and its owner’s late settlement adds only the real cost', async () => {
      const directory = await makeDirectory()
      const first = await openFileStorage({ directory })
      await first.settle([{ id: 'earlier', changes: [change('spend:a', 50)] }])
      await first.hold(holdOf('h1', [change('spend:a', 1_000), change('spend:b', 1_000)]))
      await first.hold(holdOf('h2', [change('spend:a', 200)]))
      expect(await first.readTallies(['spend:a', 'spend:b'])).toEqual([1_250, 1_000])
      await first.close()

      const second = await openFileStorage({ directory })
      expect(await second.readTallies(['spend:a', 'spend:b'])).toEqual([50, 0])
      expect(await second.renewHolds(['h1', 'h2'], 600_000)).toBe(0)
      const release = (await entries(directory)).at(-1)!
      expect(release.mutations!.map((mutation) => mutation.op).sort()).toEqual(['tally', 'tally', 'unhold', 'unhold'])
      await second.settle([{ id: 'h1', changes: [change('spend:a', 30)] }])
      await second.close()

      const third = await openTracked({ directory })
      expect(await third.readTallies(['spend:a', 'spend:b'])).toEqual([80, 0])
    })

    it('releases on open the holds of a process that died holding them, from the journal or from a snapshot', async () => {
      for (const compactAfter of [10_000, 1]) {
        const directory = await makeDirectory()
        const living = await openTracked({ directory, compactAfter })
        await living.settle([{ id: 'earlier', changes: [change('spend:a', 50)] }])
        await living.hold(holdOf('h1', [change('spend:a', 1_000)]))
        await living.hold(holdOf('h2', [change('spend:a', 200), change('spend:b', 200)]))
        if (compactAfter === 1) {
          // The snapshot of the last write: no compaction follows it, so the copy below races none.
          await vi.waitFor(async () => expect(await readFile(join(directory, 'snapshot.jsonl'), 'utf8')).toContain('"op":"hold","hold":{"id":"h2"'))
        }
        // The crash: the files as the process left them, its lock (this pid, from an "earlier run") included.
        const crashed = await makeDirectory()
        await cp(directory, crashed, { recursive: true })
        expect(await readFile(join(crashed, 'LOCK'), 'utf8')).toBe(String(process.pid))

        const reopened = await openTracked({ directory: crashed })
        expect(await reopened.readTallies(['spend:a', 'spend:b']), `compactAfter ${compactAfter}`).toEqual([50, 0])
        expect(await reopened.releaseExpiredHolds(10)).toBe(0)
        await reopened.hold(holdOf('h3', [change('spend:a', 5)]))
        expect(await reopened.readTallies(['spend:a'])).toEqual([55])
      }
    })

    it('writes tallies, holds and settled ids into its snapshot (format 3) and reads them back', async () => {
      const directory = await makeDirectory()
      let time = 2_000_000
      const now = () => time
      const first = await openFileStorage({ directory, now, compactAfter: 1_000 })
      await first.settle([{ id: 'old', changes: [change('spend:gone', 9, 100)] }])
      time += SETTLEMENT_MEMORY_MS
      await first.hold(holdOf('h1', [change('spend:a', 1_000)]))
      await first.settle([{ id: 's1', changes: [change('spend:a', 70)] }])
      await first.close()
      // Folds everything into a snapshot; the expired tally and settled id stay out of it.
      const compacting = await openFileStorage({ directory, now, compactAfter: 1 })
      await compacting.renewHolds(['h1'], 600_000)
      await compacting.close()
      const [header, ...lines] = (await readFile(join(directory, 'snapshot.jsonl'), 'utf8')).split('\n').filter((line) => line !== '')
      expect(JSON.parse(header!)).toMatchObject({ format: 3, records: 0, counters: 0, tallies: 1, holds: 0, settled: 1 })
      expect(lines.map((line) => JSON.parse(line) as unknown)).toEqual([
        { op: 'tally', key: 'spend:a', value: 70, expiresAt: time + DAY_MS },
        { op: 'settled', id: 's1', expiresAt: time + IN_PROCESS_SETTLEMENT_MEMORY_MS },
      ])
      expect(await journalLines(directory)).toHaveLength(0)

      const second = await openTracked({ directory, now })
      expect(await second.readTallies(['spend:a', 'spend:gone'])).toEqual([70, 0])
      await expect(second.hold(holdOf('s1', [change('spend:a', 1)]))).rejects.toMatchObject({ status: 409 })
      await second.hold(holdOf('old', [change('spend:a', 1)]))
      expect(await second.readTallies(['spend:a'])).toEqual([71])
    })

    it('refuses a snapshot that lacks a tally its header counts', async () => {
      const directory = await makeDirectory()
      await writeFile(
        join(directory, 'snapshot.jsonl'),
        `${JSON.stringify({ format: 3, seq: 1, records: 0, counters: 0, tallies: 2, holds: 0, settled: 0 })}\n` +
          `${JSON.stringify({ op: 'tally', key: 'spend:a', value: 1, expiresAt: Date.now() + DAY_MS })}\n`,
      )
      expect(String(await rejectionOf(openFileStorage({ directory })))).toMatch(/snapshot\.jsonl is unreadable \(incomplete\)/)
    })

    describe('a store written before tallies', () => {
      const at = 3_000_000
      const spend = { key: 'spend:key:k1:usage:total', value: 400, expiresAt: at + DAY_MS }

      /** The files an older version left: a format 2 snapshot with counters, and a journal with a later increment. */
      const writeOldStore = async (directory: string) => {
        const record = { id: 'w1', data: {}, version: 1, indexes: {}, uniques: [], sortKey: '' }
        await writeFile(
          join(directory, 'snapshot.jsonl'),
          [
            { format: 2, seq: 2, records: 1, counters: 3 },
            { op: 'put', collection: 'widgets', record },
            { op: 'counter', ...spend },
            { op: 'counter', key: 'spend:key:k1:usage:d1970-01-01', value: 30, expiresAt: at - 1 },
            { op: 'counter', key: 'rate:k1', value: 3, expiresAt: at + 60_000 },
          ]
            .map((line) => `${JSON.stringify(line)}\n`)
            .join(''),
        )
        await writeFile(
          join(directory, 'journal.jsonl'),
          `${JSON.stringify({ seq: 2, op: 'counter', ...spend, value: 350 })}\n${JSON.stringify({ seq: 3, op: 'counter', ...spend, value: 420 })}\n`,
        )
      }

      it('carries live spend counters into tallies once, and leaves other counters alone', async () => {
        const directory = await makeDirectory()
        await writeOldStore(directory)
        const now = () => at
        const first = await openFileStorage({ directory, now })
        expect(await first.readTallies([spend.key, 'spend:key:k1:usage:d1970-01-01', 'rate:k1'])).toEqual([420, 0, 0])
        expect((await first.increment(spend.key, 0, DAY_MS)).value).toBe(0)
        expect((await first.increment('rate:k1', 0, 60_000)).value).toBe(3)
        expect((await first.get('widgets', 'w1'))?.id).toBe('w1')
        const [carried] = await first.hold(holdOf('h1', [change(spend.key, 80)]))
        // The tally keeps the counter's expiry.
        expect(carried).toEqual({ value: 500, expiresAt: spend.expiresAt })
        await first.settle([{ id: 'h1', changes: [change(spend.key, 80)] }])
        await first.close()

        const second = await openFileStorage({ directory, now })
        expect(await second.readTallies([spend.key])).toEqual([500])
        await second.close()
        // Again after a compaction folded the carry into a format 3 snapshot.
        const compacting = await openFileStorage({ directory, now, compactAfter: 1 })
        await compacting.increment('rate:k1', 1, 60_000)
        await compacting.close()
        expect(JSON.parse((await readFile(join(directory, 'snapshot.jsonl'), 'utf8')).split('\n')[0]!)).toMatchObject({ format: 3, counters: 1, tallies: 1 })
        const third = await openTracked({ directory, now })
        expect(await third.readTallies([spend.key])).toEqual([500])
        expect((await third.increment(spend.key, 0, DAY_MS)).value).toBe(0)
      })

      it('carries them from a snapshot of the first format too', async () => {
        const directory = await makeDirectory()
        await writeFile(join(directory, 'snapshot.json'), JSON.stringify({ format: 1, seq: 1, state: { collections: {}, counters: [spend] } }))
        const first = await openFileStorage({ directory, now: () => at })
        expect(await first.readTallies([spend.key])).toEqual([400])
        await first.close()
        const second = await openTracked({ directory, now: () => at })
        expect(await second.readTallies([spend.key])).toEqual([400])
        expect((await second.increment(spend.key, 0, DAY_MS)).value).toBe(0)
      })
    })
  })
})
