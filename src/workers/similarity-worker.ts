/**
 * The similarity worker thread: compares a semantic-cache request's prompt embedding with its candidates' for the
 * pool (similarity-pool.ts), one comparison at a time, so a workspace comparing a thousand long vectors costs this
 * thread, not the gateway's event loop.
 */

import { parentPort, threadId } from 'node:worker_threads'
import { nearestPacked, type NearestMatch, type PackedVectors } from '../features/response-cache/nearest'

export interface SimilarityJob {
  id: number
  vectors: PackedVectors
  threshold: number
}

export interface SimilarityReply {
  id: number
  match: NearestMatch | undefined
  threadId: number
}

parentPort?.on('message', ({ id, vectors, threshold }: SimilarityJob) => {
  parentPort!.postMessage({ id, match: nearestPacked(vectors, threshold), threadId } satisfies SimilarityReply)
})
