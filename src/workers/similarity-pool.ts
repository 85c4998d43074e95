/**
 * The semantic cache's comparison thread (docs/decisions.md, Response cache): one worker thread, started on the
 * first comparison, receives the prompt embedding and its candidates packed as doubles in transferred buffers and
 * answers with the closest. Comparisons wait their turn in the worker's own message queue, bounded by `maxPending`;
 * past it, or past `timeoutMs`, or when the worker dies, a comparison is refused, which the cache treats as a semantic
 * miss (the request runs upstream). A worker that failed is replaced on the next comparison.
 *
 * Node-only (node:worker_threads, which Bun and Deno also provide). The composition root loads it lazily, so hosts
 * without worker threads never import it and compare in-process instead.
 */

import { Worker } from 'node:worker_threads'
import { InternalError, ServiceUnavailableError } from '../core/errors'
import { packVectors, type NearestMatch, type NearestVectorFinder } from '../features/response-cache/nearest'
import type { SimilarityJob, SimilarityReply } from './similarity-worker'

export interface SimilarityPoolOptions {
  /** Comparisons sent to the worker and not yet answered, at most (default 64); one more is refused at once. */
  maxPending?: number
  /** Milliseconds a comparison may take, its wait included (default 2 000); past it the worker is replaced. */
  timeoutMs?: number
  /** Heap of the worker, in MiB (default 64). */
  heapMb?: number
  /** The worker script (default: the one beside this module, built or source). */
  workerUrl?: URL
}

/** What the pool did, for tests and operators' probes. */
export interface SimilarityPoolStats {
  threads: number
  pending: number
  completed: number
  failed: number
}

export interface SimilarityPool {
  findNearest: NearestVectorFinder
  stats(): SimilarityPoolStats
  /** Terminates the worker and refuses what it has not answered. */
  close(): Promise<void>
}

// The built package runs dist/similarity-worker.js, beside the chunk this module is bundled into; tests and
// `npm start` run the TypeScript source through tsx.
const defaultWorkerUrl = () => new URL(`./similarity-worker.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url)

interface Pending {
  resolve(match: NearestMatch | undefined): void
  reject(error: unknown): void
  timer: ReturnType<typeof setTimeout>
}

const ignore = () => {}

export const createSimilarityPool = (options: SimilarityPoolOptions = {}): SimilarityPool => {
  const maxPending = options.maxPending ?? 64
  const timeoutMs = options.timeoutMs ?? 2_000
  const heapMb = options.heapMb ?? 64
  const workerUrl = options.workerUrl ?? defaultWorkerUrl()
  const pending = new Map<number, Pending>()
  let worker: Worker | undefined
  let nextId = 0
  let completed = 0
  let failed = 0
  let isClosed = false

  /** Ends the worker and refuses every comparison it held with `error`. */
  const fail = (error: unknown) => {
    const ended = worker
    worker = undefined
    if (ended) {
      ended.removeAllListeners()
      ended.on('error', ignore)
      void ended.terminate()
    }
    for (const [id, job] of pending) {
      pending.delete(id)
      clearTimeout(job.timer)
      failed++
      job.reject(error)
    }
  }

  const spawn = (): Worker => {
    // The TypeScript source (tests, `npm start`) is loaded through tsx, a dev dependency; the built worker is JavaScript.
    const isSource = workerUrl.pathname.endsWith('.ts')
    const script = isSource ? `import('tsx/esm/api').then(({ tsImport }) => tsImport(${JSON.stringify(workerUrl.href)}, ${JSON.stringify(import.meta.url)}))` : workerUrl
    const started = new Worker(script, {
      ...(isSource ? { eval: true } : {}),
      resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: Math.max(4, Math.min(32, Math.floor(heapMb / 8))), stackSizeMb: 4 },
      stdout: false,
      stderr: false,
    })
    // An idle worker must not keep the host's process alive.
    started.unref()
    started.on('message', (reply: SimilarityReply) => {
      const job = pending.get(reply.id)
      if (!job) return
      pending.delete(reply.id)
      clearTimeout(job.timer)
      completed++
      job.resolve(reply.match)
    })
    started.on('error', (error) => fail(new InternalError('The similarity worker failed', { cause: error })))
    started.on('exit', (code) => fail(new InternalError('The similarity worker failed', { cause: new Error(`worker exited with ${code}`) })))
    return started
  }

  const findNearest: NearestVectorFinder = (query, candidates, threshold) =>
    new Promise((resolve, reject) => {
      if (isClosed) return reject(new ServiceUnavailableError('The similarity worker is shutting down'))
      if (pending.size >= maxPending) {
        failed++
        return reject(new ServiceUnavailableError(`The similarity worker is busy (${pending.size} comparisons waiting)`))
      }
      const vectors = packVectors(query, candidates)
      const id = ++nextId
      const timer = setTimeout(() => fail(new InternalError(`The similarity worker did not answer within ${timeoutMs} ms`)), timeoutMs)
      pending.set(id, { resolve, reject, timer })
      worker ??= spawn()
      // The packed buffers move to the worker: nothing here reads them again.
      worker.postMessage({ id, vectors, threshold } satisfies SimilarityJob, [vectors.query.buffer, vectors.rows.buffer, vectors.indexes.buffer])
    })

  return {
    findNearest,
    stats: () => ({ threads: worker ? 1 : 0, pending: pending.size, completed, failed }),
    async close() {
      isClosed = true
      const ended = worker
      fail(new ServiceUnavailableError('The similarity worker is shutting down'))
      await ended?.terminate()
    },
  }
}
