/**
 * Spend on the request path (docs/decisions.md, Credits and limits). Before any upstream call, a request
 * reserves its worst-case cost on every counter that has a limit (the key's limit, the workspace's
 * budgets, the account's credits when they are enforced), with atomic increments that go out together.
 * A counter that would pass its limit undoes the reservation and the request is refused with 402. When
 * the request ends, however it ends, its settlement adds what it really cost minus what it reserved, once,
 * to every counter it touches, limited or not, so usage is exact after settlement and a limit is passed
 * by no more than what requests in flight under-reserved. A request touches only the counters something
 * reads: the key's (GET /key), the account's total (GET /credits), the workspace's in its budgets' periods;
 * and a request on the gateway's own keys only `usage` counters, one per target and period: BYOK requests
 * keep their list price apart, in `byok` counters, which limits that include BYOK spend add to `usage`.
 */

import { timeOrderedHex } from '../core/crypto'
import { PaymentRequiredError, type GatewayError } from '../core/errors'
import { formatUsd, toNano } from '../core/money'
import type { AccountRecord } from '../repositories/accounts'
import type { ApiKeyRecord } from '../repositories/api-keys'
import {
  SPEND_WINDOWS,
  spendCounter,
  type SpendChange,
  type SpendCounter,
  type SpendMetric,
  type SpendScope,
  type SpendWindow,
} from '../repositories/spend-counters'
import type { BudgetInterval, WorkspaceRecord } from '../repositories/workspaces'
import { ruleRefusalEvent, withGuardrailRefusal } from './refusal'
import type { BilledUsage } from './billing'
import type { SessionObserver } from './observe'
import type { SpendSettings, SpendTargets } from './spend-targets'
import type { InferenceRequest } from './request'
import type { Attempt } from './routing'
import type { InferenceService } from './service'

/** Bytes of prompt JSON per token for the estimate: ordinary text runs about 4, so 3 errs on the high side. */
const BYTES_PER_TOKEN = 3
/** Output reserved for an endpoint that publishes no output limit, when the request sets none either. */
export const DEFAULT_OUTPUT_RESERVATION = 32_768

/** What a request adds: `usage`, what it is charged; `all`, that plus the list price of a BYOK request. */
interface Amounts {
  usage: number
  all: number
}
const NOTHING: Amounts = Object.freeze({ usage: 0, all: 0 })

/** One counter a request adds to, and the metric it counts. */
interface Tracked {
  counter: SpendCounter
  metric: SpendMetric
}

/** Every counter a request adds to, in a fixed order, and where each (scope, metric, window) sits in it. */
interface TrackedCounters {
  list: readonly Tracked[]
  indexOf: ReadonlyMap<string, number>
}

const METRICS: readonly SpendMetric[] = ['usage', 'byok']

const budgetWindow = (interval: BudgetInterval): SpendWindow => (interval === 'lifetime' ? 'total' : interval)

const slot = (scope: SpendScope, metric: SpendMetric, window: SpendWindow) => `${scope}:${metric}:${window}`

/** The periods a guardrail budget may reset on: a user's counters exist for those only. */
const USER_WINDOWS: readonly SpendWindow[] = ['daily', 'weekly', 'monthly']

const userId = (targets: SpendTargets) => `${targets.account.id}:${targets.key.creatorUserId}`

/** Whether the request counts its user's spend: only while a member guardrail's budget holds it (docs/decisions.md, Guardrails). */
const tracksUser = (targets: SpendTargets) => targets.guardrailBudgets?.some((budget) => budget.holder === 'user') === true

/**
 * The key's counters in both metrics and every window (GET /key reports them all), the account's total usage
 * (GET /credits), the workspace's only in the windows its budgets hold it to (nothing reads a workspace's
 * spend but its budgets; both metrics there, so switching `include_byok_in_budgets` keeps what was spent), and the
 * key's user's while a member guardrail's budget holds it.
 */
