/**
 * A bounded pool of worker threads that read untrusted documents: PDFs for the file-parser plugin, fetched HTML
 * pages for `service:web_fetch` (docs/decisions.md, "No tenant can stall the gateway"). Each worker's heap is capped (`resourceLimits`); a PDF that takes longer than its time limit
 * has its worker terminated; a worker that runs out of heap dies alone. When every worker is busy a PDF waits in a
 * short queue; past the queue's length, or its wait, it is refused with 503 and `Retry-After`, so a burst of
 * hostile files sheds load instead of piling up in memory.
 *
 * Node-only (node:worker_threads, which Bun and Deno also provide). The composition root loads it lazily, so hosts
 * without worker threads never import it and read PDFs in-process instead.
 */

import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { InternalError, ServiceUnavailableError } from '../core/errors'
import type { PdfTextExtractor, PdfTextOutcome } from '../features/plugins/pdf-text'
import type { PageTextOutcome, PageTextReader } from '../features/server-tools/page-text'
import type { WorkerJob, WorkerOutcome, WorkerReply, WorkerTask } from './file-parser-worker'

export interface FileParserPoolOptions {
  /** Worker threads at most (default: the cores less one, between 1 and 4). */
  threads?: number
  /** Heap of one worker, in MiB (default 128): a PDF that needs more is refused. */
  heapMb?: number
  /** PDFs waiting for a worker at most (default 4 per thread); one more is refused with 503 at once. */
  maxQueued?: number
  /** Milliseconds a PDF waits for a worker at most (default 5 000); then 503. */
  queueTimeoutMs?: number
  /** PDFs one worker reads before it is replaced, so what pdf.js keeps between files is let go (default 50). */
  jobsPerWorker?: number
  /** Milliseconds reading one HTML page may take (default 10 000); past it its worker is stopped. */
  pageTimeoutMs?: number
  /** The worker script (default: the one beside this module, built or source). */
  workerUrl?: URL
}

/** What the pool is doing, for tests and for operators' probes. */
export interface FileParserPoolStats {
  threads: number
  busy: number
  queued: number
  completed: number
  refused: number
}

export interface FileParserPool {
  extract: PdfTextExtractor
  /** A fetched HTML page's text (linkedom and Readability), on the same workers. */
  readPageText: PageTextReader
  stats(): FileParserPoolStats
  /** Terminates every worker and refuses what is queued. */
  close(): Promise<void>
}

/** Seconds a client refused for a full pool is told to wait. */
export const FILE_PARSER_RETRY_AFTER_SECONDS = 5

// The built package runs dist/file-parser-worker.js, beside the chunk this module is bundled into; tests and
// `npm start` run the TypeScript source through tsx.
const defaultWorkerUrl = () => {
  const isSource = import.meta.url.endsWith('.ts')
  return new URL(`./file-parser-worker.${isSource ? 'ts' : 'js'}`, import.meta.url)
}

interface Slot {
  worker: Worker
  job: Job | undefined
  jobs: number
  /** Ends the PDF being read with `error`, and the worker with it. */
  stop?: (error: unknown) => void
}

interface Job {
  task: WorkerTask
  transfer: ArrayBuffer[]
  timeoutMs: number
  signal: AbortSignal
  resolve(outcome: WorkerOutcome): void
  reject(error: unknown): void
  waiting?: ReturnType<typeof setTimeout>
  dequeued?: () => void
}

const ignore = () => {}

/** Drops every listener but the one that keeps a late error (an out-of-memory death while terminating) harmless. */
const quiet = (worker: Worker) => {
  worker.removeAllListeners()
  worker.on('error', ignore)
}

const overloaded = (why: string) =>
  new ServiceUnavailableError(`The gateway's document readers are busy (${why}); retry in ${FILE_PARSER_RETRY_AFTER_SECONDS} s`, {
    headers: { 'retry-after': String(FILE_PARSER_RETRY_AFTER_SECONDS) },
  })

