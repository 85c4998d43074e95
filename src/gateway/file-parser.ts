/**
 * The gateway's readers of untrusted documents (docs/decisions.md, "No tenant can stall the gateway"): PDFs (or the
 * operator's own extractor) and fetched HTML pages, on a pool of worker threads loaded on the first document, so a
 * gateway that reads none starts no thread and loads no Node-only code. Where `node:worker_threads` cannot be loaded (workers, edge runtimes) PDFs are read in-process,
 * with a warning once: the page, character and inflated-byte limits still hold there, time and memory do not.
 * `workers: false` asks for in-process reading.
 */

import type { Logger } from '../core/logger'
import { inProcessPdfExtractor, type PdfTextExtractor } from '../features/plugins/pdf-text'
import type { FileParserOptions } from '../features/plugins/settings'
import { inProcessPageText, type PageTextReader } from '../features/server-tools/page-text'
import type { FileParserPool } from '../workers/file-parser-pool'

export interface GatewayDocumentReaders {
  extract: PdfTextExtractor
  readPageText: PageTextReader
  /** Stops the worker threads, if any were started. */
  close(): Promise<void>
}

/** The PDF extractor and the HTML page reader, both on one worker pool unless the operator said otherwise. */
export const createDocumentReaders = (options: FileParserOptions | undefined, logger: Logger): GatewayDocumentReaders => {
  if (options?.workers === false) return { extract: options.extractor ?? inProcessPdfExtractor, readPageText: inProcessPageText, close: async () => {} }
  const workers = options?.workers
  let loading: Promise<FileParserPool | undefined> | undefined
  const load = () =>
    (loading ??= import('../workers/file-parser-pool')
      .then(({ createFileParserPool }) => createFileParserPool(workers ?? {}))
      .catch((error: unknown) => {
        logger.warn('worker threads are not available here: PDFs and fetched pages are read in the gateway\'s own thread, without a time or memory limit', { error })
        return undefined
      }))
  return {
    extract:
      options?.extractor ??
      (async (pdf, limits, signal) => {
        const pool = await load()
        return pool ? pool.extract(pdf, limits, signal) : inProcessPdfExtractor(pdf, limits, signal)
      }),
    readPageText: async (html, signal) => {
      const pool = await load()
      return pool ? pool.readPageText(html, signal) : inProcessPageText(html, signal)
    },
    close: async () => {
      if (loading) await (await loading)?.close()
    },
  }
}