const buildTrackedCounters = (targets: SpendTargets, budgetWindows: readonly SpendWindow[], at: Date): TrackedCounters => {
  const list: Tracked[] = []
  const indexOf = new Map<string, number>()
  const track = (scope: SpendScope, id: string, metric: SpendMetric, window: SpendWindow) => {
    indexOf.set(slot(scope, metric, window), list.length)
    list.push({ counter: spendCounter(scope, id, metric, window, at), metric })
  }
  for (const metric of METRICS) for (const window of SPEND_WINDOWS) track('key', targets.key.hash, metric, window)
  for (const metric of METRICS) for (const window of budgetWindows) track('workspace', targets.workspace.id, metric, window)
  track('account', targets.account.id, 'usage', 'total')
  if (tracksUser(targets)) for (const metric of METRICS) for (const window of USER_WINDOWS) track('user', userId(targets), metric, window)
  return { list, indexOf }
}

const DAY_MS = 86_400_000
const TRACKED_CACHE_MAX = 1024
// A key's counters change names once a day: built once per key, budgets and day, not per request (and the same key
// strings each time, whose hashes the store's maps then need not compute again). Read-only once built.
const trackedCache = new Map<string, TrackedCounters>()

const trackedCounters = (targets: SpendTargets, at: Date): TrackedCounters => {
  const { budgets } = targets.workspace
  const budgetWindows = budgets.length === 0 ? [] : SPEND_WINDOWS.filter((window) => budgets.some((budget) => budgetWindow(budget.interval) === window))
  const cacheKey = `${targets.key.hash}|${targets.workspace.id}|${budgetWindows.join(',')}|${targets.account.id}|${Math.floor(at.getTime() / DAY_MS)}|${tracksUser(targets)}`
  let tracked = trackedCache.get(cacheKey)
  if (!tracked) {
    tracked = buildTrackedCounters(targets, budgetWindows, at)
    if (trackedCache.size >= TRACKED_CACHE_MAX) trackedCache.clear()
    trackedCache.set(cacheKey, tracked)
  }
  return tracked
}

const indexOf = (tracked: TrackedCounters, scope: SpendScope, metric: SpendMetric, window: SpendWindow): number => {
  const index = tracked.indexOf.get(slot(scope, metric, window))
  if (index === undefined) throw new Error(`spend: no ${scope} counter for ${metric} ${window}`)
  return index
}

const PERIOD: Record<SpendWindow, string> = {
  total: 'in total',
  daily: 'per day (UTC)',
  weekly: 'per week (UTC, from Monday)',
  monthly: 'per month (UTC)',
}

/** A limit one counter is held to, and how a refusal names it. */
interface Limit {
  /** The `usage` counter the limit holds, where the request reserves its worst case. */
  index: number
  /** The `byok` counter of the same target and period, added when the limit counts BYOK spend at the list price. */
  byokIndex: number | undefined
  /** Which worst case is reserved: `all` when BYOK spend counts. */
  counts: keyof Amounts
  limitNano: number
  /** `advice` ends with `or`: what to change before raising the limit. */
  refusal(spentNano: number, worstNano: number, advice: string): GatewayError
}

// Intern routes read `reason`; the others `metadata`.
const refusal = (limit: string, message: string) =>
  new PaymentRequiredError(message, { reason: 'payment_required', metadata: { error_type: 'payment_required', limit } })

/** What lowers a model's worst case: its output bound. */
const MODEL_ADVICE = 'lower max_output_tokens or'
/** A plugin's price is the same whatever the model answers: only leaving the plugin out lowers it. */
const PLUGIN_ADVICE = "that is the request's plugins' price before any model answers; leave the plugin out or"
/** A priced server call (a search) likewise: its price is the same whatever it finds. */
const CALL_ADVICE = 'that is the price of the call the model made; leave its tool out or'
/** A gateway's own fixed charge (a response cache hit's) is the same whatever the request asks. */
const FIXED_CHARGE_ADVICE = "that is the gateway's own charge for the answer;"


const heldCounters = (tracked: TrackedCounters, scope: SpendScope, window: SpendWindow, isByokCounted: boolean): Pick<Limit, 'index' | 'byokIndex' | 'counts'> => ({
  index: indexOf(tracked, scope, 'usage', window),
  byokIndex: isByokCounted ? indexOf(tracked, scope, 'byok', window) : undefined,
  counts: isByokCounted ? 'all' : 'usage',
})

