/**
 * Spend on the request path (docs/decisions.md, Credits and limits). Before any upstream call, a request
 * reserves its worst-case cost on every counter that has a limit (the key's limit, the workspace's
 * budgets, the account's credits when they are enforced), with atomic increments that go out together.
 * A counter that would pass its limit undoes the reservation and the request is refused with 402. When
 * the request ends, however it ends, its settlement adds what it really cost minus what it reserved, once,
 * to every counter it touches, limited or not, so usage is exact after settlement and a limit is passed
 * by no more than what requests in flight under-reserved.
 */

import { PaymentRequiredError, type GatewayError } from '../core/errors'
import { formatUsd, toNano } from '../core/money'
import type { AccountRecord } from '../repositories/accounts'
import type { ApiKeyRecord } from '../repositories/api-keys'
import { SPEND_WINDOWS, spendCounter, type SpendChange, type SpendCounter, type SpendMetric, type SpendWindow } from '../repositories/spend-counters'
import type { BudgetInterval, WorkspaceRecord } from '../repositories/workspaces'
import type { BilledUsage } from './billing'
import type { SessionObserver } from './observe'
import type { SpendSettings, SpendTargets } from './spend-targets'
import type { InferenceRequest } from './request'
import type { Attempt } from './routing'
import type { InferenceService } from './service'
import type { ServedBy } from './session-events'

/** Bytes of prompt JSON per token for the estimate: ordinary text runs about 4, so 3 errs on the high side. */
const BYTES_PER_TOKEN = 3
/** Output reserved for an endpoint that publishes no output limit, when the request sets none either. */
export const DEFAULT_OUTPUT_RESERVATION = 32_768

type Amounts = Record<SpendMetric, number>
const NOTHING: Amounts = Object.freeze({ usage: 0, all: 0 })

/** Every counter a request adds to, in a fixed order: the key's, the workspace's (each metric × window), the account's. */
interface Tracked {
  counter: SpendCounter
  metric: SpendMetric
}

const METRICS: readonly SpendMetric[] = ['usage', 'all']

const buildTrackedCounters = (targets: SpendTargets, at: Date): readonly Tracked[] => [
  ...METRICS.flatMap((metric) => SPEND_WINDOWS.map((window) => ({ counter: spendCounter('key', targets.key.hash, metric, window, at), metric }))),
  ...METRICS.flatMap((metric) => SPEND_WINDOWS.map((window) => ({ counter: spendCounter('workspace', targets.workspace.id, metric, window, at), metric }))),
  { counter: spendCounter('account', targets.account.id, 'usage', 'total', at), metric: 'usage' },
]

const DAY_MS = 86_400_000
const TRACKED_CACHE_MAX = 1024
// A key's 17 counters change names once a day: built once per key and day, not per request (and the same key
// strings each time, whose hashes the store's maps then need not compute again). Read-only once built.
const trackedCache = new Map<string, readonly Tracked[]>()

const trackedCounters = (targets: SpendTargets, at: Date): readonly Tracked[] => {
  const cacheKey = `${targets.key.hash}|${targets.workspace.id}|${targets.account.id}|${Math.floor(at.getTime() / DAY_MS)}`
  let tracked = trackedCache.get(cacheKey)
  if (!tracked) {
    tracked = buildTrackedCounters(targets, at)
    if (trackedCache.size >= TRACKED_CACHE_MAX) trackedCache.clear()
    trackedCache.set(cacheKey, tracked)
  }
  return tracked
}

const counterIndex = (scope: 'key' | 'workspace', metric: SpendMetric, window: SpendWindow) =>
  (scope === 'workspace' ? METRICS.length * SPEND_WINDOWS.length : 0) + METRICS.indexOf(metric) * SPEND_WINDOWS.length + SPEND_WINDOWS.indexOf(window)
const ACCOUNT_USAGE_INDEX = 2 * METRICS.length * SPEND_WINDOWS.length

const PERIOD: Record<SpendWindow, string> = {
  total: 'in total',
  daily: 'per day (UTC)',
  weekly: 'per week (UTC, from Monday)',
  monthly: 'per month (UTC)',
}

