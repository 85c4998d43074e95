/**
 * The append-only journal of the file driver: JSON Lines, one `{ seq, ...Mutation }` per successful
 * write, numbered so that entries already folded into a snapshot can be skipped on replay. Mutations that
 * count only together (a hold and what it adds, a batch of settlements) share one `{ seq, op: 'batch', mutations }`
 * line: a crash mid-append tears at most the last line, which replay drops whole, so it never keeps half of them.
 */
import { constants } from 'node:fs'
import { open, rename, rm, truncate, type FileHandle } from 'node:fs/promises'
import { dirname } from 'node:path'
import { isMutation, NEWLINE, parseLine, readLines, writeFully } from './file-lines'
import { syncDirectory } from './file-snapshot'
import type { Mutation } from './memory-engine'
import { PRIVATE_FILE_MODE, tightenOpenFile } from './private-files'

/** Mutations applied all or none: the journal holds them on one line. */
export interface BatchEntry {
  seq: number
  op: 'batch'
  mutations: Mutation[]
}

export type JournalEntry = (Mutation & { seq: number }) | BatchEntry

export interface JournalContents {
  /** Entries read (each was handed to the caller). */
  lineCount: number
  /** Bytes of complete, valid lines; the file is cut to this length when its tail was torn. */
  size: number
}

const isBatchEntry = (value: unknown): value is BatchEntry => {
  const entry = value as Partial<BatchEntry> | null
  return (
    typeof entry === 'object' &&
    entry !== null &&
    entry.op === 'batch' &&
    Array.isArray(entry.mutations) &&
    entry.mutations.length > 0 &&
    entry.mutations.every(isMutation)
  )
}

const parseEntry = (line: string): JournalEntry | undefined => {
  const value = parseLine(line)
  return (isMutation(value) || isBatchEntry(value)) && Number.isSafeInteger((value as Partial<JournalEntry>).seq)
    ? (value as JournalEntry)
    : undefined
}

/** The journal's temporary file while `dropThrough` rewrites it. */
const temporaryPathOf = (path: string) => `${path}.tmp`

/** Removes a temporary journal left by a crash during `dropThrough`: the journal beside it is still whole. */
export const removeTemporaryJournal = (path: string): Promise<void> => rm(temporaryPathOf(path), { force: true })

/**
 * Reads the journal at `path` (empty when missing), handing each entry to `onEntry` in order. It is read piece
 * by piece, whatever its size. A crash mid-append leaves a torn last line: an unterminated or unparsable tail is
 * cut off, since its write never resolved. A bad line followed by good ones is corruption and throws rather than
 * silently losing writes.
 */
export const readJournal = async (
  path: string,
  onEntry: (entry: JournalEntry) => void,
  options: { shouldRepair?: boolean } = {},
): Promise<JournalContents> => {
  let handle: FileHandle
  try {
    handle = await open(path, 'r')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { lineCount: 0, size: 0 }
    throw error
  }
  let lineCount = 0
  let badLine: { offset: number; nextOffset: number } | undefined
  let read
  try {
    read = await readLines(handle, (line, offset, nextOffset) => {
      const entry = parseEntry(line)
      if (!entry) {
        badLine = { offset, nextOffset }
        return false
      }
      onEntry(entry)
      lineCount++
    })
    if (badLine) {
      const { size } = await handle.stat()
      if (badLine.nextOffset !== size) throw new Error(`modelgate: the journal ${path} is corrupt at byte ${badLine.offset}`)
    }
  } finally {
    await handle.close()
  }
  const validSize = badLine?.offset ?? read.tailAt
  // Reading only (`shouldRepair: false`, an import), the torn tail is skipped and left in the file.
  if ((options.shouldRepair ?? true) && (badLine || validSize !== read.size)) await truncate(path, validSize)
  return { lineCount, size: validSize }
}

