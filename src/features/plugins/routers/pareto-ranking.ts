/**
 * How the pareto-router chooses (docs/decisions.md, "Plugins: routers and fusion"): among candidates with a coding
 * score of at least `min_coding_score` and, with `max_price`, a price at most that many USD per million tokens
 * (the input price, or with `price_source: weighted_avg` input and output blended 3:1), the cheapest first; ties by
 * the higher score, then the slug. Models without a score are never chosen.
 */

import type { Candidate } from './candidates'
import type { ParetoRouterPlugin } from './schemas'

/** Without `min_coding_score`: models that solve at least 70 % of the polyglot benchmark, the strong tier. */
export const DEFAULT_MIN_CODING_SCORE = 0.7

export const paretoPrice = (candidate: Candidate, source: ParetoRouterPlugin['price_source']) =>
  (source === 'weighted_avg' ? candidate.blendedPrice : candidate.promptPrice) * 1_000_000

export const rankPareto = (candidates: readonly Candidate[], plugin: Partial<ParetoRouterPlugin>, scores: Readonly<Record<string, number>>): Candidate[] => {
  const minimum = plugin.min_coding_score ?? DEFAULT_MIN_CODING_SCORE
  return candidates
    .filter((candidate) => (scores[candidate.slug] ?? -1) >= minimum)
    .filter((candidate) => plugin.max_price === undefined || paretoPrice(candidate, plugin.price_source) <= plugin.max_price)
    .sort(
      (left, right) =>
        paretoPrice(left, plugin.price_source) - paretoPrice(right, plugin.price_source) ||
        scores[right.slug]! - scores[left.slug]! ||
        left.slug.localeCompare(right.slug),
    )
}
