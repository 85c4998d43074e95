/**
 * A decayed histogram on log-spaced buckets: the weight of every sample halves each `halfLifeMs`, so the figures
 * follow the last few minutes of traffic without keeping the samples. Buckets grow by a quarter, so a percentile
 * read from it is within about 12 % of the true one; sketches on the same scale merge by adding their weights
 * (another gateway's, read from the store).
 */

/** How the values of one kind are bucketed: the smallest value told apart and the number of buckets. */
export interface SketchScale {
  /** The lower edge of the first bucket; smaller values count in it. */
  min: number
  /** Values beyond the last bucket count in it. */
  buckets: number
}

const GROWTH = 1.25
const LOG_GROWTH = Math.log(GROWTH)

export interface DecayedSketch {
  /** When the weights were last decayed, in ms since the epoch. */
  at: number
  weights: number[]
}

export const emptySketch = (scale: SketchScale, at: number): DecayedSketch => ({ at, weights: new Array<number>(scale.buckets).fill(0) })

const bucketOf = (scale: SketchScale, value: number) => {
  if (!(value > scale.min)) return 0
  return Math.min(scale.buckets - 1, Math.floor(Math.log(value / scale.min) / LOG_GROWTH))
}

/** The factor a weight keeps over `elapsedMs`. */
const decayFactor = (elapsedMs: number, halfLifeMs: number) => (elapsedMs <= 0 ? 1 : 2 ** (-elapsedMs / halfLifeMs))

/** Brings `sketch`'s weights to time `at` (in place). */
export const decayTo = (sketch: DecayedSketch, at: number, halfLifeMs: number): void => {
  const factor = decayFactor(at - sketch.at, halfLifeMs)
  if (factor === 1) return
  for (let index = 0; index < sketch.weights.length; index++) sketch.weights[index]! *= factor
  sketch.at = at
}

/** Adds one sample of weight 1 at time `at`. */
export const addSample = (sketch: DecayedSketch, scale: SketchScale, value: number, at: number, halfLifeMs: number): void => {
  decayTo(sketch, at, halfLifeMs)
  sketch.weights[bucketOf(scale, value)]! += 1
}

/** The weight of the samples, decayed: how many recent samples it stands for. */
export const totalWeight = (weights: readonly number[]) => weights.reduce((sum, weight) => sum + weight, 0)

/**
 * Adds `sketch`, decayed to `at`, onto `into` (weights on the same scale, already at `at`). A sketch of another
 * length (another release's scale) is left out rather than misread.
 */
export const addDecayed = (into: number[], sketch: DecayedSketch, at: number, halfLifeMs: number): void => {
  if (sketch.weights.length !== into.length) return
  const factor = decayFactor(at - sketch.at, halfLifeMs)
  for (let index = 0; index < into.length; index++) into[index]! += sketch.weights[index]! * factor
}

/** The value below which the share `quantile` (0 to 1) of the weight lies, read inside its bucket on the log scale. */
export const quantileOf = (weights: readonly number[], scale: SketchScale, quantile: number): number | undefined => {
  const total = totalWeight(weights)
  if (total <= 0) return undefined
  const target = quantile * total
  let below = 0
  for (let index = 0; index < weights.length; index++) {
    const weight = weights[index]!
    if (weight > 0 && below + weight >= target) {
      const within = (target - below) / weight
      return scale.min * GROWTH ** (index + within)
    }
    below += weight
  }
  return scale.min * GROWTH ** weights.length
}