const keyLimit = (tracked: TrackedCounters, key: ApiKeyRecord): Limit | null => {
  if (key.limitNano === null) return null
  const window: SpendWindow = key.limitReset ?? 'total'
  const limitNano = key.limitNano
  return {
    ...heldCounters(tracked, 'key', window, key.includeByokInLimit),
    limitNano,
    refusal: (spent, worst, advice) =>
      refusal(
        'key',
        `API key limit reached: the key may spend ${formatUsd(limitNano)} ${PERIOD[window]}, ${formatUsd(spent)} of it is spent, and this request ` +
          `could cost up to ${formatUsd(worst)}; ${advice} raise the key's limit`,
      ),
  }
}

const budgetLimits = (tracked: TrackedCounters, workspace: WorkspaceRecord): Limit[] =>
  workspace.budgets.map((budget) => {
    const window = budgetWindow(budget.interval)
    return {
      ...heldCounters(tracked, 'workspace', window, workspace.includeByokInBudgets),
      limitNano: budget.limitNano,
      refusal: (spent, worst, advice) =>
        refusal(
          'workspace_budget',
          `Workspace budget reached: workspace "${workspace.slug}" may spend ${formatUsd(budget.limitNano)} ${PERIOD[window]}, ` +
            `${formatUsd(spent)} of it is spent, and this request could cost up to ${formatUsd(worst)}; ${advice} raise the budget`,
        ),
    }
  })

// OpenRouter enforces a guardrail's budget per key and per member, never shared by everyone it governs.
const guardrailLimits = (tracked: TrackedCounters, targets: SpendTargets): Limit[] =>
  (targets.guardrailBudgets ?? []).map((budget) => ({
    ...heldCounters(tracked, budget.holder === 'user' ? 'user' : 'key', budget.window, budget.includeByok),
    limitNano: budget.limitNano,
    refusal: (spent, worst, advice) =>
      withGuardrailRefusal(
        new PaymentRequiredError(
          `Guardrail budget reached: guardrail "${budget.name}" lets ${budget.holder === 'user' ? "this key's user" : 'this key'} spend ${formatUsd(budget.limitNano)} ${PERIOD[budget.window]}, ` +
            `${formatUsd(spent)} of it is spent, and this request could cost up to ${formatUsd(worst)}; ${advice} raise the guardrail's limit_usd`,
          { reason: 'payment_required', metadata: { error_type: 'payment_required', limit: 'guardrail', guardrail_id: budget.guardrailId } },
        ),
        { events: [ruleRefusalEvent(budget, ['limit_usd'])] },
      ),
  }))

const creditLimit = (tracked: TrackedCounters, account: AccountRecord): Limit => ({
  ...heldCounters(tracked, 'account', 'total', false),
  limitNano: account.credits.grantedNano,
  refusal: (spent, worst, advice) =>
    refusal(
      'credits',
      `Insufficient credits: the account has ${formatUsd(Math.max(0, account.credits.grantedNano - spent))} left of ${formatUsd(account.credits.grantedNano)} ` +
        `granted, and this request could cost up to ${formatUsd(worst)}; ${advice} ask the operator for more credits`,
    ),
})

const activeLimits = (settings: SpendSettings, targets: SpendTargets, tracked: TrackedCounters): Limit[] => {
  const limits = budgetLimits(tracked, targets.workspace)
  const key = keyLimit(tracked, targets.key)
  if (key) limits.unshift(key)
  limits.push(...guardrailLimits(tracked, targets))
  if (settings.enforceCredits) limits.push(creditLimit(tracked, targets.account))
  return limits
}

const encoder = new TextEncoder()

/** Tokens the prompt may count: its JSON's UTF-8 bytes over 3 (docs/decisions.md, Credits and limits). */
export const estimatePromptTokens = (request: InferenceRequest): number => {
  const { instructions, input, tools } = request.body
  return Math.ceil(encoder.encode(JSON.stringify([instructions ?? null, input, tools ?? null])).byteLength / BYTES_PER_TOKEN)
}

