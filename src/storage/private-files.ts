/**
 * Owner-only permissions for what modelgate keeps on disk: the embedded store holds key hashes,
 * sealed provider keys and conversations, and the development key file opens those keys. Files are
 * 0600 and directories 0700; ones left with wider permissions (by an older version, or by hand) are
 * tightened when opened.
 */
import { chmod, mkdir, stat, type FileHandle } from 'node:fs/promises'

export const PRIVATE_FILE_MODE = 0o600
export const PRIVATE_DIRECTORY_MODE = 0o700
const GROUP_AND_OTHER = 0o077

const withoutGroupAndOther = (mode: number) => mode & 0o777 & ~GROUP_AND_OTHER

/** Creates `directory` (and missing parents) owner-only, and takes group and other access away from an existing one. */
export const ensurePrivateDirectory = async (directory: string): Promise<void> => {
  await mkdir(directory, { recursive: true, mode: PRIVATE_DIRECTORY_MODE })
  const { mode } = await stat(directory)
  if ((mode & GROUP_AND_OTHER) !== 0) await chmod(directory, withoutGroupAndOther(mode))
}

/** Takes group and other access away from the file at `path`, if it exists. */
export const tightenFile = async (path: string): Promise<void> => {
  let mode: number
  try {
    mode = (await stat(path)).mode
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
    throw error
  }
  if ((mode & GROUP_AND_OTHER) !== 0) await chmod(path, withoutGroupAndOther(mode))
}

/** The same for an open file: an existing file keeps its old mode whatever mode `open` was given. */
export const tightenOpenFile = async (handle: FileHandle): Promise<void> => {
  const { mode } = await handle.stat()
  if ((mode & GROUP_AND_OTHER) !== 0) await handle.chmod(withoutGroupAndOther(mode))
}
