/**
 * Middle-out compression of a prompt (OpenRouter's `middle-out`): the conversation is cut into turns (a message
 * with the calls, results and reasoning that follow it, so a tool call never loses its result), and turns are
 * dropped from the middle outwards until the prompt fits; the first and the last turn always stay. If it still
 * does not fit, the longest texts left are cut in their middle. A message-count limit (Anthropic's 1,000) keeps
 * half the turns' items from the start and half from the end.
 */

import type { InputItem } from '../../providers/types'
import { TOKENS_PER_ATTACHMENT, TOKENS_PER_MESSAGE, type TokenCounter } from './token-count'

export interface MiddleOutLimits {
  /** Tokens the input items may take (the context minus instructions, tools and the room kept for the answer). */
  maxInputTokens: number
  /** Items the upstream accepts at most; none when absent. */
  maxMessages?: number
}

export interface MiddleOutResult {
  input: InputItem[]
  tokensBefore: number
  tokensAfter: number
  droppedMessages: number
  truncatedMessages: number
  /** Whether the input now fits `maxInputTokens`. */
  fits: boolean
}

type Part = Record<string, unknown> & { type?: string }
type Item = Record<string, unknown> & { type?: string }

const textOf = (part: Part): string | undefined => (typeof part.text === 'string' ? part.text : typeof part.refusal === 'string' ? part.refusal : undefined)

/** An item's tokens: its texts counted, each attachment at a flat rate. */
export const itemTokens = (item: InputItem, counter: TokenCounter): number => {
  const value = item as Item
  if (value.type === undefined || value.type === 'message') {
    const content = value.content
    if (typeof content === 'string') return TOKENS_PER_MESSAGE + counter.count(content)
    if (!Array.isArray(content)) return TOKENS_PER_MESSAGE
    return content.reduce<number>((sum, part: Part) => {
      const text = textOf(part)
      return sum + (text === undefined ? TOKENS_PER_ATTACHMENT : counter.count(text))
    }, TOKENS_PER_MESSAGE)
  }
  if (value.type === 'function_call') return TOKENS_PER_MESSAGE + counter.count(`${String(value.name)} ${String(value.arguments)}`)
  if (value.type === 'function_call_output') {
    const output = value.output
    return TOKENS_PER_MESSAGE + (typeof output === 'string' ? counter.count(output) : counter.count(JSON.stringify(output)))
  }
  // Reasoning and other items: what they say, as JSON text (an upper bound for encrypted content).
  return TOKENS_PER_MESSAGE + counter.count(JSON.stringify(value))
}

interface Turn {
  items: InputItem[]
  tokens: number
}

const isMessage = (item: InputItem) => {
  const type = (item as Item).type
  return type === undefined || type === 'message'
}

/** Items cut into turns: each message starts one; calls, their results and reasoning join the turn before them. */
const turnsOf = (input: InputItem[], counter: TokenCounter, cache: WeakMap<object, number> | undefined): Turn[] => {
  const turns: Turn[] = []
  for (const item of input) {
    let tokens = cache?.get(item)
    if (tokens === undefined) {
      tokens = itemTokens(item, counter)
      cache?.set(item, tokens)
    }
    const last = turns.at(-1)
    if (last && !isMessage(item)) {
      last.items.push(item)
      last.tokens += tokens
    } else turns.push({ items: [item], tokens })
  }
  return turns
}

const sum = (turns: Turn[]) => turns.reduce((total, turn) => total + turn.tokens, 0)

/** Keeps whole turns from both ends, half of `maxMessages` items each, dropping those in between. */
const withinMessageCount = (turns: Turn[], maxMessages: number): Turn[] => {
  const items = turns.reduce((total, turn) => total + turn.items.length, 0)
  if (items <= maxMessages) return turns
  const half = Math.floor(maxMessages / 2)
  const head: Turn[] = []
  let headItems = 0
  for (const turn of turns) {
    if (headItems + turn.items.length > half) break
    head.push(turn)
    headItems += turn.items.length
  }
  const tail: Turn[] = []
  let tailItems = 0
  for (let index = turns.length - 1; index >= head.length; index--) {
    const turn = turns[index]!
    if (tailItems + turn.items.length > maxMessages - headItems) break
    tail.unshift(turn)
    tailItems += turn.items.length
  }
  return [...head, ...tail]
}

