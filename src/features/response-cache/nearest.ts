/**
 * The semantic cache's comparison (docs/decisions.md, Response cache): a request's prompt embedding against the
 * candidates' embeddings, cosine similarity in doubles, the most similar at or above the threshold winning (the first
 * of equals). Pure, so the gateway runs it on a worker thread (src/workers/similarity-worker.ts) and, where worker
 * threads are unavailable, in-process with the same arithmetic and so the same answer.
 */

/** The best candidate: its position among the candidates and its similarity. */
export interface NearestMatch {
  index: number
  similarity: number
}

/**
 * Finds the candidate closest to `query` at or above `threshold`; candidates of another dimension are skipped.
 * Resolves with `undefined` when none qualifies.
 */
export type NearestVectorFinder = (query: readonly number[], candidates: readonly (readonly number[])[], threshold: number) => Promise<NearestMatch | undefined>

/**
 * The query and the candidates of its dimension, packed as doubles (so every value stays what the store held) in
 * one buffer: a compact, transferable form for a worker. `indexes` maps each packed row back to its candidate.
 */
export interface PackedVectors {
  query: Float64Array<ArrayBuffer>
  rows: Float64Array<ArrayBuffer>
  indexes: Int32Array<ArrayBuffer>
}

export const packVectors = (query: readonly number[], candidates: readonly (readonly number[])[]): PackedVectors => {
  const dimension = query.length
  const indexes: number[] = []
  for (let index = 0; index < candidates.length; index++) if (candidates[index]!.length === dimension) indexes.push(index)
  const rows = new Float64Array(indexes.length * dimension)
  indexes.forEach((candidate, row) => rows.set(candidates[candidate]!, row * dimension))
  return { query: Float64Array.from(query), rows, indexes: Int32Array.from(indexes) }
}

/** The closest packed row at or above `threshold`, as its candidate's index. */
export const nearestPacked = ({ query, rows, indexes }: PackedVectors, threshold: number): NearestMatch | undefined => {
  const dimension = query.length
  let best: NearestMatch | undefined
  for (let row = 0; row < indexes.length; row++) {
    const offset = row * dimension
    let dot = 0
    let queryNorm = 0
    let rowNorm = 0
    for (let index = 0; index < dimension; index++) {
      const left = query[index]!
      const right = rows[offset + index]!
      dot += left * right
      queryNorm += left * left
      rowNorm += right * right
    }
    const similarity = queryNorm === 0 || rowNorm === 0 ? 0 : dot / Math.sqrt(queryNorm * rowNorm)
    if (similarity >= threshold && (!best || similarity > best.similarity)) best = { index: indexes[row]!, similarity }
  }
  return best
}

/** The comparison on the calling thread: for hosts without worker threads. */
export const inProcessNearest: NearestVectorFinder = async (query, candidates, threshold) => nearestPacked(packVectors(query, candidates), threshold)
