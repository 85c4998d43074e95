/**
 * The default load balancing (docs/decisions.md, "Load balancing"), as OpenRouter documents its default: among the
 * cheapest stable endpoints one is picked at random, weighted by the inverse square of its price; the others follow
 * as fallbacks in price order, and the endpoints set aside (failed in the last 30 s) come after all of them.
 */

/** How the gateway orders a model's endpoints when the caller orders nothing: `weighted` (default) or `cheapest`. */
export type Balancing = 'weighted' | 'cheapest'

/**
 * The pick's candidates: the stable endpoints priced at most this many times the cheapest one. Beyond it an
 * endpoint's weight is under a ninth of the cheapest's, and a request sent there would cost the caller three times
 * as much for a sliver of spread.
 */
export const PRICE_BAND = 3

export interface Balanced<T> {
  /** The weighted pick first, then the rest in their tier and price order. */
  order: T[]
  /** The candidates and the chance each had to be picked (the pick among them). */
  shares: Map<T, number>
  pick: T
}

/**
 * Orders `items` (in price order, cheapest first) by tier (0 first: stable; higher tiers go after), then puts a
 * weighted pick among the lowest tier's cheapest candidates first. `random` returns a number in [0, 1).
 * A free cheapest candidate has no finite inverse-square weight: the free candidates then share the pick equally.
 */
export const balanceByPrice = <T>(items: readonly T[], priceOf: (item: T) => number, tierOf: (item: T) => number, random: () => number): Balanced<T> | undefined => {
  if (items.length === 0) return undefined
  const tiers = items.map((item, index) => ({ item, index, tier: tierOf(item) }))
  // Stable: within a tier the price order stays.
  tiers.sort((left, right) => left.tier - right.tier || left.index - right.index)
  const ordered = tiers.map(({ item }) => item)
  const firstTier = tiers[0]!.tier
  const cheapest = priceOf(ordered[0]!)
  const candidates = tiers.filter(({ item, tier }) => tier === firstTier && priceOf(item) <= cheapest * PRICE_BAND).map(({ item }) => item)
  const weightOf = (item: T) => (cheapest === 0 ? 1 : 1 / priceOf(item) ** 2)
  const total = candidates.reduce((sum, item) => sum + weightOf(item), 0)
  let roll = random() * total
  let pick: T = candidates.at(-1)!
  for (const candidate of candidates) {
    roll -= weightOf(candidate)
    if (roll < 0) {
      pick = candidate
      break
    }
  }
  const shares = new Map(candidates.map((item) => [item, weightOf(item) / total]))
  return { order: [pick, ...ordered.filter((item) => item !== pick)], shares, pick }
}