/** Cuts the middle of the longest texts of `turns` until `excess` tokens are gone (or nothing is left to cut). */
const truncateTexts = (turns: Turn[], excess: number, counter: TokenCounter): number => {
  let truncated = 0
  // Each text at most once, longest first: the cut's marker costs a few tokens, so short texts are not worth it.
  const candidates: Array<{ turn: Turn; index: number; part?: number; text: string; tokens: number }> = []
  for (const turn of turns) {
    for (const [index, item] of turn.items.entries()) {
      const content = (item as Item).content
      if (typeof content === 'string') candidates.push({ turn, index, text: content, tokens: counter.count(content) })
      else if (Array.isArray(content)) {
        for (const [part, value] of content.entries()) {
          const text = typeof (value as Part).text === 'string' ? ((value as Part).text as string) : undefined
          if (text !== undefined) candidates.push({ turn, index, part, text, tokens: counter.count(text) })
        }
      } else if ((item as Item).type === 'function_call_output' && typeof (item as Item).output === 'string') {
        const text = (item as Item).output as string
        candidates.push({ turn, index, text, tokens: counter.count(text) })
      }
    }
  }
  candidates.sort((left, right) => right.tokens - left.tokens)
  const MARKER_TOKENS = 20
  for (const candidate of candidates) {
    if (excess <= 0) break
    const keep = candidate.tokens - excess - MARKER_TOKENS
    const cut = counter.truncateMiddle(candidate.text, Math.max(0, keep))
    if (cut === candidate.text) continue
    const saved = candidate.tokens - counter.count(cut)
    if (saved <= 0) continue
    excess -= saved
    candidate.turn.tokens -= saved
    truncated++
    const item = candidate.turn.items[candidate.index] as Item
    let replaced: Item
    if (candidate.part === undefined) replaced = item.type === 'function_call_output' ? { ...item, output: cut } : { ...item, content: cut }
    else replaced = { ...item, content: (item.content as Part[]).map((part, position) => (position === candidate.part ? { ...part, text: cut } : part)) }
    candidate.turn.items[candidate.index] = replaced as InputItem
  }
  return truncated
}

/**
 * The input compressed to fit `limits`; the same items when they already fit. `cache` keeps each item's count
 * across the attempts and turns of one request (its items are the same objects every time).
 */
export const middleOut = (input: InputItem[], limits: MiddleOutLimits, counter: TokenCounter, cache?: WeakMap<object, number>): MiddleOutResult => {
  const original = turnsOf(input, counter, cache)
  const tokensBefore = sum(original)
  let turns = limits.maxMessages === undefined ? original : withinMessageCount(original, limits.maxMessages)
  let total = sum(turns)
  // The first and last turns stay: the setting of the conversation and what is being asked now.
  while (total > limits.maxInputTokens && turns.length > 2) {
    const middle = Math.floor((turns.length - 1) / 2) || 1
    total -= turns[middle]!.tokens
    turns = [...turns.slice(0, middle), ...turns.slice(middle + 1)]
  }
  const truncatedMessages = total > limits.maxInputTokens ? truncateTexts(turns, total - limits.maxInputTokens, counter) : 0
  total = sum(turns)
  const items = turns.flatMap((turn) => turn.items)
  const droppedMessages = input.length - items.length
  return {
    input: droppedMessages === 0 && truncatedMessages === 0 ? input : items,
    tokensBefore,
    tokensAfter: total,
    droppedMessages,
    truncatedMessages,
    fits: total <= limits.maxInputTokens,
  }
}
