/**
 * An intern's stored conversation is bounded by items and by serialized bytes: every chat turn sends
 * it upstream whole and every turn stores it whole, so an unbounded one costs the upstream, the store
 * and memory a little more each turn (docs/decisions.md, "Chat history").
 *
 * The oldest items go first, and only at places where the rest still reads as a conversation to
 * every provider: never between a tool call and its output, never between a reasoning item and the
 * item it belongs to, and preferably where a caller's message begins.
 */

import type { JsonValue } from '../storage/contract'

export interface HistoryLimits {
  /** Items kept at most. */
  maxItems: number
  /** Serialized (JSON, UTF-8) bytes of the kept items at most. */
  maxBytes: number
}

export const DEFAULT_HISTORY_LIMITS: HistoryLimits = { maxItems: 400, maxBytes: 2 * 1024 * 1024 }

/** UTF-8 length of `text` without encoding it (JSON.stringify leaves no lone surrogates). */
const utf8Length = (text: string): number => {
  let bytes = 0
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4
      index++
    } else bytes += 3
  }
  return bytes
}

type Fields = Record<string, JsonValue>

const fieldsOf = (item: JsonValue): Fields | null => (item && typeof item === 'object' && !Array.isArray(item) ? item : null)

/** Tool outputs (`function_call_output`, `custom_tool_call_output`, …) answer the call with the same `call_id`. */
const isToolOutput = (item: Fields | null) => typeof item?.type === 'string' && item.type.endsWith('_output') && typeof item.call_id === 'string'

const isToolCall = (item: Fields | null) => typeof item?.call_id === 'string' && !isToolOutput(item)

/** A message the caller wrote: every provider accepts a conversation that starts with one. */
const isCallerMessage = (item: Fields | null) =>
  item !== null && (item.type === undefined || item.type === 'message') && (item.role === 'user' || item.role === 'system' || item.role === 'developer')

/**
 * Marks the cut positions `i` (keep `items[i..]`) that would keep a tool output whose call is
 * dropped, or drop a reasoning item whose following item is kept.
 */
const unsafeCuts = (items: Array<Fields | null>): boolean[] => {
  const callAt = new Map<string, number>()
  const crossing = new Array<number>(items.length + 1).fill(0)
  items.forEach((item, index) => {
    if (isToolCall(item) && !callAt.has(item!.call_id as string)) callAt.set(item!.call_id as string, index)
    if (!isToolOutput(item)) return
    const call = callAt.get(item!.call_id as string)
    if (call === undefined) return
    // Every cut after the call and up to the output separates the two.
    crossing[call + 1]! += 1
    crossing[index + 1]! -= 1
  })
  const unsafe: boolean[] = []
  let open = 0
  for (let cut = 0; cut <= items.length; cut++) {
    open += crossing[cut]!
    unsafe.push(open > 0 || (cut > 0 && items[cut - 1]?.type === 'reasoning'))
  }
  return unsafe
}

/**
 * The newest part of `items` within `limits`, cut only at safe places. `newestTurnStart` is where
 * the turn just added begins: that turn is always kept whole, so a single turn larger than the limit
 * is stored anyway (with what its tool outputs need), and the next turn drops it.
 */
export const trimHistory = (items: JsonValue[], newestTurnStart: number, limits: HistoryLimits): JsonValue[] => {
  const count = items.length
  const sizes = items.map((item) => utf8Length(JSON.stringify(item)))
  // bytesFrom[i]: the JSON array of items[i..]: the items, the commas between them and the brackets.
  const bytesFrom = new Array<number>(count + 1).fill(2)
  for (let index = count - 1; index >= 0; index--) bytesFrom[index] = bytesFrom[index + 1]! + sizes[index]! + (index < count - 1 ? 1 : 0)
  const fits = (cut: number) => count - cut <= limits.maxItems && bytesFrom[cut]! <= limits.maxBytes
  if (fits(0)) return items

  const fields = items.map(fieldsOf)
  const unsafe = unsafeCuts(fields)
  const cuts = Array.from({ length: Math.min(newestTurnStart, count) + 1 }, (_, cut) => cut).filter((cut) => cut === 0 || !unsafe[cut])
  const cut =
    cuts.find((candidate) => fits(candidate) && isCallerMessage(fields[candidate] ?? null)) ??
    cuts.find(fits) ??
    // Even the newest turn alone is over the limit: keep it whole, from the last safe place before it.
    cuts.at(-1)!
  return items.slice(cut)
}
