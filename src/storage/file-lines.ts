/**
 * What the embedded store's two files share: both are JSON Lines of mutations, read piece by piece. A file is
 * never read or written as one string, since V8 caps a string at about 512 MiB and Node's `readFile` a file at
 * 2 GiB: a store of a few hundred thousand usage records passes the first (docs/decisions.md, "The embedded
 * store streams its files").
 */
import type { FileHandle } from 'node:fs/promises'
import type { Mutation } from './memory-engine'

export const NEWLINE = 0x0a
/** Bytes read per call; a longer line grows the buffer to fit it. */
const READ_CHUNK = 1024 * 1024

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

const isCounterChange = (value: unknown): boolean =>
  isObject(value) && typeof value.key === 'string' && Number.isFinite(value.amount) && Number.isSafeInteger(value.ttlMs)

const isHoldEntry = (value: unknown): boolean =>
  isObject(value) &&
  typeof value.id === 'string' &&
  typeof value.owner === 'string' &&
  Number.isFinite(value.expiresAt) &&
  Array.isArray(value.changes) &&
  value.changes.every(isCounterChange)

/** A parsed line that describes a mutation (other fields, such as a journal entry's `seq`, are the caller's to check). */
export const isMutation = (value: unknown): value is Mutation => {
  if (!isObject(value)) return false
  switch (value.op) {
    case 'put':
      return typeof value.collection === 'string' && isStoredRecord(value.record)
    case 'delete':
      return typeof value.collection === 'string' && typeof value.id === 'string'
    case 'counter':
    case 'tally':
      return typeof value.key === 'string' && Number.isFinite(value.value) && Number.isFinite(value.expiresAt)
    case 'hold':
      return isHoldEntry(value.hold)
    case 'unhold':
      return typeof value.id === 'string'
    case 'settled':
      return typeof value.id === 'string' && Number.isFinite(value.expiresAt)
    default:
      return false
  }
}

/** `JSON.parse` that answers `undefined` for a line that is not JSON. */
export const parseLine = (line: string): unknown => {
  try {
    return JSON.parse(line)
  } catch {
    return undefined
  }
}

export interface LinesRead {
  /** Bytes read: the file's length, unless `onLine` stopped the reading. */
  size: number
  /** Offset after the last line handed to `onLine`: where an unterminated tail starts (`size` when there is none). */
  tailAt: number
}

/**
 * Calls `onLine` with each newline-terminated line of the open file, without its newline, with the offsets where
 * it starts and where the next line starts; `onLine` answers `false` to stop early. Splitting on 0x0a is safe:
 * UTF-8 never uses that byte inside a multi-byte character.
 */
export const readLines = async (
  handle: FileHandle,
  onLine: (line: string, offset: number, nextOffset: number) => boolean | void,
): Promise<LinesRead> => {
  let buffer = Buffer.allocUnsafe(READ_CHUNK)
  /** Bytes of `buffer` holding the file from `bufferAt` on: the start of a line not yet ended. */
  let filled = 0
  let bufferAt = 0
  let position = 0
  for (;;) {
    if (filled === buffer.length) {
      const larger = Buffer.allocUnsafe(buffer.length * 2)
      buffer.copy(larger, 0, 0, filled)
      buffer = larger
    }
    const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, position)
    if (bytesRead === 0) return { size: position, tailAt: bufferAt }
    position += bytesRead
    const end = filled + bytesRead
    const read = buffer.subarray(0, end)
    let start = 0
    // Only the new bytes can hold a newline: the kept ones are the start of an unended line.
    let newline = read.indexOf(NEWLINE, filled)
    while (newline !== -1) {
      if (onLine(read.toString('utf8', start, newline), bufferAt + start, bufferAt + newline + 1) === false) {
        return { size: position, tailAt: bufferAt + newline + 1 }
      }
      start = newline + 1
      newline = read.indexOf(NEWLINE, start)
    }
    buffer.copy(buffer, 0, start, end)
    filled = end - start
    bufferAt += start
  }
}

/** Writes all of `bytes` at the file's position, however many calls the system takes. */
export const writeFully = async (handle: FileHandle, bytes: Buffer): Promise<void> => {
  let done = 0
  while (done < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, done, bytes.length - done)
    done += bytesWritten
  }
}

/** Bytes written per call when a file is written piece by piece. */
const WRITE_CHUNK = 1024 * 1024

/**
 * Writes lines to an open file in pieces of about `WRITE_CHUNK` bytes, each awaited, so writing a large state
 * lets the event loop run between pieces instead of building one string of all of it.
 */
export const createLineWriter = (handle: FileHandle) => {
  let parts: string[] = []
  let pending = 0
  let written = 0

  const flush = async (): Promise<void> => {
    if (parts.length === 0) return
    const bytes = Buffer.from(parts.join(''), 'utf8')
    parts = []
    pending = 0
    await writeFully(handle, bytes)
    written += bytes.length
  }

  return {
    /** Queues one line (its newline is added); writes the queue once it holds a piece's worth. */
    async line(text: string): Promise<void> {
      parts.push(text, '\n')
      // Characters, not bytes: a piece of non-ASCII text is up to three times larger, which is still small.
      pending += text.length + 1
      if (pending >= WRITE_CHUNK) await flush()
    },
    /** Writes what is queued; resolves with the bytes written in all. */
    async end(): Promise<number> {
      await flush()
      return written
    },
  }
}
