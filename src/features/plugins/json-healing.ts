/**
 * Turning a model's almost-JSON into JSON (the response-healing plugin): the text inside a markdown fence, the
 * JSON value between leading and trailing prose, then `jsonrepair` for syntax (missing brackets, trailing commas,
 * unquoted keys, single quotes). Each step taken is named, so the pipeline stage can say what was healed.
 */

import { jsonrepair } from 'jsonrepair'

/** What was done to the text: OpenRouter's documented cases, by name. */
export type JsonRepair = 'markdown_fence' | 'surrounding_text' | 'syntax'

export type HealedJson = { isHealed: true; text: string; value: unknown; repairs: JsonRepair[] } | { isHealed: false; reason: string }

const parses = (text: string): { value: unknown } | undefined => {
  try {
    return { value: JSON.parse(text) }
  } catch {
    return undefined
  }
}

// The first fenced block; an opening fence that never closes (an answer cut off) runs to the end of the text.
const FENCE = /```[A-Za-z0-9_-]*[^\S\n]*\n?([\s\S]*?)(?:\n?```|$)/

/** The JSON value in `text`, between the first `{` or `[` and the last `}` or `]` (or the end, for a cut-off answer). */
const valueSpan = (text: string): string | undefined => {
  const start = text.search(/[{[]/)
  if (start < 0) return undefined
  const end = Math.max(text.lastIndexOf('}'), text.lastIndexOf(']'))
  return end > start ? text.slice(start, end + 1) : text.slice(start)
}

/**
 * Characters of text `jsonrepair` is given at most. An answer may be as large as the upstream cap (32 MiB) and the
 * repair runs on the event loop (about 0.2 s per MB): a longer one is left as it is, the stage saying why.
 */
export const REPAIR_MAX_CHARACTERS = 1_048_576

/** `text` healed into JSON, or why it could not be. Text that already parses is returned as it is, with no repairs. */
export const healJson = (text: string): HealedJson => {
  const repairs: JsonRepair[] = []
  let candidate = text.trim()
  const direct = parses(candidate)
  if (direct) return { isHealed: true, text: candidate, value: direct.value, repairs }
  const fenced = FENCE.exec(candidate)
  if (fenced) {
    candidate = fenced[1]!.trim()
    repairs.push('markdown_fence')
  }
  const span = valueSpan(candidate)
  if (span === undefined) return { isHealed: false, reason: 'no JSON object or array in the text' }
  if (span !== candidate) {
    candidate = span
    repairs.push('surrounding_text')
  }
  const extracted = parses(candidate)
  if (extracted) return { isHealed: true, text: candidate, value: extracted.value, repairs }
  if (candidate.length > REPAIR_MAX_CHARACTERS) return { isHealed: false, reason: `the JSON is longer than the ${REPAIR_MAX_CHARACTERS} characters response-healing repairs` }
  let repaired: string
  try {
    repaired = jsonrepair(candidate)
  } catch {
    return { isHealed: false, reason: 'the JSON could not be repaired' }
  }
  const value = parses(repaired)
  if (!value) return { isHealed: false, reason: 'the JSON could not be repaired' }
  repairs.push('syntax')
  return { isHealed: true, text: repaired, value: value.value, repairs }
}
