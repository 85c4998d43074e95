/**
 * The document worker thread: reads one untrusted document at a time for the pool (file-parser-pool.ts), a PDF's
 * text or a fetched HTML page's, and answers with it or the limit it went past. Its heap is capped by the pool
 * (resourceLimits) and it is terminated past the time limit, so a hostile document costs this thread, never the
 * gateway's event loop.
 */

import { parentPort, threadId } from 'node:worker_threads'
import { extractPdfText, type PdfTextLimits, type PdfTextOutcome } from '../features/plugins/pdf-text'
import { htmlToText, type PageTextOutcome } from '../features/server-tools/page-text'

export type WorkerTask = { kind: 'pdf'; pdf: Uint8Array; limits: PdfTextLimits } | { kind: 'html'; html: string }
export type WorkerJob = WorkerTask & { id: number }
export type WorkerOutcome = PdfTextOutcome | PageTextOutcome
export interface WorkerReply {
  id: number
  outcome: WorkerOutcome
}

const run = async (task: WorkerTask): Promise<WorkerOutcome> => {
  if (task.kind === 'html') return htmlToText(task.html).then((page) => ({ ok: true as const, page }), () => ({ ok: false as const, problem: 'unreadable' as const }))
  try {
    return { ...(await extractPdfText(task.pdf, task.limits)), threadId }
  } catch {
    return { ok: false, problem: 'unreadable', threadId }
  }
}

parentPort?.on('message', async ({ id, ...task }: WorkerJob) => {
  parentPort!.postMessage({ id, outcome: await run(task as WorkerTask) } satisfies WorkerReply)
})
