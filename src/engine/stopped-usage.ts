/**
 * Usage the gateway reckons itself (docs/decisions.md, "Books that balance"): for an answer whose upstream
 * reported none, or one cut short after content (the client left, the provider's stream broke off, the idle or
 * total timeout passed, the gateway shut down). The prompt as sent and the content text the client was sent are
 * counted at about four characters a token (OpenAI's rule of thumb) and one for each CJK or other wide character,
 * in one pass that allocates nothing. Not with a tokenizer: loading one costs tens of megabytes of heap and a
 * fraction of a second, which an answer's last event would wait for. Worked out once, by the session that ended,
 * so the spend settlement and the generation record charge the same amount.
 */

import { emptyUsage, type OutputItem, type Usage } from '../providers/types'
import type { ResponsesRequestBody } from './request.schemas'
import type { SessionEvent } from './session-events'

/** Characters read to count; beyond it the count is scaled by length, so a huge answer costs no more to count. */
const SAMPLE_CHARACTERS = 64 * 1024
/** About four characters a token for Latin text, one for CJK and similar scripts. */
const CHARACTERS_PER_TOKEN = 4
const FIRST_WIDE_CHARACTER = 0x2e80

/** Characters of content an event carries to the client: what the output estimate counts. */
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

/** Tokens in `text`: never 0 for some text. */
const roughTokens = (text: string): number => {
  let narrow = 0
  let wide = 0
  for (let index = 0; index < text.length; index++) {
    if (text.charCodeAt(index) >= FIRST_WIDE_CHARACTER) wide++
    else narrow++
  }
  return wide + Math.ceil(narrow / CHARACTERS_PER_TOKEN)
}

/** Tokens in a text of `length` characters whose first part is `sample`. */
const scaledTokens = (sample: string, length: number): number => {
  if (length === 0) return 0
  const counted = roughTokens(sample)
  return Math.max(1, Math.ceil(sample.length >= length ? counted : (counted * length) / Math.max(1, sample.length)))
}

/** The content text a session sent its client: its length, and its first part for the count. */
export interface DeliveredText {
  /** Adds what `event` carries to the client. */
  add(event: SessionEvent): void
  readonly characters: number
  /** Tokens the delivered text counts. */
  tokens(): number
}

export const createDeliveredText = (): DeliveredText => {
  let characters = 0
  let sample = ''
  return {
    add(event) {
      const length = contentLength(event)
      if (length === 0) return
      characters += length
      if (sample.length < SAMPLE_CHARACTERS) sample += (event as { delta: string }).delta.slice(0, SAMPLE_CHARACTERS - sample.length)
    },
    get characters() {
      return characters
    },
    tokens: () => scaledTokens(sample, characters),
  }
}

/** The prompt an input estimate counts: instructions and input as sent, in JSON. */
const promptTokens = (body: ResponsesRequestBody): number => {
  const input = JSON.stringify(body.input ?? '')
  const instructions = body.instructions ?? ''
  const length = instructions.length + input.length
  const sample = (instructions + input.slice(0, SAMPLE_CHARACTERS)).slice(0, SAMPLE_CHARACTERS)
  return scaledTokens(sample, length)
}

/** Usage of a turn that ended without the upstream reporting any: estimated from the text that went each way. */
export const estimatedUsage = (body: ResponsesRequestBody, delivered: DeliveredText): Usage => {
  const usage = emptyUsage()
  usage.input_tokens = promptTokens(body)
  usage.output_tokens = delivered.tokens()
  usage.total_tokens = usage.input_tokens + usage.output_tokens
  return usage
}

/** The content text of whole-answer output: what the output estimate counts when the upstream reported no usage. */
export const deliveredOutput = (output: readonly OutputItem[]): DeliveredText => {
  const delivered = createDeliveredText()
  const add = (text: unknown) => {
    if (typeof text === 'string' && text !== '') delivered.add({ type: 'response.output_text.delta', delta: text } as SessionEvent)
  }
  for (const item of output) {
    if (item.type === 'message') for (const part of (item as { content?: Array<{ text?: unknown; refusal?: unknown }> }).content ?? []) add(part.text ?? part.refusal)
    else if (item.type === 'function_call') add((item as { arguments?: unknown }).arguments)
    else if (item.type === 'reasoning') {
      const reasoning = item as { summary?: Array<{ text?: unknown }>; content?: Array<{ text?: unknown }> }
      for (const part of [...(reasoning.summary ?? []), ...(reasoning.content ?? [])]) add(part.text)
    }
  }
  return delivered
}
