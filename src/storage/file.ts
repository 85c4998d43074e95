/**
 * The embedded on-disk store of the standalone runner. State lives in memory (the shared engine)
 * and every write is appended to `<directory>/journal.jsonl` before it becomes visible; on open the
 * snapshot is loaded and the journal replayed. Writes go through one promise chain, so journal
 * lines never interleave and each mutation is planned against all writes before it. A compaction
 * writes its snapshot beside that chain, so writes go on while it runs.
 *
 * Tallies (`StorageDriver.hold`): a hold or a batch of settlements is one journal line (`op: 'batch'`), so a
 * crash keeps all of it or none. The lock makes this process the store's only one, so every hold found on open
 * was made by a process that is gone: all of them are released then, at once, rather than after their leases.
 * A store written before tallies existed kept spend in counters named `spend:…`; on open, each live one is
 * carried into the tally of the same key and expired, in one journal line, so a later open finds nothing to carry.
 */
import { rm } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { StorageUnavailableError } from '../core/errors'
import type {
  CounterChange,
  CounterResult,
  JsonObject,
  ListQuery,
  ListResult,
  RecordInput,
  StorageDriver,
  StoredRecord,
  TallyHold,
  TallySettlement,
} from './contract'
import { checkedDriver } from './checked'
import { acquireDirectoryLock } from './file-lock'
import { openJournal, removeTemporaryJournal, type Journal } from './file-journal'
import { FIRST_FORMAT_SNAPSHOT_FILE, JOURNAL_FILE, loadStore, planSpendCarry, SNAPSHOT_FILE } from './file-load'
import { removeTemporarySnapshot, syncDirectory, writeSnapshot } from './file-snapshot'
import type { MemoryEngine, Mutation } from './memory-engine'
import { ensurePrivateDirectory, tightenFile } from './private-files'

export interface FileStorageOptions {
  /** Directory holding `journal.jsonl`, `snapshot.jsonl` and `LOCK`; created when missing. */
  directory: string
  /** fsync every write before it resolves (default true). Off, a power loss may drop the latest writes. */
  fsync?: boolean
  /**
   * Fold the journal into a fresh snapshot once it holds this many lines and at least as many as the last
   * snapshot (default 10 000).
   */
  compactAfter?: number
  /**
   * Fold the journal into a fresh snapshot once it holds this many bytes and at least as many as the
   * last snapshot (default 16 MiB). Bounds the disk to about twice the state, plus this.
   */
  compactAfterBytes?: number
  /** Clock for counter expiry in Unix milliseconds (default `Date.now`). */
  now?: () => number
}

const DEFAULT_COMPACT_AFTER = 10_000
const DEFAULT_COMPACT_AFTER_BYTES = 16 * 1024 * 1024

interface OpenStore {
  engine: MemoryEngine
  journal: Journal
  /** Sequence number of the last committed mutation. */
  seq: number
  /** Journal length that triggers the next compaction. */
  compactAt: number
  /** Journal size in bytes that triggers the next compaction. */
  compactAtBytes: number
  /** The compaction under way, if any; it settles (never rejects) when its snapshot is in place or has failed. */
  compaction: Promise<void> | undefined
  releaseLock: () => Promise<void>
}

interface ResolvedOptions {
  directory: string
  shouldSync: boolean
  compactAfter: number
  compactAfterBytes: number
  now: () => number
}

const resolveOptions = (options: FileStorageOptions): ResolvedOptions => {
  if (typeof options?.directory !== 'string' || options.directory === '') {
    throw new TypeError('fileStorage: options.directory must be a non-empty string')
  }
  if (options.fsync !== undefined && typeof options.fsync !== 'boolean') {
    throw new TypeError('fileStorage: options.fsync must be a boolean')
  }
  const compactAfter = options.compactAfter ?? DEFAULT_COMPACT_AFTER
  if (!Number.isSafeInteger(compactAfter) || compactAfter < 1) {
    throw new TypeError('fileStorage: options.compactAfter must be a positive integer')
  }
  const compactAfterBytes = options.compactAfterBytes ?? DEFAULT_COMPACT_AFTER_BYTES
  if (!Number.isSafeInteger(compactAfterBytes) || compactAfterBytes < 1) {
    throw new TypeError('fileStorage: options.compactAfterBytes must be a positive integer')
  }
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw new TypeError('fileStorage: options.now must be a function')
  }
  return {
    directory: resolve(options.directory),
    shouldSync: options.fsync ?? true,
    compactAfter,
    compactAfterBytes,
    now: options.now ?? Date.now,
  }
}

