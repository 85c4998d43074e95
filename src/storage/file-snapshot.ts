/**
 * The snapshot of the file driver: the whole state plus the `seq` of the last journal entry folded into it.
 * JSON Lines: a header, then one line per record, live counter, live tally, hold and remembered settlement id, in
 * that order, each a mutation that recreates it. It is written piece by piece to a temporary file and renamed over
 * the old one, so it is never seen half-written, and read piece by piece, so neither its size nor the event loop's
 * other work sets a limit on the state.
 */
import { open, readFile, rename, rm, type FileHandle } from 'node:fs/promises'
import { dirname } from 'node:path'
import { createLineWriter, isMutation, parseLine, readLines } from './file-lines'
import type { EngineState, Mutation } from './memory-engine'
import { PRIVATE_FILE_MODE, tightenOpenFile } from './private-files'

/** 3 added tallies, holds and settled ids; 2, which has none, is still read. */
const FORMAT = 3
const FORMAT_BEFORE_TALLIES = 2

/** Lines after the header, by kind: how a reader knows it has all of them. */
interface LineCounts {
  records: number
  counters: number
  tallies: number
  holds: number
  settled: number
}

interface SnapshotHeader extends LineCounts {
  format: typeof FORMAT
  /** Journal entries up to and including this sequence number are part of the snapshot. */
  seq: number
}

const COUNTED_KINDS = ['records', 'counters', 'tallies', 'holds', 'settled'] as const

/** The kind a snapshot line counts as, by its mutation. */
const KIND_OF_OP: Partial<Record<Mutation['op'], keyof LineCounts>> = {
  put: 'records',
  counter: 'counters',
  tally: 'tallies',
  hold: 'holds',
  settled: 'settled',
}

/** The header's seq and counts; a format 2 header counts no tallies, holds or settled ids. */
const readHeader = (value: unknown): (LineCounts & { seq: number }) | undefined => {
  if (typeof value !== 'object' || value === null) return undefined
  const header = value as Record<string, unknown>
  const kinds = header.format === FORMAT ? COUNTED_KINDS : header.format === FORMAT_BEFORE_TALLIES ? (['records', 'counters'] as const) : undefined
  if (!kinds || !Number.isSafeInteger(header.seq) || !kinds.every((kind) => Number.isSafeInteger(header[kind]))) return undefined
  const counts: LineCounts = { records: 0, counters: 0, tallies: 0, holds: 0, settled: 0 }
  for (const kind of kinds) counts[kind] = header[kind] as number
  return { seq: header.seq as number, ...counts }
}

const lineTotal = (counts: LineCounts): number => COUNTED_KINDS.reduce((total, kind) => total + counts[kind], 0)

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

const unreadable = (path: string, why: string) => new Error(`modelgate: the snapshot ${path} is unreadable (${why})`)

/**
 * Loads the snapshot at `path` by handing each of its mutations to `apply`; resolves with its `seq`, its size in
 * bytes and its lines after the header, or `undefined` when there is none yet. A snapshot that does not hold all its header announces throws.
 */
export const loadSnapshot = async (
  path: string,
  apply: (mutation: Mutation) => void,
): Promise<{ seq: number; bytes: number; lines: number } | undefined> => {
  let handle: FileHandle
  try {
    handle = await open(path, 'r')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  let header: (LineCounts & { seq: number }) | undefined
  const counts: LineCounts = { records: 0, counters: 0, tallies: 0, holds: 0, settled: 0 }
  let read
  try {
    read = await readLines(handle, (line, offset) => {
      const value = parseLine(line)
      if (header === undefined) {
        header = readHeader(value)
        if (!header) throw unreadable(path, 'no header')
        return
      }
      const kind = isMutation(value) ? KIND_OF_OP[value.op] : undefined
      if (!kind) throw unreadable(path, `bad line at byte ${offset}`)
      counts[kind]++
      apply(value as Mutation)
    })
  } finally {
    await handle.close()
  }
  if (!header || read.tailAt !== read.size || COUNTED_KINDS.some((kind) => counts[kind] !== header![kind])) {
    throw unreadable(path, 'incomplete')
  }
  return { seq: header.seq, bytes: read.size, lines: lineTotal(counts) }
}

/**
 * Reads a snapshot of the first format (one JSON document, `snapshot.json`), which earlier versions wrote; its
 * state is loaded by the caller and the next compaction replaces it with the current format.
 */
export const readFirstFormatSnapshot = async (
  path: string,
): Promise<{ seq: number; state: EngineState; bytes: number; lines: number } | undefined> => {
  let bytes: Buffer
  try {
    bytes = await readFile(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  const value = parseLine(bytes.toString('utf8')) as { format?: unknown; seq?: unknown; state?: Partial<EngineState> } | undefined
  const isFirstFormat =
    typeof value === 'object' &&
    value !== null &&
    value.format === 1 &&
    Number.isSafeInteger(value.seq) &&
    typeof value.state?.collections === 'object' &&
    value.state.collections !== null &&
    Array.isArray(value.state.counters)
  if (!isFirstFormat) throw unreadable(path, 'not a snapshot')
  const state = value.state as EngineState
  const lines = Object.values(state.collections).reduce((count, records) => count + records.length, state.counters.length)
  return { seq: value.seq as number, state, bytes: bytes.length, lines }
}

/**
 * Replaces the snapshot at `path` with one holding `state` as of journal entry `seq`; resolves with its size in
 * bytes and its lines after the header.
 */
export const writeSnapshot = async (
  path: string,
  seq: number,
  state: EngineState,
  shouldSync: boolean,
): Promise<{ bytes: number; lines: number }> => {
  const temporaryPath = `${path}.tmp`
  const handle = await open(temporaryPath, 'w', PRIVATE_FILE_MODE)
  let bytes: number
  let lines: number
  try {
    await tightenOpenFile(handle)
    const collections = Object.entries(state.collections)
    const records = collections.reduce((count, [, items]) => count + items.length, 0)
    const tallies = state.tallies ?? []
    const holds = state.holds ?? []
    const settled = state.settled ?? []
    const writer = createLineWriter(handle)
    const header: SnapshotHeader = {
      format: FORMAT,
      seq,
      records,
      counters: state.counters.length,
      tallies: tallies.length,
      holds: holds.length,
      settled: settled.length,
    }
    await writer.line(JSON.stringify(header))
    for (const [collection, items] of collections) {
      for (const record of items) await writer.line(JSON.stringify({ op: 'put', collection, record }))
    }
    for (const { key, value, expiresAt } of state.counters) {
      await writer.line(JSON.stringify({ op: 'counter', key, value, expiresAt }))
    }
    for (const { key, value, expiresAt } of tallies) await writer.line(JSON.stringify({ op: 'tally', key, value, expiresAt }))
    for (const hold of holds) await writer.line(JSON.stringify({ op: 'hold', hold }))
    for (const { id, expiresAt } of settled) await writer.line(JSON.stringify({ op: 'settled', id, expiresAt }))
    bytes = await writer.end()
    lines = lineTotal(header)
    if (shouldSync) await handle.sync()
  } finally {
    await handle.close()
  }
  await rename(temporaryPath, path)
  if (shouldSync) await syncDirectory(dirname(path))
  return { bytes, lines }
}

/** Removes a temporary snapshot left by a crash during `writeSnapshot`. */
export const removeTemporarySnapshot = (path: string): Promise<void> => rm(`${path}.tmp`, { force: true })
