/**
 * The file-parser worker thread: reads one PDF at a time for the pool (file-parser-pool.ts) and answers with its
 * text or the limit it went past. Its heap is capped by the pool (resourceLimits) and it is terminated past the
 * time limit, so a PDF bomb costs this thread, never the gateway's event loop.
 */

import { parentPort, threadId } from 'node:worker_threads'
import { extractPdfText, type PdfTextLimits, type PdfTextOutcome } from '../engine/plugins/pdf-text'

export interface FileParserJob {
  id: number
  pdf: Uint8Array
  limits: PdfTextLimits
}

export interface FileParserReply {
  id: number
  outcome: PdfTextOutcome
}

parentPort?.on('message', async ({ id, pdf, limits }: FileParserJob) => {
  let outcome: PdfTextOutcome
  try {
    outcome = { ...(await extractPdfText(pdf, limits)), threadId }
  } catch {
    outcome = { ok: false, problem: 'unreadable', threadId }
  }
  parentPort!.postMessage({ id, outcome } satisfies FileParserReply)
})
