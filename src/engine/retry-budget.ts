/**
 * A retry budget per gateway, as Finagle and Envoy bound retries: every request deposits `ratio` of a
 * retry, every retry (an attempt after a request's first) withdraws one, and `minRetries` are always
 * available so a quiet gateway can still retry. Deposits and withdrawals expire after `windowSeconds`,
 * so an outage after a busy hour is not paid for with that hour's savings. Over any window, attempts
 * stay at most (1 + ratio) × requests + minRetries, however many fallbacks a request lists.
 */

export interface RetryBudgetOptions {
  ratio: number
  minRetries: number
  windowSeconds: number
}

export interface RetryBudget {
  /** Records a request. */
  deposit(): void
  /** Takes one retry; `false` when the budget is spent. */
  tryWithdraw(): boolean
}

// The window slides in tenths: a deposit expires between 0.9 and 1 window after it was made.
const SLOTS = 10
// Deposits are fractions (0.2 × 5 may land a hair below 1).
const EPSILON = 1e-9

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0)

/** A budget on the gateway's clock (`now` in ms), so tests can move time. */
export const createRetryBudget = (options: RetryBudgetOptions, now: () => number): RetryBudget => {
  const slotMs = (options.windowSeconds * 1000) / SLOTS
  const requests: number[] = new Array(SLOTS).fill(0)
  const retries: number[] = new Array(SLOTS).fill(0)
  let currentSlot = Math.floor(now() / slotMs)
  const indexOf = (slot: number) => ((slot % SLOTS) + SLOTS) % SLOTS

  /** Moves the window to the present, clearing the slots that fell out of it. A clock going back changes nothing. */
  const advance = () => {
    const slot = Math.floor(now() / slotMs)
    for (let next = currentSlot + 1; next <= Math.min(slot, currentSlot + SLOTS); next++) {
      requests[indexOf(next)] = 0
      retries[indexOf(next)] = 0
    }
    if (slot > currentSlot) currentSlot = slot
  }

  return {
    deposit() {
      advance()
      requests[indexOf(currentSlot)]!++
    },
    tryWithdraw() {
      advance()
      if (sum(retries) + 1 > options.ratio * sum(requests) + options.minRetries + EPSILON) return false
      retries[indexOf(currentSlot)]!++
      return true
    },
  }
}

/** No budget: every retry allowed (only `maxAttempts` bounds a request). */
export const unlimitedRetryBudget: RetryBudget = { deposit() {}, tryWithdraw: () => true }
