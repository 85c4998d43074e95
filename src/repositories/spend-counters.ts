/**
 * Spend counters: what API keys, workspaces and accounts spent, in whole nano-dollars (src/core/money.ts),
 * over the storage contract's atomic expiring counters, so every gateway process on one store counts into
 * the same totals. Each window has its own counter, named by the UTC calendar period it covers
 * (`d2025-03-14`, `w2025-03-10` for the week starting that Monday, `m2025-03`, `total`): a limit resets when
 * the calendar moves on to a new name, not when a timer fires. The expiry only clears old periods away.
 */

import type { StorageDriver } from '../storage/contract'

export type SpendWindow = 'total' | 'daily' | 'weekly' | 'monthly'
export const SPEND_WINDOWS: readonly SpendWindow[] = ['total', 'daily', 'weekly', 'monthly']

/**
 * `usage`: what was charged to credits (for a BYOK request, the gateway's fee). `byok`: what BYOK requests cost at
 * the list price, which limits that include BYOK spend add to `usage`. A request on the gateway's own keys touches
 * only `usage` counters.
 */
export type SpendMetric = 'usage' | 'byok'

/** `user`: the user a key acts for, within its account (id `<account>:<user>`), counted for member guardrail budgets. */
export type SpendScope = 'key' | 'workspace' | 'account' | 'user'

const DAY_MS = 86_400_000

// Each counter outlives its period (the first increment may come at the period's first instant); `total` never resets.
const TTL_MS: Record<SpendWindow, number> = {
  total: 100 * 366 * DAY_MS,
  daily: 2 * DAY_MS,
  weekly: 8 * DAY_MS,
  monthly: 32 * DAY_MS,
}

const isoDate = (time: number) => new Date(time).toISOString().slice(0, 10)

/** The UTC midnight that starts the period of `window` holding `at` (weeks start on Monday); 0 for `total`. */
export const windowStart = (window: SpendWindow, at: Date): number => {
  const year = at.getUTCFullYear()
  const month = at.getUTCMonth()
  const day = at.getUTCDate()
  switch (window) {
    case 'total':
      return 0
    case 'daily':
      return Date.UTC(year, month, day)
    case 'weekly':
      return Date.UTC(year, month, day - ((at.getUTCDay() + 6) % 7))
    case 'monthly':
      return Date.UTC(year, month, 1)
  }
}

/** The name of the period of `window` holding `at`. */
export const windowStamp = (window: SpendWindow, at: Date): string => {
  if (window === 'total') return 'total'
  const start = isoDate(windowStart(window, at))
  return window === 'daily' ? `d${start}` : window === 'weekly' ? `w${start}` : `m${start.slice(0, 7)}`
}

/** One counter: its key in the store and the expiry it is created with. */
export interface SpendCounter {
  key: string
  ttlMs: number
}

export const spendCounter = (scope: SpendScope, id: string, metric: SpendMetric, window: SpendWindow, at: Date): SpendCounter => ({
  key: `spend:${scope}:${id}:${metric}:${windowStamp(window, at)}`,
  ttlMs: TTL_MS[window],
})

/** Amounts per window, in nano-dollars. */
export type WindowAmounts = Record<SpendWindow, number>

/** A key's spend in every window: `usage`, and `all` (usage plus BYOK spend at the list price). */
export interface KeySpend {
  usage: WindowAmounts
  all: WindowAmounts
}

export interface SpendChange {
  counter: SpendCounter
  /** Nano-dollars; negative to give back. */
  amount: number
}

export const createSpendRepository = (storage: StorageDriver) => {
  /**
   * Adds every change at once and resolves with each counter's new value: in one call where the driver
   * batches them (the file driver syncs its journal once), else as concurrent increments (one round trip's
   * wait on Redis, parallel statements on SQL pools).
   */
  const add = async (changes: readonly SpendChange[]): Promise<number[]> => {
    if (storage.incrementMany && changes.length > 1) {
      const results = await storage.incrementMany(changes.map(({ counter, amount }) => ({ key: counter.key, amount, ttlMs: counter.ttlMs })))
      return results.map((result) => result.value)
    }
    return Promise.all(changes.map(async ({ counter, amount }) => (await storage.increment(counter.key, amount, counter.ttlMs)).value))
  }

  // The contract has no plain read: adding nothing reads the counter (and starts it at 0 when absent).
  const read = (counters: readonly SpendCounter[]) => add(counters.map((counter) => ({ counter, amount: 0 })))

  return {
    add,
    read,

    /** What the key `hash` spent, per window and metric, in the periods holding `at`. */
    async keySpend(hash: string, at: Date): Promise<KeySpend> {
      const counters = (['usage', 'byok'] as const).flatMap((metric) => SPEND_WINDOWS.map((window) => spendCounter('key', hash, metric, window, at)))
      const values = await read(counters)
      const amounts = (value: (index: number) => number) => Object.fromEntries(SPEND_WINDOWS.map((window, index) => [window, value(index)])) as WindowAmounts
      return { usage: amounts((index) => values[index]!), all: amounts((index) => values[index]! + values[SPEND_WINDOWS.length + index]!) }
    },

    /** Everything the account spent of its credits, ever. */
    async accountUsage(accountId: string, at: Date): Promise<number> {
      const [value] = await read([spendCounter('account', accountId, 'usage', 'total', at)])
      return value!
    },
  }
}

export type SpendRepository = ReturnType<typeof createSpendRepository>