/** A limit one counter is held to, and how a refusal names it. */
interface Limit {
  index: number
  limitNano: number
  refusal(spentNano: number, worstNano: number): GatewayError
}

// Intern routes read `reason`; the others `metadata`.
const refusal = (limit: string, message: string) =>
  new PaymentRequiredError(message, { reason: 'payment_required', metadata: { error_type: 'payment_required', limit } })

const ADVICE = 'lower max_output_tokens or'

const keyLimit = (key: ApiKeyRecord): Limit | null => {
  if (key.limitNano === null) return null
  const window: SpendWindow = key.limitReset ?? 'total'
  const limitNano = key.limitNano
  return {
    index: counterIndex('key', key.includeByokInLimit ? 'all' : 'usage', window),
    limitNano,
    refusal: (spent, worst) =>
      refusal(
        'key',
        `API key limit reached: the key may spend ${formatUsd(limitNano)} ${PERIOD[window]}, ${formatUsd(spent)} of it is spent, and this request ` +
          `could cost up to ${formatUsd(worst)}; ${ADVICE} raise the key's limit`,
      ),
  }
}

const budgetWindow = (interval: BudgetInterval): SpendWindow => (interval === 'lifetime' ? 'total' : interval)

const budgetLimits = (workspace: WorkspaceRecord): Limit[] =>
  workspace.budgets.map((budget) => {
    const window = budgetWindow(budget.interval)
    return {
      index: counterIndex('workspace', workspace.includeByokInBudgets ? 'all' : 'usage', window),
      limitNano: budget.limitNano,
      refusal: (spent, worst) =>
        refusal(
          'workspace_budget',
          `Workspace budget reached: workspace "${workspace.slug}" may spend ${formatUsd(budget.limitNano)} ${PERIOD[window]}, ` +
            `${formatUsd(spent)} of it is spent, and this request could cost up to ${formatUsd(worst)}; ${ADVICE} raise the budget`,
        ),
    }
  })

const creditLimit = (account: AccountRecord): Limit => ({
  index: ACCOUNT_USAGE_INDEX,
  limitNano: account.credits.grantedNano,
  refusal: (spent, worst) =>
    refusal(
      'credits',
      `Insufficient credits: the account has ${formatUsd(Math.max(0, account.credits.grantedNano - spent))} left of ${formatUsd(account.credits.grantedNano)} ` +
        `granted, and this request could cost up to ${formatUsd(worst)}; ${ADVICE} ask the operator for more credits`,
    ),
})

const activeLimits = (settings: SpendSettings, targets: SpendTargets): Limit[] => {
  const limits = budgetLimits(targets.workspace)
  const key = keyLimit(targets.key)
  if (key) limits.unshift(key)
  if (settings.enforceCredits) limits.push(creditLimit(targets.account))
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
  const promptPrice = worst ? Math.max(pricing.prompt, pricing.cacheWritePrompt ?? 0) : pricing.prompt
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
  /** Settles a stream when its session ends: from its priced usage, or estimated when the client left mid-answer. */
  observer(): SessionObserver
}

const settleOnce = (service: InferenceService, request: InferenceRequest, tracked: readonly Tracked[], reserved: number[]) => {
  let isSettled = false
  return (amounts: Amounts) => {
    if (isSettled) return
    isSettled = true
    const changes: SpendChange[] = []
    tracked.forEach(({ counter, metric }, index) => {
      const amount = amounts[metric] - reserved[index]!
      if (amount !== 0) changes.push({ counter, amount })
    })
    if (changes.length === 0) return
    const { pending } = service.spend
    const writing = request.spend.repository.add(changes).then(
      () => {},
      (error: unknown) =>
        // The counters keep the reservation; the amounts let an operator correct them by hand.
        service.logger.error('spend settlement failed', {
          requestId: request.requestId,
          keyHash: request.spend.key.hash.slice(0, 8),
          changes: changes.map((change) => ({ counter: change.counter.key.replace(request.spend.key.hash, request.spend.key.hash.slice(0, 8)), amountNano: change.amount })),
          error,
        }),
    )
    pending.add(writing)
    void writing.finally(() => pending.delete(writing))
  }
}