/**
 * List price of `attempt` for `promptTokens` in and `outputTokens` out, rounded up to whole nano-dollars; at
 * `worst`, every prompt token at the dearer of the input and cache-write rates.
 */
const listPriceNano = (attempt: Attempt, promptTokens: number, outputTokens: number, worst = false): number => {
  const { pricing } = attempt.endpoint
  const promptPrice = worst ? Math.max(pricing.prompt, pricing.cacheWritePrompt ?? 0, pricing.cacheWrite1hPrompt ?? 0) : pricing.prompt
  return Math.ceil((promptTokens * promptPrice + outputTokens * pricing.completion + (pricing.request ?? 0)) * 1e9)
}

/** The worst case of one attempt: the whole prompt estimate (up to the context) and the most output it may write. */
const worstListNano = (attempt: Attempt, promptTokens: number, maxOutputTokens: number | null | undefined, isBatchPrompt = false): number => {
  const { contextLength, maxOutputTokens: endpointMax } = attempt.endpoint
  // A batch (embeddings) has a context per item, so the whole estimate may pass one context length.
  const prompt = isBatchPrompt ? promptTokens : Math.min(promptTokens, contextLength)
  const output = Math.min(maxOutputTokens ?? endpointMax ?? DEFAULT_OUTPUT_RESERVATION, endpointMax ?? Infinity, Math.max(0, contextLength - prompt))
  return listPriceNano(attempt, prompt, output, true)
}

/** What an attempt costing `listNano` at the list price adds to each metric (BYOK: the fee, plus the list price where BYOK counts). */
const amountsFor = (attempt: Attempt, listNano: number, byokFeeRate: number): Amounts => {
  if (attempt.credential === null) return { usage: listNano, all: listNano }
  const fee = Math.ceil(listNano * byokFeeRate)
  return { usage: fee, all: fee + listNano }
}

/** The most any planned attempt could cost, per metric: only one attempt serves, the others cost nothing. */
const worstCase = (service: InferenceService, request: InferenceRequest): Amounts => {
  const promptTokens = estimatePromptTokens(request)
  const worst = { usage: 0, all: 0 }
  for (const attempt of request.attempts) {
    const amounts = amountsFor(attempt, worstListNano(attempt, promptTokens, request.body.max_output_tokens, request.isBatchPrompt), service.byokFeeRate)
    worst.usage = Math.max(worst.usage, amounts.usage)
    worst.all = Math.max(worst.all, amounts.all)
  }
  return worst
}

/** What a served answer cost, per metric, from its priced usage. */
const billedAmounts = (usage: BilledUsage | null): Amounts => {
  if (!usage) return NOTHING
  const charged = toNano(usage.cost)
  return { usage: charged, all: charged + (usage.is_byok ? toNano(usage.cost_details.upstream_inference_cost ?? 0) : 0) }
}

/** A request's reservation, settled exactly once when the request ends. */
export interface SpendReservation {
  /** Records what the answer really cost (`null`: nothing was served). Later calls do nothing. */
  settle(usage: BilledUsage | null): void
  /** Gives the hold back with nothing charged, as `settle(null)`; resolves once the store has it, or after a bounded wait. */
  release(): Promise<void>
  /** Records a cost in USD that is no model's answer (a plugin's search). Settles as `settle` does. */
  charge(cost: number): void
  /** Settles a stream when its session ends: from its priced usage, or what the session says it used when stopped. */
  observer(): SessionObserver
}

/** What a settlement adds to one counter: the real cost, in the counter's metric. */
const settledAmount = (amounts: Amounts, metric: SpendMetric) => (metric === 'usage' ? amounts.usage : amounts.all - amounts.usage)

/**
 * A reservation's id: the hold and the settlement that ends it carry it, so the store applies the settlement once.
 * Time first, so the store's table of settled ids grows at its end.
 */
const newReservationId = () => `sp_${timeOrderedHex(16)}`

/**
 * Settles the reservation `id` once, with the real cost on every counter the request touches; the store releases
 * the reservation's hold in the same step. Queued in the gateway's spend book, which retries until it lands; a
 * settlement that charges something waits there for the request's usage record, when one is being written.
 */
