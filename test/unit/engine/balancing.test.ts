/**
 * The default load balancing's pick (src/engine/balancing.ts) and the recent failures it sets aside
 * (src/engine/recent-failures.ts), on plain lists with a seeded random source and an injected clock.
 */

import { describe, expect, it } from 'vitest'
import { balanceByPrice, PRICE_BAND } from '../../../src/engine/balancing'
import { createRecentFailures, RECENT_FAILURE_WINDOW_MS } from '../../../src/engine/recent-failures'
import { seededRandom } from '../../helpers/seeded-random'

interface Endpoint {
  name: string
  price: number
  tier?: number
}

const balance = (endpoints: Endpoint[], random: () => number) =>
  balanceByPrice(endpoints, (endpoint) => endpoint.price, (endpoint) => endpoint.tier ?? 0, random)!

const names = (endpoints: Endpoint[]) => endpoints.map((endpoint) => endpoint.name)

/** How often each endpoint is picked first over `plans` plans drawn from one seeded sequence. */
const firstPicks = (endpoints: Endpoint[], plans: number, seed = 7) => {
  const random = seededRandom(seed)
  const counts: Record<string, number> = {}
  for (let plan = 0; plan < plans; plan++) {
    const first = balance(endpoints, random).order[0]!.name
    counts[first] = (counts[first] ?? 0) + 1
  }
  return counts
}

describe('the weighted pick', () => {
  it('picks an endpoint at price p four times as often as one at 2p (1/price²)', () => {
    const counts = firstPicks(
      [
        { name: 'cheap', price: 1e-6 },
        { name: 'double', price: 2e-6 },
      ],
      1000,
    )
    // Expected 800 and 200; the seeded sequence makes this exact run repeatable, the bounds make its meaning plain.
    expect(counts.cheap! + counts.double!).toBe(1000)
    expect(counts.cheap).toBeGreaterThan(760)
    expect(counts.cheap).toBeLessThan(840)
  })

  it('reports each candidate’s chance, and keeps the rest in price order behind the pick', () => {
    const endpoints = [
      { name: 'a', price: 1 },
      { name: 'b', price: 2 },
      { name: 'c', price: 3 },
    ]
    const balanced = balance(endpoints, () => 0.99)
    // Weights 1, 1/4, 1/9: the last candidate owns the top of the range.
    expect(balanced.pick.name).toBe('c')
    expect(names(balanced.order)).toEqual(['c', 'a', 'b'])
    expect(balanced.shares.get(endpoints[0]!)).toBeCloseTo(36 / 49)
    expect(balanced.shares.get(endpoints[1]!)).toBeCloseTo(9 / 49)
    expect(balanced.shares.get(endpoints[2]!)).toBeCloseTo(4 / 49)
    expect(names(balance(endpoints, () => 0).order)).toEqual(['a', 'b', 'c'])
  })

  it(`leaves endpoints priced over ${PRICE_BAND}× the cheapest out of the pick: they follow as fallbacks`, () => {
    const endpoints = [
      { name: 'cheap', price: 1 },
      { name: 'dear', price: PRICE_BAND * 1.01 },
    ]
    const balanced = balance(endpoints, () => 0.999999)
    expect(balanced.pick.name).toBe('cheap')
    expect(names(balanced.order)).toEqual(['cheap', 'dear'])
    expect(balanced.shares.has(endpoints[1]!)).toBe(false)
  })

  it('shares the pick equally among free endpoints; paid ones follow in price order', () => {
    const endpoints = [
      { name: 'free-a', price: 0 },
      { name: 'free-b', price: 0 },
      { name: 'paid', price: 1e-9 },
    ]
    const counts = firstPicks(endpoints, 1000)
    expect(counts.paid).toBeUndefined()
    expect(counts['free-a']).toBeGreaterThan(450)
    expect(counts['free-b']).toBeGreaterThan(450)
    const balanced = balance(endpoints, () => 0.75)
    expect(names(balanced.order)).toEqual(['free-b', 'free-a', 'paid'])
    expect(balanced.shares.get(endpoints[0]!)).toBe(0.5)
  })

  it('sets endpoints of a higher tier (failed recently) after the stable ones, whatever their price', () => {
    const endpoints = [
      { name: 'cheap-but-failing', price: 1, tier: 2 },
      { name: 'stable', price: 2 },
      { name: 'stable-dear', price: 3 },
    ]
    const balanced = balance(endpoints, () => 0)
    expect(balanced.pick.name).toBe('stable')
    expect(names(balanced.order)).toEqual(['stable', 'stable-dear', 'cheap-but-failing'])
    // The band is measured from the cheapest stable endpoint.
    expect(balanced.shares.get(endpoints[2]!)).toBeCloseTo(4 / 13)
  })

  it('picks among the set-aside ones when every endpoint is set aside', () => {
    const balanced = balance(
      [
        { name: 'a', price: 1, tier: 2 },
        { name: 'b', price: 1, tier: 2 },
      ],
      () => 0.6,
    )
    expect(names(balanced.order)).toEqual(['b', 'a'])
  })
})

describe('recent failures', () => {
  it('set an endpoint aside for 30 s after its upstream failed', () => {
    let time = 1_000_000
    const failures = createRecentFailures(() => time)
    expect(failures.hasFailed('alpha m')).toBe(false)
    failures.record('alpha m')
    expect(failures.hasFailed('alpha m')).toBe(true)
    expect(failures.hasFailed('beta m')).toBe(false)
    time += RECENT_FAILURE_WINDOW_MS - 1
    expect(failures.hasFailed('alpha m')).toBe(true)
    // A later failure starts the window again.
    failures.record('alpha m')
    time += RECENT_FAILURE_WINDOW_MS - 1
    expect(failures.hasFailed('alpha m')).toBe(true)
    time += 1
    expect(failures.hasFailed('alpha m')).toBe(false)
  })
})
