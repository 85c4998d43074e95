/**
 * The load generator: a closed loop of N concurrent requests over one pooled undici Agent, bounded
 * by a request count and a deadline, whichever comes first. It runs in the bench's own process, so
 * its CPU time never counts against the servers it measures.
 */

import { performance } from 'node:perf_hooks'
import { Agent, request } from 'undici'

/** No single request may hang the bench. */
const REQUEST_TIMEOUT_MS = 10_000

/** What a whole answer holds, in the wire the client speaks. */
export interface Expectation {
  /** In the chunk that carries a stream's first text. */
  firstTokenMarker: string
  /** In a stream's last event: the stream is complete. */
  completedMarker: string
  /** In a whole non-streamed answer: the fixture's text. */
  answerMarker: string
  /** A response header every answer must carry with this value (a cache hit's `x-modelgate-cache: hit`). */
  header?: { name: string; value: string }
}

export interface LoadSpec {
  url: string
  headers: Record<string, string>
  body: string
  expect: Expectation
  isStream: boolean
  connections: number
  maxRequests: number
  maxMs: number
}

export interface LoadResult {
  completed: number
  failed: number
  /** Wall time from the first request to the end of the last one. */
  elapsedMs: number
  /** Per completed request: request start to end of body (ms). */
  latencies: number[]
  /** Per completed stream: request start to the chunk holding the first text delta (ms). */
  firstTokens: number[]
  firstFailure?: string
}

/** Reads a body to its end, noting when the first-token marker arrives and checking the answer is whole. */
const readBody = async (body: AsyncIterable<Buffer>, isStream: boolean, expect: Expectation, started: number) => {
  const tailLength = Math.max(expect.firstTokenMarker.length, expect.completedMarker.length, expect.answerMarker.length)
  let firstTokenAt: number | undefined
  // Text is scanned as latin1 (one char per byte), carrying a marker's length across chunk boundaries.
  let tail = ''
  let isComplete = false
  for await (const chunk of body) {
    const text = tail + chunk.toString('latin1')
    if (isStream) {
      if (firstTokenAt === undefined && text.includes(expect.firstTokenMarker)) firstTokenAt = performance.now() - started
      if (!isComplete && text.includes(expect.completedMarker)) isComplete = true
    } else if (!isComplete && text.includes(expect.answerMarker)) isComplete = true
    tail = text.slice(-tailLength)
  }
  return { firstTokenAt, isComplete: isComplete && (!isStream || firstTokenAt !== undefined) }
}

/** Runs one bounded closed loop. */
export const runLoad = async (agent: Agent, spec: LoadSpec): Promise<LoadResult> => {
  const result: LoadResult = { completed: 0, failed: 0, elapsedMs: 0, latencies: [], firstTokens: [] }
  const started = performance.now()
  const deadline = started + spec.maxMs
  let issued = 0
  const fail = (reason: string) => {
    result.failed++
    result.firstFailure ??= reason
  }
  const worker = async () => {
    while (issued < spec.maxRequests && performance.now() < deadline) {
      issued++
      const requestStarted = performance.now()
      try {
        const response = await request(spec.url, {
          method: 'POST',
          headers: spec.headers,
          body: spec.body,
          dispatcher: agent,
          headersTimeout: REQUEST_TIMEOUT_MS,
          bodyTimeout: REQUEST_TIMEOUT_MS,
        })
        if (response.statusCode !== 200) {
          fail(`HTTP ${response.statusCode}: ${(await response.body.text()).slice(0, 300)}`)
          continue
        }
        const { header } = spec.expect
        if (header && response.headers[header.name] !== header.value) {
          await response.body.dump()
          fail(`${header.name}: ${String(response.headers[header.name] ?? '(absent)')}, expected ${header.value}`)
          continue
        }
        const { firstTokenAt, isComplete } = await readBody(response.body, spec.isStream, spec.expect, requestStarted)
        const latency = performance.now() - requestStarted
        if (!isComplete) {
          fail(spec.isStream ? `stream ended without "${spec.expect.firstTokenMarker}" or "${spec.expect.completedMarker}"` : `answer without "${spec.expect.answerMarker}"`)
          continue
        }
        result.completed++
        result.latencies.push(latency)
        if (firstTokenAt !== undefined) result.firstTokens.push(firstTokenAt)
      } catch (error) {
        fail(error instanceof Error ? `${error.name}: ${error.message}` : String(error))
      }
    }
  }
  await Promise.all(Array.from({ length: spec.connections }, worker))
  result.elapsedMs = performance.now() - started
  return result
}

/** The exact nearest-rank percentile (`q` in 0..1) of the samples. */
export const percentile = (sorted: readonly number[], q: number): number => {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}
