/**
 * Where the semantic cache compares embeddings (docs/decisions.md, Response cache): on a worker thread
 * (src/workers/similarity-pool.ts) loaded on the first comparison, so a gateway without the semantic cache starts no
 * thread and loads no Node-only code. Where `node:worker_threads` cannot be loaded (edge runtimes) the comparison runs
 * in-process, with a warning once, with the same arithmetic and so the same answer.
 */

import type { Logger } from '../core/logger'
import { inProcessNearest, type NearestVectorFinder } from '../features/response-cache/nearest'
import type { SimilarityPool } from '../workers/similarity-pool'

export interface GatewaySimilarity {
  findNearest: NearestVectorFinder
  /** Stops the worker thread, if one was started. */
  close(): Promise<void>
}

export const createGatewaySimilarity = (logger: Logger, load: () => Promise<SimilarityPool> = async () => (await import('../workers/similarity-pool')).createSimilarityPool()): GatewaySimilarity => {
  let loading: Promise<SimilarityPool | undefined> | undefined
  const pool = () =>
    (loading ??= load().catch((error: unknown) => {
      logger.warn('worker threads are not available here: the semantic cache compares embeddings in the gateway\'s own thread', { error })
      return undefined
    }))
  return {
    findNearest: async (query, candidates, threshold) => ((await pool())?.findNearest ?? inProcessNearest)(query, candidates, threshold),
    close: async () => {
      if (loading) await (await loading)?.close()
    },
  }
}
