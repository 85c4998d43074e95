/**
 * Measured endpoint performance (docs/decisions.md, "Routing by measured speed"): per endpoint and key kind, the
 * latency to the first token and the output tokens per second of the answers it gave, as decayed histograms
 * (decayed-sketch.ts) that follow the last few minutes. Each process measures its own traffic on the request path
 * (no store call there) and merges with the other processes through the store on a timer: it publishes its own
 * sketches and adds up the others' (src/repositories/endpoint-performance.ts).
 */

import { randomHex } from '../core/crypto'
import type { Logger } from '../core/logger'
import { causeOf, startPeriodicTask } from '../core/periodic'
import type { EndpointPerformanceEntry, EndpointPerformanceRepository } from '../repositories/endpoint-performance'
import { addDecayed, addSample, decayTo, emptySketch, quantileOf, totalWeight, type DecayedSketch, type SketchScale } from './decayed-sketch'

/** Whose key served: the caller's own (BYOK) or the gateway's shared one; they may sit on different provider tiers. */
export type KeyKind = 'byok' | 'shared'

export const endpointKey = (kind: KeyKind, provider: string, upstreamModel: string) => `${kind} ${provider} ${upstreamModel}`

/** One answer an endpoint gave. */
export interface PerformanceSample {
  /** From sending the attempt to its first token (a whole answer: to the answer). */
  latencyMs: number
  /** Output tokens per second of the answer; absent when it reported none or took no measurable time. */
  tokensPerSecond?: number
}

export interface Percentiles {
  p50: number
  p75: number
  p90: number
  p99: number
}

/** Percentiles to `digits` decimals, as answers show them. */
export const roundedPercentiles = (percentiles: Percentiles, digits: number): Percentiles => {
  const scale = 10 ** digits
  const round = (value: number) => Math.round(value * scale) / scale
  return { p50: round(percentiles.p50), p75: round(percentiles.p75), p90: round(percentiles.p90), p99: round(percentiles.p99) }
}

export interface EndpointFigures {
  latencyMs: Percentiles
  /** Absent when no answer of the endpoint counted output tokens. */
  tokensPerSecond?: Percentiles
}

export interface EndpointPerformance {
  record(key: string, sample: PerformanceSample): void
  /** The endpoint's figures over every process's recent traffic; undefined while it has too little to go on. */
  figures(key: string): EndpointFigures | undefined
  /** Publishes this process's sketches and reads the others' (the periodic merge, also callable on its own). */
  merge(): Promise<void>
  /** Stops the merge timer, after a last publication. */
  close(): Promise<void>
}

export interface EndpointPerformanceOptions {
  now: () => number
  /** How long a sample keeps half its weight. */
  halfLifeMs: number
  /** How often the process merges with the others through the store; `false` for never. */
  mergeEveryMs: number | false
  repository?: EndpointPerformanceRepository
  logger: Logger
}

/** Milliseconds from 1 ms to about 27 minutes. */
const LATENCY_SCALE: SketchScale = { min: 1, buckets: 64 }
/** Tokens per second from 0.1 to about 65,000. */
const THROUGHPUT_SCALE: SketchScale = { min: 0.1, buckets: 60 }

/**
 * A sample keeps a quarter of its weight after two half-lives: an endpoint whose samples weigh less in all counts as
 * unmeasured again, so it is tried once more before figures that old decide against it.
 */
const MIN_WEIGHT = 0.25

/** Endpoints one process keeps figures for; the least recently measured goes first beyond this. */
const MAX_TRACKED = 2_000

/** A record not rewritten for this many half-lives weighs under a thousandth: its process is gone, the record goes. */
const STALE_HALF_LIVES = 10

interface Sketches {
  latency: DecayedSketch
  throughput: DecayedSketch | null
}

interface Merged {
  at: number
  latency: number[]
  throughput: number[] | null
}

const roundWeights = (weights: readonly number[]) => weights.map((weight) => (weight < 1e-6 ? 0 : Number(weight.toPrecision(4))))

const percentilesOf = (weights: readonly number[], scale: SketchScale): Percentiles | undefined => {
  if (totalWeight(weights) < MIN_WEIGHT) return undefined
  return {
    p50: quantileOf(weights, scale, 0.5)!,
    p75: quantileOf(weights, scale, 0.75)!,
    p90: quantileOf(weights, scale, 0.9)!,
    p99: quantileOf(weights, scale, 0.99)!,
  }
}

