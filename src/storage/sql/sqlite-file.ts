/**
 * The SQLite file on disk, owner-only: it holds key hashes, sealed provider keys and conversations, as the embedded
 * file store did (src/storage/private-files.ts). SQLite gives its `-wal` and `-shm` files the database file's
 * permissions, so a database file created 0600 keeps all three private.
 */
import { mkdir, open } from 'node:fs/promises'
import { dirname } from 'node:path'
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE, tightenFile } from '../private-files'

/** Creates the file's directory (owner-only when it creates it) and the file (0600) when missing; tightens a wider one. */
export const prepareDatabaseFile = async (path: string): Promise<void> => {
  // A directory that exists is left as it is: it may be anyone's (the working directory, /var/lib).
  await mkdir(dirname(path), { recursive: true, mode: PRIVATE_DIRECTORY_MODE })
  const handle = await open(path, 'a', PRIVATE_FILE_MODE)
  await handle.close()
  await Promise.all([path, `${path}-wal`, `${path}-shm`].map((file) => tightenFile(file)))
}