const settleOnce = (service: InferenceService, id: string, requestId: string, tracked: readonly Tracked[], isHeld: () => boolean) => {
  let landed: Promise<void> | undefined
  /** Resolves once the settlement landed (at once when there was nothing to send). */
  return (amounts: Amounts): Promise<void> => {
    if (landed) return landed
    const changes: SpendChange[] = []
    for (const { counter, metric } of tracked) {
      const amount = settledAmount(amounts, metric)
      if (amount !== 0) changes.push({ counter, amount })
    }
    landed = changes.length === 0 && !isHeld() ? Promise.resolve() : service.spend.book.settle(id, changes, requestId)
    return landed
  }
}

/** Reserves `worst` (worked out only when a limit holds the request) on the request's limited counters, or throws 402. */
const reserveAmounts = async (service: InferenceService, request: InferenceRequest, worst: () => Amounts, advice: string): Promise<SpendReservation> => {
  const targets = request.spend
  const tracked = trackedCounters(targets, new Date(service.now()))
  const limits = activeLimits(service.spend, targets, tracked)
  const id = newReservationId()
  const isHeld = limits.length > 0 && (await reserve(service, id, tracked.list, limits, worst(), advice))
  const settle = settleOnce(service, id, request.requestId, tracked.list, () => isHeld)
  return {
    settle: (usage) => void settle(billedAmounts(usage)),
    release: () => waitBounded(settle(NOTHING)),
    charge: (cost) => settle(cost === 0 ? NOTHING : { usage: toNano(cost), all: toNano(cost) }),
    observer: () => ({
      // Before the finished event goes on: the usage record, written as it passes, then carries the settlement.
      beforeFinished(result) {
        void settle(billedAmounts(result.usage))
        return Promise.resolve()
      },
      onEnd(end) {
        // A stopped stream's usage is the session's own reckoning, which the generation record takes too.
        if (end.how === 'finished') settle(billedAmounts(end.result.usage))
        else settle(billedAmounts(end.how === 'stopped' ? (end.used?.usage ?? null) : null))
      },
    }),
  }
}

/**
 * The spend of a run's paid steps after its first (a server-tool loop's later turns and its priced calls), which the
 * request's own reservation does not cover. Before each later turn the holds of the step before are given back and a
 * new one holds what the run spent beyond its first turn plus the next turn's worst case; before each priced call (a
 * search) its price is held on top, until the next turn's hold. Either refuses with 402 naming the limit it would
 * pass, before anything is sent. So concurrent loops on one key pass its limit by no more than one step each
 * (docs/decisions.md, "Books that balance").
 */
export interface StepSpend {
  /** Holds the next turn; rejects with 402 before it is sent when a limit would be passed. */
  before(next: InferenceRequest, spentAfterFirst: BilledUsage): Promise<void>
  /** Holds a call's price in USD before it is spent; rejects with 402 (the call is then not run). */
  beforeCall(price: number): Promise<void>
  /** Gives the step's holds back: the request's own settlement carries what every step cost. */
  end(): void
}

export const createStepSpend = (service: InferenceService, request: InferenceRequest): StepSpend => {
  const held: SpendReservation[] = []
  // Waited for before the next hold, so that hold is judged on the counters without the step before.
  const release = async () => {
    await Promise.all(held.splice(0).map((hold) => hold.release()))
  }
  return {
    async before(next, spentAfterFirst) {
      await release()
      const spent = billedAmounts(spentAfterFirst)
      held.push(
        await reserveAmounts(
          service,
          next,
          () => {
            const worst = worstCase(service, next)
            return { usage: worst.usage + spent.usage, all: worst.all + spent.all }
          },
          MODEL_ADVICE,
        ),
      )
    },
    async beforeCall(price) {
      const priceNano = Math.ceil(price * 1e9)
      if (priceNano > 0) held.push(await reserveAmounts(service, request, () => ({ usage: priceNano, all: priceNano }), CALL_ADVICE))
    },
    end: () => void release(),
  }
}

/** Reserves the request's worst case on its limited counters, or throws 402 naming the limit it would pass. */
export const reserveSpend = (service: InferenceService, request: InferenceRequest): Promise<SpendReservation> =>
  reserveAmounts(service, request, () => worstCase(service, request), MODEL_ADVICE)

