/**
 * Spend counters: what API keys, workspaces and accounts spent, in whole nano-dollars (src/core/money.ts),
 * over the storage contract's tallies, so every gateway process on one store counts into the same totals. Each
 * window has its own counter, named by the UTC calendar period it covers (`d2025-03-14`, `w2025-03-10` for the week starting that Monday, `m2025-03`, `total`): a limit resets when
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

const WINDOW_OF_STAMP: Record<string, SpendWindow> = { d: 'daily', w: 'weekly', m: 'monthly' }

/** The counter a key names (one `spendCounter` made), with the expiry of its window: for settlements sent again from a record. */
export const counterOfKey = (key: string): SpendCounter => {
  const stamp = key.slice(key.lastIndexOf(':') + 1)
  const window = stamp === 'total' ? 'total' : WINDOW_OF_STAMP[stamp[0] ?? '']
  if (window === undefined) throw new TypeError(`spend: ${key} names no spend counter`)
  return { key, ttlMs: TTL_MS[window] }
}

/** Amounts per window, in nano-dollars. */
export type WindowAmounts = Record<SpendWindow, number>

/** A key's spend in every window: `usage`, and `all` (usage plus BYOK spend at the list price). */
export interface KeySpend {
  usage: WindowAmounts
  all: WindowAmounts
}

export interface SpendChange {
  counter: SpendCounter
  /** Nano-dollars. */
  amount: number
}

/** A reservation's hold on the counters its limits read. */
export interface SpendHold {
  id: string
  /** The gateway process that renews it. */
  owner: string
  leaseMs: number
  changes: readonly SpendChange[]
}

/** What a reservation really cost, on every counter it touches; applied once per id, releasing the hold of that id. */
export interface SpendSettlement {
  id: string
  changes: readonly SpendChange[]
}

const toTallyChanges = (changes: readonly SpendChange[]) => changes.map(({ counter, amount }) => ({ key: counter.key, amount, ttlMs: counter.ttlMs }))

/**
 * Spend counters are the store's tallies (src/storage/contract.ts): they move only by leased holds and by
 * settlements applied once per id, so a settlement sent again after a fault changes nothing and a hold whose
 * process died is released when its lease runs out.
 */
export const createSpendRepository = (storage: StorageDriver) => {
  const read = (counters: readonly SpendCounter[]) => storage.readTallies(counters.map((counter) => counter.key))

  return {
    /** Holds `changes` under a lease and resolves with each counter's new value; one atomic step. */
    async hold(hold: SpendHold): Promise<number[]> {
      const results = await storage.hold({ id: hold.id, owner: hold.owner, leaseMs: hold.leaseMs, changes: toTallyChanges(hold.changes) })
      return results.map((result) => result.value)
    },

    /** Applies settlements, each once per id: the batch in one store call. */
    settle: (settlements: readonly SpendSettlement[]): Promise<void> =>
      storage.settle(settlements.map((settlement) => ({ id: settlement.id, changes: toTallyChanges(settlement.changes) }))),

    /** Extends the leases of the holds among `ids`; resolves with how many are still held. */
    renew: (ids: readonly string[], leaseMs: number): Promise<number> => storage.renewHolds(ids, leaseMs),

    /** Releases up to `limit` holds whose lease ran out, whoever made them. */
    releaseExpired: (limit: number): Promise<number> => storage.releaseExpiredHolds(limit),

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
