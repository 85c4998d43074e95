import { describe, expect, it } from 'vitest'
import { formatUsd, fromNano, toNano } from '../../../src/core/money'
import { spendCounter, windowStamp } from '../../../src/repositories/spend-counters'

const at = (iso: string) => new Date(iso)

describe('spend periods', () => {
  it('names UTC days, weeks from Monday and months, whatever the local time zone', () => {
    expect(windowStamp('daily', at('2025-03-12T23:59:59.999Z'))).toBe('d2025-03-12')
    expect(windowStamp('daily', at('2025-03-13T00:00:00Z'))).toBe('d2025-03-13')
    // Wednesday, Sunday and the next Monday.
    expect(windowStamp('weekly', at('2025-03-12T10:00:00Z'))).toBe('w2025-03-10')
    expect(windowStamp('weekly', at('2025-03-16T23:59:59Z'))).toBe('w2025-03-10')
    expect(windowStamp('weekly', at('2025-03-17T00:00:00Z'))).toBe('w2025-03-17')
    // A week that starts in the previous year.
    expect(windowStamp('weekly', at('2026-01-01T12:00:00Z'))).toBe('w2025-12-29')
    expect(windowStamp('monthly', at('2024-02-29T23:00:00Z'))).toBe('m2024-02')
    expect(windowStamp('monthly', at('2024-03-01T00:00:00Z'))).toBe('m2024-03')
    expect(windowStamp('total', at('2024-03-01T00:00:00Z'))).toBe('total')
  })

  it('keys each counter by scope, id, metric and period, and keeps it past its period', () => {
    const counter = spendCounter('key', 'abc', 'byok', 'weekly', at('2025-03-12T10:00:00Z'))
    expect(counter.key).toBe('spend:key:abc:byok:w2025-03-10')
    expect(counter.ttlMs).toBeGreaterThan(7 * 86_400_000)
  })
})

describe('money', () => {
  it('counts whole nano-dollars, so sums are exact', () => {
    expect(toNano(0.1) + toNano(0.2)).toBe(toNano(0.3))
    expect(fromNano(toNano(0.0000364))).toBe(0.0000364)
  })

  it('formats at least two decimals, at most nine, with a sign', () => {
    expect(formatUsd(0)).toBe('$0.00')
    expect(formatUsd(25_000_000_000)).toBe('$25.00')
    expect(formatUsd(26_000)).toBe('$0.000026')
    expect(formatUsd(-2_500_000_000)).toBe('-$2.50')
    expect(formatUsd(1)).toBe('$0.000000001')
  })
})
