/**
 * The gateway's PDF text extractor (docs/decisions.md, "No tenant can stall the gateway"): the operator's own, or a
 * pool of worker threads, loaded on the first PDF so a gateway that reads none starts no thread and loads no
 * Node-only code. Where `node:worker_threads` cannot be loaded (workers, edge runtimes) PDFs are read in-process,
 * with a warning once: the page, character and inflated-byte limits still hold there, time and memory do not.
 * `workers: false` asks for in-process reading.
 */

import type { Logger } from '../core/logger'
import { inProcessPdfExtractor, type PdfTextExtractor } from '../engine/plugins/pdf-text'
import type { FileParserOptions } from '../engine/plugins/settings'
import type { FileParserPool } from '../workers/file-parser-pool'

export interface GatewayPdfExtractor {
  extract: PdfTextExtractor
  /** Stops the worker threads, if any were started. */
  close(): Promise<void>
}

export const createPdfExtractor = (options: FileParserOptions | undefined, logger: Logger): GatewayPdfExtractor => {
  if (options?.extractor) return { extract: options.extractor, close: async () => {} }
  if (options?.workers === false) return { extract: inProcessPdfExtractor, close: async () => {} }
  const workers = options?.workers
  let loading: Promise<FileParserPool | undefined> | undefined
  const load = () =>
    (loading ??= import('../workers/file-parser-pool')
      .then(({ createFileParserPool }) => createFileParserPool(workers ?? {}))
      .catch((error: unknown) => {
        logger.warn('worker threads are not available here: PDFs are read in the gateway\'s own thread, without a time or memory limit', { error })
        return undefined
      }))
  return {
    extract: async (pdf, limits, signal) => {
      const pool = await load()
      return pool ? pool.extract(pdf, limits, signal) : inProcessPdfExtractor(pdf, limits, signal)
    },
    close: async () => {
      if (loading) await (await loading)?.close()
    },
  }
}
