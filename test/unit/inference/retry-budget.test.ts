import { describe, expect, it } from 'vitest'
import { createRetryBudget } from '../../../src/engine/retry-budget'

const clock = (start = 1_000_000) => {
  let time = start
  return { now: () => time, advance: (ms: number) => void (time += ms) }
}

const withdrawals = (budget: { tryWithdraw(): boolean }) => {
  let count = 0
  while (budget.tryWithdraw()) count++
  return count
}

describe('retry budget', () => {
  it('allows the reserve when idle, then 20 % of the requests made', () => {
    const time = clock()
    const budget = createRetryBudget({ ratio: 0.2, minRetries: 3, windowSeconds: 10 }, time.now)
    expect(withdrawals(budget)).toBe(3)
    for (let index = 0; index < 4; index++) budget.deposit()
    expect(budget.tryWithdraw()).toBe(false)
    budget.deposit()
    expect(withdrawals(budget)).toBe(1)
    for (let index = 0; index < 45; index++) budget.deposit()
    // 50 requests: 0.2 × 50 + 3 = 13 retries in all.
    expect(withdrawals(budget)).toBe(9)
  })

  it('forgets deposits and withdrawals once they leave the window', () => {
    const time = clock()
    const budget = createRetryBudget({ ratio: 0.5, minRetries: 1, windowSeconds: 10 }, time.now)
    for (let index = 0; index < 10; index++) budget.deposit()
    expect(withdrawals(budget)).toBe(6)
    time.advance(5_000)
    expect(budget.tryWithdraw()).toBe(false)
    // Both the deposits and the retries are older than the window now: only the reserve is left.
    time.advance(5_000)
    expect(withdrawals(budget)).toBe(1)
  })

  it('keeps its counts when the clock goes back', () => {
    const time = clock()
    const budget = createRetryBudget({ ratio: 0.2, minRetries: 2, windowSeconds: 10 }, time.now)
    expect(withdrawals(budget)).toBe(2)
    time.advance(-60_000)
    expect(budget.tryWithdraw()).toBe(false)
  })

  it('allows no retry at all with no reserve and no ratio', () => {
    const budget = createRetryBudget({ ratio: 0, minRetries: 0, windowSeconds: 10 }, clock().now)
    budget.deposit()
    expect(budget.tryWithdraw()).toBe(false)
  })
})
