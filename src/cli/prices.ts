/**
 * The runner's price source: `priceSource` is a file path or an HTTPS URL. A URL is reloaded on its
 * interval (`priceRefreshSeconds`, default an hour); a file when it changes on disk. Both reload on SIGHUP
 * (docs/interface.md, "Model catalog and prices").
 */

import { watch, type FSWatcher } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { basename, dirname, resolve } from 'node:path'
import { PRICE_DOCUMENT_MAX_BYTES, PriceSourceError, type PriceSourceOptions } from '../engine/price-refresh'

/** Whether the setting names a URL rather than a file. */
export const isUrlSource = (source: string): boolean => /^[a-z][a-z0-9+.-]*:\/\//i.test(source)

/** Reads a price document from disk: the same size cap as a URL's, and errors that name the problem, not the content. */
export const readPriceFile = async (path: string): Promise<unknown> => {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    throw new PriceSourceError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`)
  }
  if (Buffer.byteLength(text) > PRICE_DOCUMENT_MAX_BYTES) throw new PriceSourceError(`${path} is larger than ${PRICE_DOCUMENT_MAX_BYTES} bytes`)
  try {
    return JSON.parse(text)
  } catch {
    throw new PriceSourceError(`${path} is not valid JSON`)
  }
}

/** `createGateway`'s `priceSource` for the runner's settings. */
export const priceSourceOptions = (source: string, refreshSeconds: number | undefined): PriceSourceOptions => {
  if (isUrlSource(source)) return { url: source, ...(refreshSeconds === undefined ? {} : { refreshSeconds }) }
  const path = resolve(source)
  return { load: () => readPriceFile(path), label: `file ${path}`, refreshSeconds: refreshSeconds ?? false }
}

// Editors save by writing a new file and renaming it over the old one, which a watch on the file itself would
// lose track of: the directory is watched, and the events settle for a moment before one reload.
const SETTLE_MS = 200

/** Calls `onChange` after the file at `path` is written, replaced or created; returns the function that stops watching. */
export const watchPriceFile = (path: string, onChange: () => void): (() => void) => {
  const file = basename(resolve(path))
  let timer: ReturnType<typeof setTimeout> | undefined
  let watcher: FSWatcher
  try {
    watcher = watch(dirname(resolve(path)), (_event, name) => {
      if (name !== null && name !== file) return
      clearTimeout(timer)
      timer = setTimeout(onChange, SETTLE_MS)
    })
  } catch {
    // No watching on this file system: SIGHUP still reloads.
    return () => {}
  }
  watcher.unref()
  return () => {
    clearTimeout(timer)
    watcher.close()
  }
}
