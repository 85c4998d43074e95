/**
 * The figures of `GET /stats`, summed from usage ledger records: counts, spend, tokens, the error and fallback
 * rates, and latency and time-to-first-token percentiles (docs/dashboard.md says what each one means).
 */

import type { GenerationRecord } from '../repositories/generations'

export type BucketWidth = 'hour' | 'day'

const BUCKET_MS: Record<BucketWidth, number> = { hour: 3_600_000, day: 86_400_000 }

/** Where the bucket holding `time` starts: buckets are whole UTC hours or days. */
const bucketStart = (time: number, width: BucketWidth): number => Math.floor(time / BUCKET_MS[width]) * BUCKET_MS[width]

/** Every bucket start from the one holding `from` to the one holding the last instant before `to`. */
export const bucketStarts = (from: number, to: number, width: BucketWidth): number[] => {
  const starts: number[] = []
  for (let start = bucketStart(from, width); start < to; start += BUCKET_MS[width]) starts.push(start)
  return starts
}

/**
 * The nearest-rank percentile: the smallest sample that at least `p` percent of the samples do not exceed; null
 * without samples. `sorted` is in ascending order.
 */
export const percentile = (sorted: readonly number[], p: number): number | null => {
  if (sorted.length === 0) return null
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!
}

const percentiles = (samples: number[]) => {
  const sorted = samples.sort((a, b) => a - b)
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99) }
}

// Costs are sums of per-token prices: rounded as `GET /activity` rounds them, so the two agree.
const round = (amount: number) => Math.round(amount * 1e12) / 1e12

/** A request whose answer failed (upstream, gateway or guardrail); incomplete and cancelled answers are not errors. */
const isError = (record: GenerationRecord) => record.status === 'failed'

/** A request that needed more than one upstream attempt: its first endpoint failed and another was tried. */
export const isFallback = (record: GenerationRecord) => record.routing.attempts > 1

class BucketTally {
  requests = 0
  errors = 0
  cost = 0
  promptTokens = 0
  completionTokens = 0

  add(record: GenerationRecord) {
    this.requests++
    if (isError(record)) this.errors++
    this.cost = round(this.cost + record.cost)
    this.promptTokens += record.tokens.input
    this.completionTokens += record.tokens.output
  }

  toWire(start: number) {
    return {
      start: new Date(start).toISOString(),
      requests: this.requests,
      errors: this.errors,
      cost: this.cost,
      prompt_tokens: this.promptTokens,
      completion_tokens: this.completionTokens,
    }
  }
}

/** One set of figures (the total, or one group's) with its time series. */
export class FigureTally {
  private requests = 0
  private errors = 0
  private fallbacks = 0
  private cost = 0
  private promptTokens = 0
  private completionTokens = 0
  private reasoningTokens = 0
  private cachedTokens = 0
  private readonly latencies: number[] = []
  private readonly firstTokenTimes: number[] = []
  private readonly buckets = new Map<number, BucketTally>()

  constructor(private readonly width: BucketWidth) {}

  add(record: GenerationRecord) {
    this.requests++
    if (isError(record)) this.errors++
    if (isFallback(record)) this.fallbacks++
    this.cost = round(this.cost + record.cost)
    this.promptTokens += record.tokens.input
    this.completionTokens += record.tokens.output
    this.reasoningTokens += record.tokens.reasoning
    this.cachedTokens += record.tokens.cached
    this.latencies.push(record.latencyMs)
    if (record.timeToFirstTokenMs !== null) this.firstTokenTimes.push(record.timeToFirstTokenMs)
    const start = bucketStart(Date.parse(record.createdAt), this.width)
    let bucket = this.buckets.get(start)
    if (!bucket) {
      bucket = new BucketTally()
      this.buckets.set(start, bucket)
    }
    bucket.add(record)
  }

  get requestCount() {
    return this.requests
  }

  /** The figures; `starts` lists every bucket to show (empty ones as zeros), or none for only the buckets with requests. */
  toWire(starts?: readonly number[]) {
    const series = (starts ?? [...this.buckets.keys()].sort((a, b) => a - b)).map((start) => (this.buckets.get(start) ?? new BucketTally()).toWire(start))
    return {
      requests: this.requests,
      errors: this.errors,
      fallbacks: this.fallbacks,
      error_rate: this.requests === 0 ? 0 : this.errors / this.requests,
      fallback_rate: this.requests === 0 ? 0 : this.fallbacks / this.requests,
      cost: this.cost,
      prompt_tokens: this.promptTokens,
      completion_tokens: this.completionTokens,
      reasoning_tokens: this.reasoningTokens,
      cached_tokens: this.cachedTokens,
      latency_ms: percentiles(this.latencies),
      time_to_first_token_ms: percentiles(this.firstTokenTimes),
      series,
    }
  }
}
