/**
 * The snapshot of the file driver: the whole state plus the `seq` of the last journal entry folded
 * into it. Written to a temporary file and renamed over the old one, so it is never seen half-written.
 */
import { open, readFile, rename, rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { EngineState } from './memory-engine'
import { PRIVATE_FILE_MODE, tightenOpenFile } from './private-files'

const FORMAT = 1

export interface Snapshot {
  format: typeof FORMAT
  /** Journal entries up to and including this sequence number are part of `state`. */
  seq: number
  state: EngineState
}

const isSnapshot = (value: unknown): value is Snapshot => {
  const snapshot = value as Partial<Snapshot> | null
  return (
    typeof snapshot === 'object' &&
    snapshot !== null &&
    snapshot.format === FORMAT &&
    Number.isSafeInteger(snapshot.seq) &&
    typeof snapshot.state?.collections === 'object' &&
    Array.isArray(snapshot.state.counters)
  )
}

/** Reads the snapshot at `path` and its size in bytes; `undefined` when there is none yet. */
export const readSnapshot = async (path: string): Promise<{ snapshot: Snapshot; size: number } | undefined> => {
  let bytes: Buffer
  try {
    bytes = await readFile(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  let value: unknown
  try {
    value = JSON.parse(bytes.toString('utf8'))
  } catch {
    value = undefined
  }
  if (!isSnapshot(value)) throw new Error(`modelgate: the snapshot ${path} is unreadable`)
  return { snapshot: value, size: bytes.length }
}

/** Makes a rename or a new file in `directory` durable; best effort where directories cannot be opened (Windows). */
export const syncDirectory = async (directory: string): Promise<void> => {
  let handle
  try {
    handle = await open(directory, 'r')
    await handle.sync()
  } catch {
    // Not supported on this platform; the file contents themselves were already synced.
  } finally {
    await handle?.close()
  }
}

/** Replaces the snapshot at `path` with one holding `state` as of journal entry `seq`; resolves with its size in bytes. */
export const writeSnapshot = async (
  path: string,
  seq: number,
  state: EngineState,
  shouldSync: boolean,
): Promise<number> => {
  const temporaryPath = `${path}.tmp`
  const snapshot: Snapshot = { format: FORMAT, seq, state }
  const bytes = Buffer.from(JSON.stringify(snapshot), 'utf8')
  const handle = await open(temporaryPath, 'w', PRIVATE_FILE_MODE)
  try {
    await tightenOpenFile(handle)
    await handle.writeFile(bytes)
    if (shouldSync) await handle.sync()
  } finally {
    await handle.close()
  }
  await rename(temporaryPath, path)
  if (shouldSync) await syncDirectory(dirname(path))
  return bytes.length
}

/** Removes a temporary snapshot left by a crash during `writeSnapshot`. */
export const removeTemporarySnapshot = (path: string): Promise<void> => rm(`${path}.tmp`, { force: true })