/** What the last snapshot held. */
interface SnapshotSize {
  bytes: number
  /** Records, counters, tallies, holds and settled ids: the lines after its header. */
  lines: number
}

/** Appends `mutations` as one journal line (all or none on replay) after entry `seq`, then applies them. */
const appendTogether = async (journal: Journal, engine: MemoryEngine, seq: number, mutations: Mutation[]): Promise<void> => {
  await journal.append({ seq: seq + 1, op: 'batch', mutations })
  for (const mutation of mutations) engine.apply(mutation)
}

/**
 * The journal lines and bytes that trigger compaction: a snapshot costs the whole state to write, so a large
 * state waits for a journal as long and as large as its last snapshot (as Redis rewrites its AOF). The disk stays
 * near twice the state, a journal's replay costs about what loading the snapshot does, and each compaction is paid
 * for by as many lines and bytes of writes: a store of many small records (usage records, counters) is not
 * rewritten every `compactAfter` writes.
 */
const compactionThresholds = (options: ResolvedOptions, snapshot: SnapshotSize) => ({
  compactAt: Math.max(options.compactAfter, snapshot.lines),
  compactAtBytes: Math.max(options.compactAfterBytes, snapshot.bytes),
})

const openStore = async (options: ResolvedOptions): Promise<OpenStore> => {
  const { directory, shouldSync } = options
  await ensurePrivateDirectory(directory)
  const releaseLock = await acquireDirectoryLock(directory)
  try {
    const snapshotPath = join(directory, SNAPSHOT_FILE)
    const firstFormatPath = join(directory, FIRST_FORMAT_SNAPSHOT_FILE)
    const journalPath = join(directory, JOURNAL_FILE)
    await Promise.all([removeTemporarySnapshot(snapshotPath), removeTemporarySnapshot(firstFormatPath), removeTemporaryJournal(journalPath)])
    await Promise.all([tightenFile(snapshotPath), tightenFile(firstFormatPath)])

    const loaded = await loadStore(directory, options.now, { shouldRepair: true })
    const { engine, legacySpend } = loaded
    let { seq } = loaded
    const { lineCount, size } = loaded.journal

    const journal = await openJournal(journalPath, { shouldSync, size, lineCount })
    try {
      if (shouldSync) await syncDirectory(directory)
      const carry = planSpendCarry(engine, legacySpend, options.now())
      if (carry.length > 0) await appendTogether(journal, engine, seq++, carry)
      // Only this process has the store (the lock), so every hold in it belongs to a process that is gone.
      const orphans = engine.planReleaseExpired(Number.MAX_SAFE_INTEGER, true)
      if (orphans.released > 0) await appendTogether(journal, engine, seq++, orphans.mutations)
    } catch (error) {
      await journal.close()
      throw error
    }
    const thresholds = compactionThresholds(options, loaded.snapshot ?? { bytes: 0, lines: 0 })
    return { engine, journal, seq, ...thresholds, compaction: undefined, releaseLock }
  } catch (error) {
    await releaseLock()
    throw error
  }
}

const unavailable = (cause: unknown) => new StorageUnavailableError('Storage is unavailable', { cause })