export interface JournalOptions {
  /** fsync after every append and rewrite. */
  shouldSync: boolean
  /** Current length of the file in bytes (from `readJournal`). */
  size: number
  /** Lines the file already holds. */
  lineCount: number
}

/** The open journal, appended to by one writer at a time. */
export interface Journal {
  readonly lineCount: number
  /** Bytes in the file. */
  readonly size: number
  /**
   * Appends entries durably, in one write and one fsync (a group commit); on failure the file is cut back
   * so no partial line remains, and none of them counts.
   */
  append(...entries: JournalEntry[]): Promise<void>
  /**
   * Drops the entries in the first `offset` bytes, once they are safe in a snapshot, and keeps the ones appended
   * since: those are copied to a new file that replaces the journal in one rename, so a crash leaves either
   * journal whole. Call it between appends.
   */
  dropThrough(offset: number): Promise<void>
  close(): Promise<void>
}

/**
 * Every write of a journal handle goes to the end of the file (O_APPEND), so one cut back after a failed append
 * can take the next append at once; it reads too, since `dropThrough` reads back the entries it keeps.
 */
const APPEND_FLAGS = constants.O_RDWR | constants.O_CREAT | constants.O_APPEND

const openForAppend = async (path: string, extraFlags = 0): Promise<FileHandle> => {
  const handle = await open(path, APPEND_FLAGS | extraFlags, PRIVATE_FILE_MODE)
  try {
    await tightenOpenFile(handle)
  } catch (error) {
    await handle.close()
    throw error
  }
  return handle
}

const readFully = async (handle: FileHandle, from: number, length: number): Promise<Buffer> => {
  const bytes = Buffer.allocUnsafe(length)
  let done = 0
  while (done < length) {
    const { bytesRead } = await handle.read(bytes, done, length - done, from + done)
    if (bytesRead === 0) throw new Error('modelgate: the journal ended before its recorded size')
    done += bytesRead
  }
  return bytes
}

const countLines = (bytes: Buffer): number => {
  let count = 0
  for (let at = bytes.indexOf(NEWLINE); at !== -1; at = bytes.indexOf(NEWLINE, at + 1)) count++
  return count
}

/** Opens the journal at `path` for appending (creating it when missing). */
export const openJournal = async (path: string, options: JournalOptions): Promise<Journal> => {
  let handle = await openForAppend(path)
  let { size, lineCount } = options
  // Set when a failed write could not be undone: appending after a partial line would corrupt the file.
  let brokenBy: unknown

  return {
    get lineCount() {
      return lineCount
    },

    get size() {
      return size
    },

    async append(...entries) {
      if (brokenBy !== undefined) throw brokenBy
      const bytes = Buffer.from(entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''), 'utf8')
      try {
        await writeFully(handle, bytes)
        if (options.shouldSync) await handle.sync()
      } catch (error) {
        try {
          await handle.truncate(size)
        } catch {
          brokenBy = error
        }
        throw error
      }
      size += bytes.length
      lineCount += entries.length
    },

    async dropThrough(offset) {
      if (brokenBy !== undefined) throw brokenBy
      if (offset >= size) {
        await handle.truncate(0)
        size = 0
        lineCount = 0
        if (options.shouldSync) await handle.sync()
        return
      }
      const kept = await readFully(handle, offset, size - offset)
      const temporaryPath = temporaryPathOf(path)
      const next = await openForAppend(temporaryPath, constants.O_TRUNC)
      try {
        await writeFully(next, kept)
        if (options.shouldSync) await next.sync()
        await rename(temporaryPath, path)
      } catch (error) {
        await next.close()
        await rm(temporaryPath, { force: true })
        throw error
      }
      // The handle stays on the file it wrote, now named as the journal; appends go on from its end.
      const previous = handle
      handle = next
      size = kept.length
      lineCount = countLines(kept)
      await previous.close().catch(() => {})
      if (options.shouldSync) await syncDirectory(dirname(path))
    },

    async close() {
      await handle.close()
    },
  }
}
