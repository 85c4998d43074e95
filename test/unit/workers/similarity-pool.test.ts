/**
 * The semantic cache's comparison thread: the same best match and similarity as the in-process comparison, to the
 * last bit, computed on the worker; a worker that dies, hangs or is flooded refuses its comparisons cleanly and is
 * replaced; a host without worker threads compares in-process.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { InternalError, ServiceUnavailableError } from '../../../src/core/errors'
import { inProcessNearest } from '../../../src/features/response-cache/nearest'
import { createGatewaySimilarity } from '../../../src/gateway/similarity'
import { createSimilarityPool, type SimilarityPool } from '../../../src/workers/similarity-pool'
import { createRecordingLogger } from '../../helpers/logger'

const SILENT_WORKER = new URL('../../fixtures/workers/silent-worker.mjs', import.meta.url)
const CRASHING_WORKER = new URL('../../fixtures/workers/crashing-worker.mjs', import.meta.url)

let pool: SimilarityPool | undefined
afterEach(async () => {
  await pool?.close()
  pool = undefined
})

/** Deterministic pseudo-random vectors, so a failure can be replayed. */
const vectors = (count: number, dimension: number, seed: number): number[][] => {
  let state = seed
  const next = () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 30 - 1
  }
  return Array.from({ length: count }, () => Array.from({ length: dimension }, next))
}

/** The comparison as the semantic cache made it on the main thread before it moved to a worker: the reference. */
const referenceNearest = (query: number[], candidates: number[][], threshold: number) => {
  let best: { index: number; similarity: number } | undefined
  candidates.forEach((candidate, index) => {
    if (candidate.length !== query.length) return
    let dot = 0
    let queryNorm = 0
    let candidateNorm = 0
    for (let at = 0; at < query.length; at++) {
      dot += query[at]! * candidate[at]!
      queryNorm += query[at]! * query[at]!
      candidateNorm += candidate[at]! * candidate[at]!
    }
    const similarity = queryNorm === 0 || candidateNorm === 0 ? 0 : dot / Math.sqrt(queryNorm * candidateNorm)
    if (similarity >= threshold && (!best || similarity > best.similarity)) best = { index, similarity }
  })
  return best
}

describe('similarity pool', () => {
  it('answers exactly as the main-thread comparison did, for many random sets', async () => {
    pool = createSimilarityPool()
    for (let seed = 1; seed <= 20; seed++) {
      const [query, ...candidates] = vectors(60, 64, seed)
      // Threshold -1 lets every candidate compete, so the best is always found and compared to the last bit.
      const found = await pool.findNearest(query!, candidates, -1)
      expect(found).toEqual(referenceNearest(query!, candidates, -1))
      expect(found?.similarity).toBe(referenceNearest(query!, candidates, -1)?.similarity)
    }
  })

  it('finds the same best match and similarity as the in-process comparison, on its worker thread', async () => {
    pool = createSimilarityPool()
    const [query] = vectors(1, 256, 7)
    // A near copy of the query hides among unrelated vectors and one of another dimension, which is skipped.
    const candidates = [...vectors(40, 256, 11), [1, 2, 3], query!.map((value, index) => value + (index % 3 === 0 ? 0.05 : 0)), ...vectors(40, 256, 13)]
    const expected = await inProcessNearest(query!, candidates, 0.5)
    expect(expected?.index).toBe(41)
    expect(await pool.findNearest(query!, candidates, 0.5)).toEqual(expected)
    expect(pool.stats()).toEqual({ threads: 1, pending: 0, completed: 1, failed: 0 })
    // Below the threshold nothing answers.
    expect(await pool.findNearest(query!, vectors(20, 256, 17), 0.9)).toBeUndefined()
    expect(pool.stats().completed).toBe(2)
  })

  it('keeps the first of equally similar candidates, as the in-process comparison does', async () => {
    pool = createSimilarityPool()
    expect(await pool.findNearest([1, 0], [[0, 1], [2, 0], [3, 0]], 0.9)).toEqual({ index: 1, similarity: 1 })
  })

  it('refuses the comparisons of a worker that dies, and replaces it for the next', async () => {
    pool = createSimilarityPool({ workerUrl: CRASHING_WORKER })
    await expect(pool.findNearest([1, 0], [[1, 0]], 0.5)).rejects.toBeInstanceOf(InternalError)
    expect(pool.stats()).toEqual({ threads: 0, pending: 0, completed: 0, failed: 1 })
    await expect(pool.findNearest([1, 0], [[1, 0]], 0.5)).rejects.toBeInstanceOf(InternalError)
    expect(pool.stats().failed).toBe(2)
  })

  it('refuses a comparison its worker does not answer in time, and one past the pending limit', async () => {
    pool = createSimilarityPool({ workerUrl: SILENT_WORKER, timeoutMs: 200, maxPending: 1 })
    const hanging = pool.findNearest([1, 0], [[1, 0]], 0.5)
    await expect(pool.findNearest([1, 0], [[1, 0]], 0.5)).rejects.toBeInstanceOf(ServiceUnavailableError)
    await expect(hanging).rejects.toThrow('did not answer within 200 ms')
    expect(pool.stats()).toEqual({ threads: 0, pending: 0, completed: 0, failed: 2 })
  })

  it('refuses what is pending when it closes', async () => {
    pool = createSimilarityPool({ workerUrl: SILENT_WORKER })
    const refused = expect(pool.findNearest([1, 0], [[1, 0]], 0.5)).rejects.toBeInstanceOf(ServiceUnavailableError)
    await pool.close()
    await refused
    await expect(pool.findNearest([1, 0], [[1, 0]], 0.5)).rejects.toBeInstanceOf(ServiceUnavailableError)
  })
})

describe('the gateway\'s similarity', () => {
  it('compares in-process, with one warning, where worker threads cannot be loaded', async () => {
    const recording = createRecordingLogger()
    const similarity = createGatewaySimilarity(recording.logger, () => Promise.reject(new Error('no node:worker_threads here')))
    const candidates = vectors(10, 32, 3)
    const expected = await inProcessNearest(candidates[4]!, candidates, 0.5)
    expect(await similarity.findNearest(candidates[4]!, candidates, 0.5)).toEqual(expected)
    expect(await similarity.findNearest(candidates[4]!, candidates, 0.5)).toEqual(expected)
    expect(recording.entries.filter((entry) => entry.level === 'warn')).toHaveLength(1)
    await similarity.close()
  })

  it('starts no worker until the first comparison', async () => {
    let started = 0
    const similarity = createGatewaySimilarity(createRecordingLogger().logger, async () => {
      started++
      return (pool = createSimilarityPool())
    })
    await similarity.close()
    expect(started).toBe(0)
    expect(await similarity.findNearest([1, 0], [[0, 1], [1, 0]], 0.5)).toEqual({ index: 1, similarity: 1 })
    expect(started).toBe(1)
    expect(pool!.stats().completed).toBe(1)
  })
})