const createFileDriver = (options: FileStorageOptions) => {
  const resolved = resolveOptions(options)
  const snapshotPath = join(resolved.directory, SNAPSHOT_FILE)
  const firstFormatSnapshotPath = join(resolved.directory, FIRST_FORMAT_SNAPSHOT_FILE)
  const opening = openStore(resolved)
  let store: OpenStore | undefined
  let openError: unknown
  /** Settles (never rejects) once opening is over; `store` or `openError` says how it went. */
  const ready = opening.then(
    (opened) => {
      store = opened
    },
    (error: unknown) => {
      openError = error
    },
  )
  /** End of the write chain; never rejects. */
  let tail: Promise<unknown> = ready
  let isClosed = false
  let closing: Promise<void> | undefined

  const openedStore = async (): Promise<OpenStore> => {
    if (isClosed) throw new StorageUnavailableError('Storage is closed')
    await ready
    if (!store) throw unavailable(openError)
    return store
  }

  const enqueue = <R>(task: () => Promise<R>): Promise<R> => {
    const run = tail.then(task)
    tail = run.then(
      () => {},
      () => {},
    )
    return run
  }

  /**
   * Starts a compaction from inside the write chain: the state as of the last committed write is taken there (its
   * lists only: a write replaces a record, never changes one), and the snapshot is written beside the chain, so
   * writes go on meanwhile. The journal then drops, again in the chain, only the entries the snapshot holds.
   */
  const startCompaction = (current: OpenStore): void => {
    const seq = current.seq
    const journalBytes = current.journal.size
    const state = current.engine.state()
    current.compaction = (async () => {
      try {
        const snapshot = await writeSnapshot(snapshotPath, seq, state, resolved.shouldSync)
        await rm(firstFormatSnapshotPath, { force: true })
        await enqueue(() => current.journal.dropThrough(journalBytes))
        Object.assign(current, compactionThresholds(resolved, snapshot))
      } catch {
        // The journal still holds every write, so nothing is lost; try again after another round of writes.
        current.compactAt = current.journal.lineCount + resolved.compactAfter
        current.compactAtBytes = current.journal.size + resolved.compactAfterBytes
      } finally {
        current.compaction = undefined
      }
      // Writes made during this compaction may already call for the next one (`close` waits for it too).
      void enqueue(async () => scheduleCompactionIfDue(current))
    })()
  }

  const scheduleCompactionIfDue = (current: OpenStore): void => {
    if (current.compaction) return
    if (current.journal.lineCount < current.compactAt && current.journal.size < current.compactAtBytes) return
    current.compactAt = Number.POSITIVE_INFINITY
    current.compactAtBytes = Number.POSITIVE_INFINITY
    void enqueue(async () => startCompaction(current))
  }

  /** Runs a write after every earlier one, so it is planned against all of them. */
  const serialized = async <R>(task: (current: OpenStore) => Promise<R>): Promise<R> => {
    if (isClosed) throw new StorageUnavailableError('Storage is closed')
    return enqueue(async () => {
      await ready
      if (!store) throw unavailable(openError)
      return task(store)
    })
  }

  /**
   * Makes planned mutations that count only together durable as one journal line, then visible; a failed append
   * leaves the state untouched.
   */
  const commitTogether = async (current: OpenStore, mutations: Mutation[]): Promise<void> => {
    if (mutations.length === 0) return
    try {
      await appendTogether(current.journal, current.engine, current.seq, mutations)
    } catch (error) {
      throw unavailable(error)
    }
    current.seq++
    scheduleCompactionIfDue(current)
  }

  /** Makes planned mutations durable (one append), then visible; a failed append leaves the state untouched. */
  const commit = async (current: OpenStore, ...mutations: Mutation[]): Promise<void> => {
    if (mutations.length === 0) return
    const first = current.seq + 1
    try {
      await current.journal.append(...mutations.map((mutation, index) => ({ seq: first + index, ...mutation })))
    } catch (error) {
      throw unavailable(error)
    }
    current.seq = first + mutations.length - 1
    for (const mutation of mutations) current.engine.apply(mutation)
    scheduleCompactionIfDue(current)
  }

  void ready.then(() => {
    if (store) scheduleCompactionIfDue(store)
  })

  const driver: StorageDriver = {
    name: 'file',

    create<T extends JsonObject>(collection: string, input: RecordInput<T>): Promise<StoredRecord<T>> {
      return serialized(async (current) => {
        const mutation = current.engine.planCreate(collection, input)
        await commit(current, mutation)
        return mutation.record as StoredRecord<T>
      })
    },

    createMany<T extends JsonObject>(collection: string, inputs: RecordInput<T>[]): Promise<Array<StoredRecord<T> | null>> {
      return serialized(async (current) => {
        const mutations = current.engine.planCreateMany(collection, inputs)
        await commit(current, ...mutations.filter((mutation) => mutation !== null))
        return mutations.map((mutation) => (mutation ? (mutation.record as StoredRecord<T>) : null))
      })
    },

    async get<T extends JsonObject>(collection: string, id: string): Promise<StoredRecord<T> | null> {
      return (await openedStore()).engine.get<T>(collection, id)
    },

    async findByUnique<T extends JsonObject>(collection: string, uniqueKey: string): Promise<StoredRecord<T> | null> {
      return (await openedStore()).engine.findByUnique<T>(collection, uniqueKey)
    },

    update<T extends JsonObject>(
      collection: string,
      id: string,
      expectedVersion: number,
      input: RecordInput<T>,
    ): Promise<StoredRecord<T> | null> {
      return serialized(async (current) => {
        const mutation = current.engine.planUpdate(collection, id, expectedVersion, input)
        if (!mutation) return null
        await commit(current, mutation)
        return mutation.record as StoredRecord<T>
      })
    },

    delete(collection: string, id: string, expectedVersion?: number): Promise<boolean> {
      return serialized(async (current) => {
        const mutation = current.engine.planDelete(collection, id, expectedVersion)
        if (!mutation) return false
        await commit(current, mutation)
        return true
      })
    },

    async list<T extends JsonObject>(collection: string, query?: ListQuery): Promise<ListResult<T>> {
      return (await openedStore()).engine.list<T>(collection, query)
    },

    increment(key: string, amount: number, ttlMs: number): Promise<CounterResult> {
      return serialized(async (current) => {
        const mutation = current.engine.planIncrement(key, amount, ttlMs)
        await commit(current, mutation)
        return { value: mutation.value, expiresAt: mutation.expiresAt }
      })
    },

    incrementMany(changes: ReadonlyArray<CounterChange>): Promise<CounterResult[]> {
      return serialized(async (current) => {
        // Distinct counters: each plan holds against the state before the batch, whatever its order.
        const mutations = changes.map((change) => current.engine.planIncrement(change.key, change.amount, change.ttlMs))
        if (mutations.length > 0) await commit(current, ...mutations)
        return mutations.map((mutation) => ({ value: mutation.value, expiresAt: mutation.expiresAt }))
      })
    },

    hold(hold: TallyHold): Promise<CounterResult[]> {
      return serialized(async (current) => {
        const { mutations, results } = current.engine.planHold(hold)
        await commitTogether(current, mutations)
        return results
      })
    },

    settle(settlements: ReadonlyArray<TallySettlement>): Promise<void> {
      return serialized(async (current) => {
        // Settled ids, released holds and the tallies' new values on one line: a crash keeps the whole batch or none of it.
        await commitTogether(current, current.engine.planSettle(settlements))
      })
    },

    renewHolds(ids: ReadonlyArray<string>, leaseMs: number): Promise<number> {
      return serialized(async (current) => {
        const mutations = current.engine.planRenew(ids, leaseMs)
        await commitTogether(current, mutations)
        return mutations.length
      })
    },

    releaseExpiredHolds(limit: number): Promise<number> {
      return serialized(async (current) => {
        const { mutations, released } = current.engine.planReleaseExpired(limit)
        await commitTogether(current, mutations)
        return released
      })
    },

    async readTallies(keys: ReadonlyArray<string>): Promise<number[]> {
      return (await openedStore()).engine.readTallies(keys)
    },

    close(): Promise<void> {
      closing ??= (async () => {
        isClosed = true
        // Drain writes accepted before close, and a compaction under way with the journal rewrite it queues.
        let drained: Promise<unknown>
        do {
          drained = tail
          await drained
          await store?.compaction
        } while (drained !== tail || store?.compaction)
        if (!store) return
        try {
          await store.journal.close()
        } finally {
          await store.releaseLock()
        }
      })()
      return closing
    },
  }

  return { driver: checkedDriver(driver), opening }
}

/**
 * The embedded on-disk driver: state survives restarts. Opening happens in the background and
 * every method waits for it; use `openFileStorage` to see lock or read errors at startup.
 *
 * @example
 * const gateway = createGateway({ storage: fileStorage({ directory: '.modelgate' }) })
 */
export const fileStorage = (options: FileStorageOptions): StorageDriver => createFileDriver(options).driver

/**
 * Opens the on-disk driver and resolves once its state is loaded and its lock held. Rejects when
 * another live process holds the store or its files cannot be read.
 *
 * @example
 * const storage = await openFileStorage({ directory: '.modelgate' })
 */
export const openFileStorage = async (options: FileStorageOptions): Promise<StorageDriver> => {
  const { driver, opening } = createFileDriver(options)
  await opening
  return driver
}