const isServedAttempt = (servedBy: ServedBy) => (attempt: Attempt) =>
  attempt.model.slug === servedBy.model && attempt.provider.descriptor.id === servedBy.provider && (attempt.credential !== null) === servedBy.isByok

/**
 * A stream the client left before its end carries no usage: it is charged as the served endpoint would
 * bill it, for the prompt estimate and about one token per 3 characters of what was streamed.
 */
const abandonedAmounts = (service: InferenceService, request: InferenceRequest, servedBy: ServedBy, streamedCharacters: number): Amounts => {
  const attempt = request.attempts.find(isServedAttempt(servedBy))
  if (!attempt) return NOTHING
  const promptTokens = Math.min(estimatePromptTokens(request), attempt.endpoint.contextLength)
  const listNano = listPriceNano(attempt, promptTokens, Math.ceil(streamedCharacters / BYTES_PER_TOKEN))
  return amountsFor(attempt, listNano, service.byokFeeRate)
}

/** Reserves the request's worst case on its limited counters, or throws 402 naming the limit it would pass. */
export const reserveSpend = async (service: InferenceService, request: InferenceRequest): Promise<SpendReservation> => {
  const targets = request.spend
  const tracked = trackedCounters(targets, new Date(service.now()))
  const reserved = tracked.map(() => 0)
  const limits = activeLimits(service.spend, targets)
  if (limits.length > 0) await reserve(service, request, tracked, reserved, limits)
  const settle = settleOnce(service, request, tracked, reserved)
  return {
    settle: (usage) => settle(billedAmounts(usage)),
    observer() {
      let servedBy: ServedBy | null = null
      let streamedCharacters = 0
      return {
        onEvent(event) {
          switch (event.type) {
            case 'started':
              servedBy = event.servedBy
              return
            case 'response.output_text.delta':
            case 'response.refusal.delta':
            case 'response.reasoning_text.delta':
            case 'response.reasoning_summary_text.delta':
            case 'response.function_call_arguments.delta':
              streamedCharacters += event.delta.length
          }
        },
        onEnd(end) {
          if (end.how === 'finished') settle(billedAmounts(end.result.usage))
          else settle(servedBy ? abandonedAmounts(service, request, servedBy, streamedCharacters) : NOTHING)
        },
      }
    },
  }
}

const reserve = async (service: InferenceService, request: InferenceRequest, tracked: readonly Tracked[], reserved: number[], limits: Limit[]) => {
  const worst = worstCase(service, request)
  // A request that cannot cost anything (a free endpoint) is never refused for money.
  const held = limits.filter((limit) => worst[tracked[limit.index]!.metric] > 0)
  if (held.length === 0) return
  const changes = held.map((limit) => ({ counter: tracked[limit.index]!.counter, amount: worst[tracked[limit.index]!.metric] }))
  const { repository } = request.spend
  const results = await Promise.allSettled(changes.map((change) => repository.add([change])))
  const undo = () =>
    repository
      .add(changes.filter((_, index) => results[index]!.status === 'fulfilled').map((change) => ({ counter: change.counter, amount: -change.amount })))
      .catch((error: unknown) => service.logger.error('spend reservation could not be undone', { requestId: request.requestId, error }))
  const failed = results.find((result) => result.status === 'rejected')
  if (failed) {
    await undo()
    throw failed.reason
  }
  // Over when this reservation passed the limit, or the limit was reached already.
  const overIndex = held.findIndex((limit, index) => (results[index] as PromiseFulfilledResult<number[]>).value[0]! > limit.limitNano)
  if (overIndex >= 0) {
    await undo()
    const limit = held[overIndex]!
    const amount = changes[overIndex]!.amount
    throw limit.refusal((results[overIndex] as PromiseFulfilledResult<number[]>).value[0]! - amount, amount)
  }
  held.forEach((limit, index) => (reserved[limit.index] = changes[index]!.amount))
}
