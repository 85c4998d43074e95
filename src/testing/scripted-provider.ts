/**
 * A scripted provider: an upstream model whose answers the test writes, one for every call, a queue of
 * them, or a function of the request. It records each call so tests can assert what the model was asked.
 */

import type { ResponsesRequest, Tool } from '../providers/types'
import { planAnswer, type AnswerPlan, type ScriptedAnswer } from './script'

/** One call the gateway made to a scripted provider. */
export interface ScriptedCall {
  /** The provider id the gateway called it by. */
  provider: string
  /** The endpoint's upstream model id. */
  model: string
  /** The request as the gateway passed it upstream (`user` and `safety_identifier` stay behind, as for every provider). */
  request: ResponsesRequest
  input: ResponsesRequest['input']
  /** The request's tools; empty when it has none. */
  tools: Tool[]
  /** Whether the gateway asked for a streamed answer. */
  stream: boolean
  /** The key the gateway used: the provider's shared key, or the caller's BYOK key. */
  apiKey: string
  /** The keyed hash the gateway sends in place of the caller's `user`. */
  endUserId?: string
  /** Aborts when the gateway gives up on the exchange before its end (client gone, timeout, error answer). */
  signal: AbortSignal
}

/** An answer, or a function of the call that returns one. */
export type ScriptedReply = ScriptedAnswer | ((call: ScriptedCall) => ScriptedAnswer | PromiseLike<ScriptedAnswer>)

/** What a scripted provider answers, and the key the gateway holds for it. */
export interface ScriptedProviderOptions {
  /** The answer to every call (after `replies` ran out). */
  reply?: ScriptedReply
  /** One answer per call, in order. A call with none left (and no `reply`) fails with a 500 that says so. */
  replies?: readonly ScriptedReply[]
  /** The shared key the gateway holds for this provider; `null` for none, so only BYOK keys can call it. */
  apiKey?: string | null
  /** The name error messages use (default: the provider id). */
  displayName?: string
  /**
   * Provider tool types (OpenAI's `web_search`, `tool_search`, …) this provider takes as they are, as a real
   * adapter declares them (`ProviderAdapter.providerTools`); none by default, so routing refuses them.
   */
  providerTools?: readonly string[]
}

export const SCRIPTED = Symbol.for('modelgate.testing.scripted')

/** A scripted upstream model and the calls it received. */
export interface ScriptedProvider {
  /** Every call so far, oldest first. */
  readonly calls: readonly ScriptedCall[]
  /** The most recent call. */
  readonly lastCall: ScriptedCall | undefined
  /** Resolves with the next call the gateway makes. */
  nextCall(): Promise<ScriptedCall>
  /** The shared key, or `null` for none. */
  readonly apiKey: string | null
  readonly displayName: string | undefined
  readonly providerTools: readonly string[] | undefined
  /** For the kit's transport: records the call and plans its answer. */
  readonly [SCRIPTED]: (call: ScriptedCall) => Promise<AnswerPlan>
}

export const DEFAULT_SCRIPTED_KEY = 'scripted-shared-key'

export const isScriptedProvider = (value: unknown): value is ScriptedProvider =>
  typeof value === 'object' && value !== null && typeof (value as Record<symbol, unknown>)[SCRIPTED] === 'function'

// Fixed answers are checked once, when the provider is made, so a mistake fails where it was written.
const prepared = (reply: ScriptedReply): ((call: ScriptedCall) => Promise<AnswerPlan>) => {
  if (typeof reply === 'function') return async (call) => planAnswer(await reply(call))
  const plan = planAnswer(reply)
  return async () => plan
}

/**
 * Creates a scripted provider. Hand it to `createTestGateway({ providers: { id: provider } })`.
 * @example
 * const model = scriptedProvider({ reply: [{ type: 'text', text: ['Hello', ', world'] }, { type: 'usage', inputTokens: 5, outputTokens: 3 }] })
 * const flaky = scriptedProvider({ replies: [[{ type: 'http_error', status: 429, retryAfter: 2 }], 'Second time lucky'] })
 * const echo = scriptedProvider({ reply: (call) => `You sent ${JSON.stringify(call.input)}` })
 */
export const scriptedProvider = (options: ScriptedProviderOptions = {}): ScriptedProvider => {
  const queue = (options.replies ?? []).map(prepared)
  const fallback = options.reply === undefined ? undefined : prepared(options.reply)
  const calls: ScriptedCall[] = []
  const waiting: Array<(call: ScriptedCall) => void> = []
  return {
    calls,
    get lastCall() {
      return calls.at(-1)
    },
    nextCall: () => new Promise((resolve) => waiting.push(resolve)),
    apiKey: options.apiKey === undefined ? DEFAULT_SCRIPTED_KEY : options.apiKey,
    displayName: options.displayName,
    providerTools: options.providerTools,
    [SCRIPTED]: (call) => {
      calls.push(call)
      for (const resolve of waiting.splice(0)) resolve(call)
      const answer = queue.shift() ?? fallback
      if (!answer) {
        const scripted = options.replies?.length ?? 0
        throw new TypeError(`modelgate/testing: scripted provider "${call.provider}" has no answer for call ${calls.length} (${scripted} scripted, and no reply for the rest)`)
      }
      return answer(call)
    },
  }
}
