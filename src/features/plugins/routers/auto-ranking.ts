/**
 * How the auto-router orders its candidates (docs/decisions.md, "Plugins: routers and fusion"). OpenRouter ranks by
 * the community's spend share per task type, which a self-hosted gateway does not have; the signal here is the
 * catalog itself, so the same request always gets the same models:
 *
 * 1. `cost_tier` band: candidates are placed by price (input and output blended 3:1) on a 0–100 percentile scale,
 *    cheapest 0, dearest 100; low is [0, 20), medium [20, 40), high [40, 60), xhigh [60, 80), max [80, 100]. Those
 *    inside the band come first, then the others by their distance from it.
 * 2. Fitness for the task type: `code` by the coding score table (coding-scores.ts), `math` and `reasoning` by
 *    taking reasoning settings, `long_context` by context length; the other task types have no preference.
 * 3. Cheaper first, then the slug, so ties are broken the same way every time.
 */

import type { CostTier } from './schemas'
import type { Candidate } from './candidates'
import type { TaskType } from './task'

/** Percentile bands of the cost tiers, as OpenRouter defines them. */
export const COST_TIER_BANDS: Readonly<Record<CostTier, readonly [number, number]>> = {
  low: [0, 20],
  medium: [20, 40],
  high: [40, 60],
  xhigh: [60, 80],
  max: [80, 100],
}

/** The tier without `cost_tier`: the second-cheapest fifth, good answers without paying for the frontier. */
export const DEFAULT_COST_TIER: CostTier = 'medium'

/** The primary and its fallbacks: as many as the default attempt budget can try. */
export const ROUTED_MODELS_MAX = 3

/** 0 inside the band (whose upper bound is open except for the top band's); otherwise 1 + how far outside. */
const distanceFromBand = (percentile: number, [low, high]: readonly [number, number], isTopBand: boolean) => {
  if (percentile >= low && (percentile < high || (isTopBand && percentile <= high))) return 0
  return 1 + (percentile < low ? low - percentile : percentile - high)
}

const fitness = (candidate: Candidate, taskType: TaskType, scores: Readonly<Record<string, number>>): number => {
  switch (taskType) {
    case 'code':
      return scores[candidate.slug] ?? 0
    case 'math':
    case 'reasoning':
      return candidate.takesReasoning ? 1 : 0
    case 'long_context':
      return candidate.contextLength
    default:
      return 0
  }
}

/** The candidates in the auto-router's order (best first). */
export const rankForTask = (candidates: readonly Candidate[], taskType: TaskType, tier: CostTier, scores: Readonly<Record<string, number>>): Candidate[] => {
  const byPrice = [...candidates].sort((left, right) => left.blendedPrice - right.blendedPrice || left.slug.localeCompare(right.slug))
  const band = COST_TIER_BANDS[tier]
  const keyed = byPrice.map((candidate, index) => {
    const percentile = byPrice.length === 1 ? 0 : (100 * index) / (byPrice.length - 1)
    return { candidate, distance: distanceFromBand(percentile, band, tier === 'max'), fitness: fitness(candidate, taskType, scores) }
  })
  keyed.sort(
    (left, right) =>
      left.distance - right.distance ||
      right.fitness - left.fitness ||
      left.candidate.blendedPrice - right.candidate.blendedPrice ||
      left.candidate.slug.localeCompare(right.candidate.slug),
  )
  return keyed.map(({ candidate }) => candidate)
}
