/**
 * The lock that keeps two processes from writing one on-disk store: `<directory>/LOCK` holds the
 * owner's pid. A lock whose process is gone (crash, kill -9) is taken over.
 */
import { open, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { PRIVATE_FILE_MODE } from './private-files'

const LOCK_FILE = 'LOCK'
// A takeover can race another opener doing the same; a few rounds settle who wins.
const MAX_ATTEMPTS = 3

const errorCode = (error: unknown): unknown => (error as NodeJS.ErrnoException | undefined)?.code

/** Whether a process with this pid exists (ours or another user's). */
export const isProcessAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return errorCode(error) === 'EPERM'
  }
}

const tryCreateLock = async (path: string): Promise<boolean> => {
  let handle
  try {
    handle = await open(path, 'wx', PRIVATE_FILE_MODE)
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false
    throw error
  }
  try {
    await handle.writeFile(String(process.pid))
    await handle.sync()
    await handle.close()
    return true
  } catch (error) {
    await handle.close().catch(() => {})
    await rm(path, { force: true })
    throw error
  }
}

/** The pid in an existing lock file, `undefined` when the file vanished meanwhile. */
const readHolder = async (path: string): Promise<number | undefined> => {
  try {
    return Number((await readFile(path, 'utf8')).trim())
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined
    throw error
  }
}

/** Lock files this process holds or is acquiring, so its own pid in a lock file can be told apart from a stale one. */
const heldByThisProcess = new Set<string>()

const inUseError = (directory: string, pid: number) =>
  new Error(`modelgate: the store at ${directory} is in use by process ${pid}`)

const takeLock = async (directory: string, path: string): Promise<void> => {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    if (await tryCreateLock(path)) return
    const holder = await readHolder(path)
    if (holder === undefined) continue
    if (!Number.isSafeInteger(holder) || holder <= 0) {
      // Unreadable: maybe a crash between creating and writing it, maybe an opener mid-write. Never guess.
      throw new Error(
        `modelgate: the store at ${directory} has an unreadable lock file ${path}; remove it if no process uses the store`,
      )
    }
    // Our own pid in a lock we do not hold comes from an earlier run: containers restart with the same pid.
    if (holder !== process.pid && isProcessAlive(holder)) throw inUseError(directory, holder)
    await rm(path, { force: true })
  }
  throw new Error(`modelgate: could not lock the store at ${directory}; another process keeps taking the lock`)
}

/** Locks `directory` for this process and resolves to the function that unlocks it. */
export const acquireDirectoryLock = async (directory: string): Promise<() => Promise<void>> => {
  const path = join(directory, LOCK_FILE)
  if (heldByThisProcess.has(path)) throw inUseError(directory, process.pid)
  heldByThisProcess.add(path)
  try {
    await takeLock(directory, path)
  } catch (error) {
    heldByThisProcess.delete(path)
    throw error
  }
  return async () => {
    await rm(path, { force: true })
    heldByThisProcess.delete(path)
  }
}
