/**
 * `context-compression` (`middle-out`; docs/decisions.md, "Plugins"): per attempt, so each endpoint gets the
 * prompt its context holds and a fallback with a larger context gets the whole prompt. On by default for
 * endpoints of at most 8k tokens of context (`enabled: false` turns that off); listed, it runs on every endpoint.
 */

import type { UpstreamCall } from '../../providers/contract'
import type { InputItem } from '../../providers/types'
import type { Attempt } from '../../engine/routing'
import type { ContextCompressionPluginSettings } from './context-compression.schema'
import { recordStage, type PluginDefinition, type PluginRequest, type RequestPlugin } from './contract'
import { middleOut } from './middle-out'
import { OTHER_FAMILY_FACTOR, TOKENS_PER_ATTACHMENT, TOKENS_PER_MESSAGE, loadTokenCounter, type TokenCounter } from './token-count'

const ID = 'context-compression'

/** Endpoints with at most this much context are compressed unless the request turns the plugin off (OpenRouter's default). */
export const DEFAULT_ON_MAX_CONTEXT = 8_192

/** Room kept for the answer when the request sets no `max_output_tokens`: this, or the endpoint's own maximum if smaller. */
export const DEFAULT_ANSWER_RESERVE = 1_024

/** Whether the endpoint counts the prompt in `o200k_base`: its adapter says so for every model, or the model is OpenAI's. */
const isOpenAiFamily = (attempt: Attempt) =>
  attempt.provider.adapter.promptTokenizer === 'o200k_base' || attempt.model.slug.startsWith('openai/')

const answerReserve = (call: UpstreamCall, attempt: Attempt) => {
  const { contextLength, maxOutputTokens } = attempt.endpoint
  const reserve = call.request.max_output_tokens ?? Math.min(DEFAULT_ANSWER_RESERVE, maxOutputTokens ?? DEFAULT_ANSWER_RESERVE)
  // Never so much room for the answer that nothing is left of the prompt.
  return Math.min(reserve, Math.floor(contextLength / 2))
}

/** Tokens `items` cannot exceed: each UTF-16 unit is at most 3 UTF-8 bytes, each token at least one byte; attachments at their flat rate. */
const upperBound = (items: InputItem[], isOpenAi: boolean) => {
  const factor = isOpenAi ? 1 : OTHER_FAMILY_FACTOR
  let bound = 0
  for (const item of items) {
    const content = (item as { content?: unknown }).content
    const attachments = Array.isArray(content) ? content.filter((part: { text?: unknown; refusal?: unknown }) => typeof part.text !== 'string' && typeof part.refusal !== 'string').length : 0
    bound += TOKENS_PER_MESSAGE + attachments * TOKENS_PER_ATTACHMENT + JSON.stringify(item).length * 3 * factor
  }
  return bound
}

const asItems = (input: UpstreamCall['request']['input']): InputItem[] => (typeof input === 'string' ? [{ role: 'user', content: input } as InputItem] : input)

export const contextCompression: PluginDefinition<ContextCompressionPluginSettings> = {
  id: ID,
  create(settings, { body }): RequestPlugin {
    const isListed = settings.enabled === true || (settings.enabled === undefined && (body.plugins ?? []).some((plugin) => plugin.id === ID))
    const applies = (attempt: Attempt) => isListed || attempt.endpoint.contextLength <= DEFAULT_ON_MAX_CONTEXT
    const counters = new Map<boolean, TokenCounter>()
    // By family: the same item counts differently for an OpenAI endpoint and for another.
    const caches = new Map<boolean, WeakMap<object, number>>([
      [true, new WeakMap()],
      [false, new WeakMap()],
    ])
    return {
      id: ID,
      async beforeAttempts(request) {
        // The tokenizer is loaded only for a request one of whose endpoints may need it.
        for (const attempt of request.attempts) {
          const family = isOpenAiFamily(attempt)
          if (applies(attempt) && !counters.has(family)) counters.set(family, await loadTokenCounter(family))
        }
      },
      forAttempt(call: UpstreamCall, attempt: Attempt, request: PluginRequest): UpstreamCall {
        const family = isOpenAiFamily(attempt)
        const counter = counters.get(family)
        if (!applies(attempt) || !counter) return call
        const { contextLength } = attempt.endpoint
        const fixed =
          counter.count(call.request.instructions ?? '') + (call.request.tools && call.request.tools.length > 0 ? counter.count(JSON.stringify(call.request.tools)) : 0)
        const reserve = answerReserve(call, attempt)
        const maxInputTokens = Math.max(0, contextLength - reserve - fixed)
        const maxMessages = attempt.provider.adapter.maxInputMessages
        const items = asItems(call.request.input)
        // Most prompts are far below the context: a token is at least one UTF-8 byte, so an upper bound from the
        // text's length spares counting them (a listed plugin counts anyway, to report the prompt's size).
        if (!isListed && maxMessages === undefined && upperBound(items, family) <= maxInputTokens) return call
        const result = middleOut(items, { maxInputTokens, ...(maxMessages ? { maxMessages } : {}) }, counter, caches.get(family))
        const where = { provider: attempt.provider.descriptor.id, model: attempt.model.slug, context_length: contextLength }
        if (result.input === items) {
          if (isListed) recordStage(request, ID, `the prompt fits ${attempt.model.slug} via ${where.provider} (${result.tokensBefore + fixed} of ${contextLength - reserve} tokens)`, { ...where, engine: 'middle-out', compressed: false, prompt_tokens: result.tokensBefore + fixed })
          return call
        }
        const dropped = result.droppedMessages
        const truncated = result.truncatedMessages
        recordStage(
          request,
          ID,
          `${dropped} message${dropped === 1 ? '' : 's'} dropped and ${truncated} truncated from the middle to fit ${attempt.model.slug} via ${where.provider}` +
            (result.fits ? '' : '; the prompt still does not fit'),
          {
            ...where,
            engine: 'middle-out',
            compressed: true,
            prompt_tokens_before: result.tokensBefore + fixed,
            prompt_tokens_after: result.tokensAfter + fixed,
            dropped_messages: dropped,
            truncated_messages: truncated,
            fits: result.fits,
          },
        )
        return { ...call, request: { ...call.request, input: result.input } }
      },
    }
  },
}
