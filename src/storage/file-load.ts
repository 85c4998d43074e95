/**
 * Loading the embedded file store (src/storage/file.ts): its snapshot (either format) and then its journal, replayed
 * into a fresh memory engine. The file driver opens a store with it, and the SQLite import reads one with it
 * (src/storage/sql/sqlite-import.ts), so the format is read in one place.
 */
import { access } from 'node:fs/promises'
import { join } from 'node:path'
import { acquireDirectoryLock } from './file-lock'
import { readJournal, type JournalContents } from './file-journal'
import { loadSnapshot, readFirstFormatSnapshot } from './file-snapshot'
import { createMemoryEngine, loadEngineState, type CounterMutation, type EngineState, type MemoryEngine, type Mutation } from './memory-engine'

export const JOURNAL_FILE = 'journal.jsonl'
export const SNAPSHOT_FILE = 'snapshot.jsonl'
/** Where versions before the JSON Lines snapshot kept theirs: read when there is no newer one, removed by the next compaction. */
export const FIRST_FORMAT_SNAPSHOT_FILE = 'snapshot.json'
/** Every file of a store but its lock: the snapshots, the journal and the temporary files a crash can leave beside them. */
export const STORE_FILES = [SNAPSHOT_FILE, FIRST_FORMAT_SNAPSHOT_FILE, JOURNAL_FILE].flatMap((name) => [name, `${name}.tmp`])

/** Where spend was kept before tallies existed: counters whose key starts with this (src/repositories/spend-counters.ts). */
const SPEND_COUNTER_PREFIX = 'spend:'

export interface LoadedStore {
  engine: MemoryEngine
  /** Sequence number of the last mutation loaded. */
  seq: number
  /** The last state of each spend counter, for the carry into tallies (`planSpendCarry`). */
  legacySpend: Map<string, CounterMutation>
  /** What the snapshot held, if there was one. */
  snapshot: { bytes: number; lines: number } | undefined
  journal: JournalContents
}

/**
 * Loads the store in `directory` (whose lock the caller holds). With `shouldRepair` false nothing is written: a torn
 * journal tail is skipped rather than cut off.
 */
export const loadStore = async (directory: string, now: () => number, options: { shouldRepair: boolean }): Promise<LoadedStore> => {
  const engine = createMemoryEngine(now)
  const legacySpend = new Map<string, CounterMutation>()
  const apply = (mutation: Mutation) => {
    engine.apply(mutation)
    if (mutation.op === 'counter' && mutation.key.startsWith(SPEND_COUNTER_PREFIX)) legacySpend.set(mutation.key, mutation)
  }
  let stored = await loadSnapshot(join(directory, SNAPSHOT_FILE), apply)
  if (!stored) {
    const firstFormat = await readFirstFormatSnapshot(join(directory, FIRST_FORMAT_SNAPSHOT_FILE))
    if (firstFormat) {
      loadEngineState(engine, firstFormat.state)
      for (const { key, value, expiresAt } of firstFormat.state.counters) {
        if (key.startsWith(SPEND_COUNTER_PREFIX)) legacySpend.set(key, { op: 'counter', key, value, expiresAt })
      }
    }
    stored = firstFormat
  }
  let seq = stored?.seq ?? 0
  const journal = await readJournal(
    join(directory, JOURNAL_FILE),
    (entry) => {
      // A crash between writing a snapshot and emptying the journal leaves entries the snapshot already holds.
      if (entry.seq <= seq) return
      if (entry.op === 'batch') for (const mutation of entry.mutations) apply(mutation)
      else apply(entry)
      seq = entry.seq
    },
    { shouldRepair: options.shouldRepair },
  )
  return { engine, seq, legacySpend, snapshot: stored && { bytes: stored.bytes, lines: stored.lines }, journal }
}

/**
 * Carries spend counters of a store written before tallies existed into tallies of the same key (added to a tally
 * that already lives) and expires the counters, as one batch: `legacy` holds the last value the load gave each.
 */
export const planSpendCarry = (engine: MemoryEngine, legacy: Map<string, CounterMutation>, at: number): Mutation[] => {
  const live = [...legacy.values()].filter((counter) => counter.expiresAt > at)
  if (live.length === 0) return []
  const tallies = new Map((engine.state().tallies ?? []).map((tally) => [tally.key, tally]))
  return live.flatMap(({ key, value, expiresAt }): Mutation[] => {
    const tally = tallies.get(key)
    return [
      { op: 'tally', key, value: (tally?.value ?? 0) + value, expiresAt: tally?.expiresAt ?? expiresAt },
      // Expired: gone from reads and from the next snapshot, and a replay of this line finds nothing to carry.
      { op: 'counter', key, value: 0, expiresAt: 0 },
    ]
  })
}

const exists = async (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  )

/** Whether `directory` holds a file store (a snapshot of either format, or a journal). */
export const hasFileStore = async (directory: string): Promise<boolean> =>
  (await Promise.all([SNAPSHOT_FILE, FIRST_FORMAT_SNAPSHOT_FILE, JOURNAL_FILE].map((name) => exists(join(directory, name))))).some(Boolean)

export interface FileStoreState {
  /** The state as the file driver would open it: spend counters carried into tallies, and no hold left. */
  state: EngineState
  /** Sequence number of the last write the files hold. */
  seq: number
  /** Holds released on the way (their processes are gone: the lock is this process's). */
  releasedHolds: number
  /** Unlocks the store. */
  release(): Promise<void>
}

/**
 * Reads the file store in `directory` without writing to its files, holding its lock until `release` (so no
 * process opens it meanwhile); `undefined` when there is none. Rejects while another live process holds it.
 */
export const readFileStore = async (directory: string, now: () => number = Date.now): Promise<FileStoreState | undefined> => {
  if (!(await hasFileStore(directory))) return undefined
  const release = await acquireDirectoryLock(directory)
  try {
    const { engine, legacySpend, seq } = await loadStore(directory, now, { shouldRepair: false })
    for (const mutation of planSpendCarry(engine, legacySpend, now())) engine.apply(mutation)
    const orphans = engine.planReleaseExpired(Number.MAX_SAFE_INTEGER, true)
    for (const mutation of orphans.mutations) engine.apply(mutation)
    return { state: engine.state(), seq, releasedHolds: orphans.released, release }
  } catch (error) {
    await release()
    throw error
  }
}
