/**
 * What a stream the client stopped used (docs/decisions.md, Usage ledger "Cancelled streams"): the upstream's
 * usage when it arrived before the stop, else an estimate at 4 characters per token from the content text the
 * client was sent and the prompt the turn sent. Worked out once, by the session that was stopped, so the spend
 * settlement and the generation record charge the same amount.
 */

import { emptyUsage, type Usage } from '../providers/types'
import type { ResponsesRequestBody } from './request.schemas'
import type { SessionEvent } from './session-events'

// OpenAI's rule of thumb for English text: about four characters per token.
const CHARACTERS_PER_TOKEN = 4

/** Tokens for `characters` of text, rounded up: any text is at least one token. */
const estimateTokens = (characters: number): number => Math.ceil(characters / CHARACTERS_PER_TOKEN)

/** Characters of content an event carries to the client: what a stopped stream's output estimate counts. */
export const contentLength = (event: SessionEvent): number => {
  switch (event.type) {
    case 'response.output_text.delta':
    case 'response.refusal.delta':
    case 'response.reasoning_text.delta':
    case 'response.reasoning_summary_text.delta':
    case 'response.function_call_arguments.delta':
      return event.delta.length
    default:
      return 0
  }
}

/** The prompt an input estimate counts: instructions and input as sent, in JSON. */
const promptLength = (body: ResponsesRequestBody): number => (body.instructions?.length ?? 0) + JSON.stringify(body.input ?? '').length

/** Usage of a turn stopped before the upstream reported any: estimated from the text that went each way. */
export const estimatedUsage = (body: ResponsesRequestBody, outputCharacters: number): Usage => {
  const usage = emptyUsage()
  usage.input_tokens = estimateTokens(promptLength(body))
  usage.output_tokens = estimateTokens(outputCharacters)
  usage.total_tokens = usage.input_tokens + usage.output_tokens
  return usage
}