/**
 * Reserves what the request's plugins may spend before its attempts (the web plugin's search: its engine's price per
 * search), `priceNano` in all, before they run, so a limit the request would pass with them is a 402 before anything
 * is spent; `null` when they have no price. The request's own reservation, made after the plugins, lands on top of this one.
 */
export const reservePluginSpend = async (service: InferenceService, request: InferenceRequest, priceNano: number): Promise<SpendReservation | null> => {
  if (priceNano === 0) return null
  return reserveAmounts(service, request, () => ({ usage: priceNano, all: priceNano }), PLUGIN_ADVICE)
}

/**
 * Reserves a fixed charge of the gateway's own (a response cache hit, which no provider answers) on the request's
 * limited counters, or throws 402; settled with the answer's usage, as a model's answer is.
 */
export const reserveFixedCharge = (service: InferenceService, request: InferenceRequest, cost: number): Promise<SpendReservation> => {
  const nano = Math.ceil(cost * 1e9)
  return reserveAmounts(service, request, () => ({ usage: nano, all: nano }), FIXED_CHARGE_ADVICE)
}

/** How long a refusal waits for its hold to be released, so the next request sees the counter as it was. */
const RELEASE_WAIT_MS = 2_000

/** Waits for a release to land, a bounded while (the spend book keeps trying after that). */
const waitBounded = async (released: Promise<void>) => {
  let timer: ReturnType<typeof setTimeout> | undefined
  await Promise.race([released, new Promise<void>((resolve) => (timer = setTimeout(resolve, RELEASE_WAIT_MS)))])
  clearTimeout(timer)
}

/** Gives a hold back before a refusal, so the next request sees the counter as it was. */
const release = (service: InferenceService, id: string) => waitBounded(service.spend.book.settle(id, []))

/**
 * Holds the request's worst case on its limited counters under the reservation `id`, in one store step; throws 402
 * naming the limit it would pass (the hold given back first). Resolves whether anything was held.
 */
const reserve = async (service: InferenceService, id: string, tracked: readonly Tracked[], limits: Limit[], worst: Amounts, advice: string): Promise<boolean> => {
  // A request that cannot cost anything (a free endpoint) is never refused for money.
  const held = limits.filter((limit) => worst[limit.counts] > 0)
  if (held.length === 0) return false
  // Two limits may hold one counter (a key's limit and a guardrail's budget, both daily): it is reserved on once, at
  // the larger of their worst cases (one may count BYOK spend, the other not).
  const indexes = [...new Set(held.map((limit) => limit.index))]
  const amountAt = (index: number) => Math.max(...held.filter((limit) => limit.index === index).map((limit) => worst[limit.counts]))
  const { book } = service.spend
  const values = await book.hold(
    id,
    indexes.map((index) => ({ counter: tracked[index]!.counter, amount: amountAt(index) })),
  )
  const spent = held.map((limit) => values[indexes.indexOf(limit.index)]!)
  // BYOK spend is read after the hold went in: it only grows, and a settlement adds the list price in the same step
  // that releases its hold, so what is read is never less than what was spent when the hold landed.
  const byokHeld = held.flatMap((limit, position) => (limit.byokIndex === undefined ? [] : [{ position, counter: tracked[limit.byokIndex]!.counter }]))
  if (byokHeld.length > 0) {
    let byok: number[]
    try {
      byok = await book.read(byokHeld.map(({ counter }) => counter))
    } catch (error) {
      await release(service, id)
      throw error
    }
    byokHeld.forEach(({ position }, read) => (spent[position]! += byok[read]!))
  }
  // Over when this hold passed the limit, or the limit was reached already.
  const overIndex = held.findIndex((limit, position) => spent[position]! > limit.limitNano)
  if (overIndex >= 0) {
    await release(service, id)
    const amount = amountAt(held[overIndex]!.index)
    const refused = held[overIndex]!.refusal(spent[overIndex]! - amount, amount, advice)
    service.telemetry.spendRefused?.({ limit: String(refused.metadata?.limit ?? 'unknown') })
    throw refused
  }
  return true
}