export const createEndpointPerformance = (options: EndpointPerformanceOptions): EndpointPerformance => {
  const { now, halfLifeMs, repository } = options
  const instance = randomHex(8)
  const own = new Map<string, Sketches>()
  // The other processes' sketches as of the last merge, summed per endpoint.
  let others = new Map<string, Merged>()
  let hasPublished = false

  const combined = (sketch: DecayedSketch | null | undefined, merged: number[] | null | undefined, mergedAt: number, length: number, at: number) => {
    const weights = new Array<number>(length).fill(0)
    if (sketch) addDecayed(weights, sketch, at, halfLifeMs)
    if (merged) addDecayed(weights, { at: mergedAt, weights: merged }, at, halfLifeMs)
    return weights
  }

  const snapshot = (at: number): Record<string, EndpointPerformanceEntry> => {
    const endpoints: Record<string, EndpointPerformanceEntry> = {}
    for (const [key, sketches] of own) {
      decayTo(sketches.latency, at, halfLifeMs)
      if (sketches.throughput) decayTo(sketches.throughput, at, halfLifeMs)
      // Decayed to nothing: not worth a place in the record, nor in memory.
      if (totalWeight(sketches.latency.weights) < 1e-3) {
        own.delete(key)
        continue
      }
      endpoints[key] = {
        at,
        latency: roundWeights(sketches.latency.weights),
        throughput: sketches.throughput ? roundWeights(sketches.throughput.weights) : null,
      }
    }
    return endpoints
  }

  const merge = async () => {
    if (!repository) return
    const at = now()
    const endpoints = snapshot(at)
    // A process that measured nothing writes nothing (a gateway that served no generation leaves the store as it was).
    if (hasPublished || Object.keys(endpoints).length > 0) {
      await repository.publish({ instance, writtenAt: at, endpoints })
      hasPublished = true
    }
    const next = new Map<string, Merged>()
    for (const record of await repository.list()) {
      if (record.instance === instance) continue
      if (at - record.writtenAt > STALE_HALF_LIVES * halfLifeMs) {
        await repository.remove(record.instance).catch(() => false)
        continue
      }
      for (const [key, entry] of Object.entries(record.endpoints)) {
        let merged = next.get(key)
        if (!merged) {
          merged = { at, latency: new Array<number>(LATENCY_SCALE.buckets).fill(0), throughput: null }
          next.set(key, merged)
        }
        addDecayed(merged.latency, { at: entry.at, weights: entry.latency }, at, halfLifeMs)
        if (entry.throughput) {
          merged.throughput ??= new Array<number>(THROUGHPUT_SCALE.buckets).fill(0)
          addDecayed(merged.throughput, { at: entry.at, weights: entry.throughput }, at, halfLifeMs)
        }
      }
    }
    others = next
  }

  const task = repository
    ? startPeriodicTask(options.mergeEveryMs, merge, (error) =>
        options.logger.warn('merging endpoint performance failed; trying again later', { error, ...causeOf(error) }),
      )
    : undefined

  return {
    record(key, sample) {
      const at = now()
      let sketches = own.get(key)
      if (sketches) own.delete(key)
      else {
        if (own.size >= MAX_TRACKED) own.delete(own.keys().next().value!)
        sketches = { latency: emptySketch(LATENCY_SCALE, at), throughput: null }
      }
      // Re-inserted: the map's order is the order of last measurement.
      own.set(key, sketches)
      addSample(sketches.latency, LATENCY_SCALE, sample.latencyMs, at, halfLifeMs)
      if (sample.tokensPerSecond !== undefined) {
        sketches.throughput ??= emptySketch(THROUGHPUT_SCALE, at)
        addSample(sketches.throughput, THROUGHPUT_SCALE, sample.tokensPerSecond, at, halfLifeMs)
      }
    },
    figures(key) {
      const sketches = own.get(key)
      const merged = others.get(key)
      if (!sketches && !merged) return undefined
      const at = now()
      const mergedAt = merged?.at ?? at
      const latencyMs = percentilesOf(combined(sketches?.latency, merged?.latency, mergedAt, LATENCY_SCALE.buckets, at), LATENCY_SCALE)
      if (!latencyMs) return undefined
      const tokensPerSecond =
        sketches?.throughput || merged?.throughput
          ? percentilesOf(combined(sketches?.throughput, merged?.throughput, mergedAt, THROUGHPUT_SCALE.buckets, at), THROUGHPUT_SCALE)
          : undefined
      return tokensPerSecond ? { latencyMs, tokensPerSecond } : { latencyMs }
    },
    merge,
    async close() {
      if (!task) return
      await task.stop()
      await merge().catch(() => {})
    },
  }
}

/** Measurement turned off: every endpoint stays unmeasured, and routing keeps catalog order for speed sorts. */
export const disabledEndpointPerformance: EndpointPerformance = {
  record() {},
  figures: () => undefined,
  merge: async () => {},
  close: async () => {},
}

/** An answer's generation shorter than this says nothing about its pace: throughput is then counted over the whole attempt. */
const MIN_GENERATION_MS = 50

/**
 * One served answer as a sample: `latencyMs` to its first token (a whole answer's: to the answer itself),
 * `generationMs` from there to its end, and the output tokens it reported.
 */
export const performanceSample = (latencyMs: number, generationMs: number, outputTokens: number | undefined): PerformanceSample => {
  if (!outputTokens || outputTokens <= 0) return { latencyMs }
  const seconds = (generationMs >= MIN_GENERATION_MS ? generationMs : latencyMs + generationMs) / 1000
  return seconds > 0 ? { latencyMs, tokensPerSecond: outputTokens / seconds } : { latencyMs }
}