/** Starts no thread until the first PDF arrives; threads are created as PDFs need them, up to `threads`. */
export const createFileParserPool = (options: FileParserPoolOptions = {}): FileParserPool => {
  const threads = options.threads ?? Math.min(4, Math.max(1, availableParallelism() - 1))
  const heapMb = options.heapMb ?? 128
  const maxQueued = options.maxQueued ?? threads * 4
  const queueTimeoutMs = options.queueTimeoutMs ?? 5_000
  const jobsPerWorker = options.jobsPerWorker ?? 50
  const pageTimeoutMs = options.pageTimeoutMs ?? 10_000
  const workerUrl = options.workerUrl ?? defaultWorkerUrl()
  const slots: Slot[] = []
  const queue: Job[] = []
  let nextId = 0
  let completed = 0
  let refused = 0
  let isClosed = false

  const spawn = (): Slot => {
    // The TypeScript source (tests, `npm start`) is loaded through tsx, a dev dependency; the built worker is JavaScript.
    const isSource = workerUrl.pathname.endsWith('.ts')
    const script = isSource ? `import('tsx/esm/api').then(({ tsImport }) => tsImport(${JSON.stringify(workerUrl.href)}, ${JSON.stringify(import.meta.url)}))` : workerUrl
    const worker = new Worker(script, {
      ...(isSource ? { eval: true } : {}),
      resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: Math.max(4, Math.min(32, Math.floor(heapMb / 8))), stackSizeMb: 4 },
      stdout: false,
      stderr: false,
    })
    // An idle worker must not keep the host's process alive.
    worker.unref()
    // A worker's error with no listener would end the gateway's process; a run listens for it while it lasts.
    worker.on('error', ignore)
    const slot: Slot = { worker, job: undefined, jobs: 0 }
    slots.push(slot)
    return slot
  }

  const retire = (slot: Slot) => {
    const index = slots.indexOf(slot)
    if (index >= 0) slots.splice(index, 1)
    quiet(slot.worker)
    void slot.worker.terminate()
  }

  const pump = () => {
    while (queue.length > 0 && !isClosed) {
      const slot = slots.find((candidate) => !candidate.job) ?? (slots.length < threads ? spawn() : undefined)
      if (!slot) return
      const job = queue.shift()!
      clearTimeout(job.waiting)
      job.dequeued?.()
      run(slot, job)
    }
  }

  const run = (slot: Slot, job: Job) => {
    const id = ++nextId
    slot.job = job
    slot.jobs++
    let isSettled = false
    const finish = (settle: () => void, isWorkerSpent: boolean) => {
      if (isSettled) return
      isSettled = true
      clearTimeout(timer)
      job.signal.removeEventListener('abort', onAbort)
      slot.worker.off('message', onMessage)
      slot.worker.off('error', onError)
      slot.worker.off('exit', onExit)
      slot.job = undefined
      completed++
      if (isWorkerSpent || slot.jobs >= jobsPerWorker) retire(slot)
      settle()
      pump()
    }
    const onMessage = (reply: WorkerReply) => {
      if (reply.id === id) finish(() => job.resolve(reply.outcome), false)
    }
    const onError = (error: Error & { code?: string }) => {
      // A worker past its heap limit dies with ERR_WORKER_OUT_OF_MEMORY: the PDF needed more than it may have.
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') finish(() => job.resolve({ ok: false, limit: 'memory', found: heapMb }), true)
      else finish(() => job.reject(new InternalError('The file parser failed', { cause: error })), true)
    }
    const onExit = (code: number) => finish(() => job.reject(new InternalError('The file parser failed', { cause: new Error(`worker exited with ${code}`) })), true)
    const onAbort = () => finish(() => job.reject(job.signal.reason), true)
    slot.stop = (error) => finish(() => job.reject(error), true)
    const timer = setTimeout(() => finish(() => job.resolve({ ok: false, limit: 'time' }), true), job.timeoutMs)
    slot.worker.on('message', onMessage)
    slot.worker.on('error', onError)
    slot.worker.on('exit', onExit)
    job.signal.addEventListener('abort', onAbort, { once: true })
    // A PDF's buffer moves to the worker: the caller has read its size already.
    slot.worker.postMessage({ id, ...job.task } satisfies WorkerJob, job.transfer)
  }

  const submit = (task: WorkerTask, transfer: ArrayBuffer[], timeoutMs: number, signal: AbortSignal) =>
    new Promise<WorkerOutcome>((resolve, reject) => {
      if (isClosed) return reject(overloaded('it is shutting down'))
      if (signal.aborted) return reject(signal.reason)
      const job: Job = { task, transfer, timeoutMs, signal, resolve, reject }
      const slot = slots.find((candidate) => !candidate.job) ?? (slots.length < threads ? spawn() : undefined)
      if (slot) return run(slot, job)
      if (queue.length >= maxQueued) {
        refused++
        return reject(overloaded(`${threads} document${threads === 1 ? '' : 's'} being read and ${queue.length} waiting`))
      }
      const leave = () => {
        const index = queue.indexOf(job)
        if (index >= 0) queue.splice(index, 1)
        clearTimeout(job.waiting)
        signal.removeEventListener('abort', onAbort)
      }
      const onAbort = () => {
        leave()
        reject(signal.reason)
      }
      job.waiting = setTimeout(() => {
        leave()
        refused++
        reject(overloaded(`no worker was free within ${queueTimeoutMs / 1000} s`))
      }, queueTimeoutMs)
      signal.addEventListener('abort', onAbort, { once: true })
      // Once a worker takes it, the run's own abort handling applies.
      job.dequeued = () => signal.removeEventListener('abort', onAbort)
      queue.push(job)
    })

  const extract: PdfTextExtractor = async (pdf, limits, signal) => {
    // A view of a larger buffer is copied, so only its own bytes travel.
    const own = pdf.byteOffset === 0 && pdf.byteLength === pdf.buffer.byteLength ? pdf : pdf.slice()
    return (await submit({ kind: 'pdf', pdf: own, limits }, [own.buffer as ArrayBuffer], limits.timeoutMs, signal)) as PdfTextOutcome
  }

  const readPageText: PageTextReader = async (html, signal) => (await submit({ kind: 'html', html }, [], pageTimeoutMs, signal)) as PageTextOutcome

  return {
    extract,
    readPageText,
    stats: () => ({ threads: slots.length, busy: slots.filter((slot) => slot.job).length, queued: queue.length, completed, refused }),
    async close() {
      isClosed = true
      for (const job of queue.splice(0)) {
        clearTimeout(job.waiting)
        job.dequeued?.()
        job.reject(overloaded('it is shutting down'))
      }
      // A PDF being read is refused as the queued ones are, not reported as a failed worker.
      for (const slot of [...slots]) if (slot.job) slot.stop?.(overloaded('it is shutting down'))
      await Promise.all(slots.splice(0).map((slot) => {
        quiet(slot.worker)
        return slot.worker.terminate()
      }))
    },
  }
}
