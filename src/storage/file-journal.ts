/**
 * The append-only journal of the file driver: JSON Lines, one `{ seq, ...Mutation }` per successful
 * write, numbered so that entries already folded into a snapshot can be skipped on replay.
 */
import { open, readFile, truncate, type FileHandle } from 'node:fs/promises'
import type { Mutation } from './memory-engine'
import { PRIVATE_FILE_MODE, tightenOpenFile } from './private-files'

export type JournalEntry = Mutation & { seq: number }

export interface JournalContents {
  entries: JournalEntry[]
  /** Bytes of complete, valid lines; the file is cut to this length when its tail was torn. */
  size: number
}

const NEWLINE = 0x0a

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const isStringRecord = (value: unknown): boolean =>
  isObject(value) && Object.values(value).every((entry) => typeof entry === 'string')

const isStoredRecord = (value: unknown): boolean =>
  isObject(value) &&
  typeof value.id === 'string' &&
  isObject(value.data) &&
  Number.isSafeInteger(value.version) &&
  isStringRecord(value.indexes) &&
  Array.isArray(value.uniques) &&
  value.uniques.every((key) => typeof key === 'string') &&
  typeof value.sortKey === 'string'

const isJournalEntry = (value: unknown): value is JournalEntry => {
  if (!isObject(value) || !Number.isSafeInteger(value.seq)) return false
  switch (value.op) {
    case 'put':
      return typeof value.collection === 'string' && isStoredRecord(value.record)
    case 'delete':
      return typeof value.collection === 'string' && typeof value.id === 'string'
    case 'counter':
      return typeof value.key === 'string' && Number.isFinite(value.value) && Number.isFinite(value.expiresAt)
    default:
      return false
  }
}

const parseEntry = (line: string): JournalEntry | undefined => {
  try {
    const value: unknown = JSON.parse(line)
    return isJournalEntry(value) ? value : undefined
  } catch {
    return undefined
  }
}

/**
 * Reads the journal at `path` (empty when missing). A crash mid-append leaves a torn last line: an
 * unterminated or unparsable tail is cut off, since its write never resolved. A bad line followed by
 * good ones is corruption and throws rather than silently losing writes.
 */
export const readJournal = async (path: string): Promise<JournalContents> => {
  let bytes: Buffer
  try {
    bytes = await readFile(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], size: 0 }
    throw error
  }

  const entries: JournalEntry[] = []
  let start = 0
  // Splitting bytes on 0x0a is safe: UTF-8 never uses that byte inside a multi-byte character.
  while (start < bytes.length) {
    const end = bytes.indexOf(NEWLINE, start)
    const entry = end === -1 ? undefined : parseEntry(bytes.toString('utf8', start, end))
    if (!entry) {
      const isLastLine = end === -1 || end === bytes.length - 1
      if (!isLastLine) throw new Error(`modelgate: the journal ${path} is corrupt at byte ${start}`)
      await truncate(path, start)
      break
    }
    entries.push(entry)
    start = end + 1
  }
  return { entries, size: start }
}

export interface JournalOptions {
  /** fsync after every append and reset. */
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
  /** Appends entries durably, with one write and one sync; on failure the file is cut back so no partial line remains. */
  append(...entries: JournalEntry[]): Promise<void>
  /** Empties the journal once its entries are safe in a snapshot. */
  reset(): Promise<void>
  close(): Promise<void>
}

/** Opens the journal at `path` for appending (creating it when missing). */
export const openJournal = async (path: string, options: JournalOptions): Promise<Journal> => {
  const handle: FileHandle = await open(path, 'a', PRIVATE_FILE_MODE)
  try {
    await tightenOpenFile(handle)
  } catch (error) {
    await handle.close()
    throw error
  }
  let { size, lineCount } = options
  // Set when a failed append could not be undone: appending after a partial line would corrupt the file.
  let brokenBy: unknown

  const writeFully = async (bytes: Buffer): Promise<void> => {
    let written = 0
    while (written < bytes.length) {
      const { bytesWritten } = await handle.write(bytes, written, bytes.length - written)
      written += bytesWritten
    }
  }

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
        await writeFully(bytes)
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

    async reset() {
      if (brokenBy !== undefined) throw brokenBy
      await handle.truncate(0)
      size = 0
      lineCount = 0
      if (options.shouldSync) await handle.sync()
    },

    async close() {
      await handle.close()
    },
  }
}
