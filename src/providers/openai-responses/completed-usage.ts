/**
 * The usage of an OpenAI `response.completed` event, read without parsing the rest. That event carries the whole
 * response (every output item again, the request's settings: 1.6 KB for a one-line answer), and the stream needs
 * only its usage: the items came in their own events, and a completed response's status says nothing more. Parsing
 * it whole was the largest cost of a relayed stream after the deltas. Only OpenAI's own compact layout is read this
 * way; `undefined` for anything else, which the caller parses as before.
 */

import type { OpenAIUsage } from './wire'

// The event and its response open with fixed simple fields, status among them: the response's own, before any item.
const HEAD = /^\{"type":"response\.completed","sequence_number":\d+,"response":\{"id":"[^"\\]*","object":"response","created_at":\d+,"status":"completed",/

const USAGE_KEY = ',"usage":'

// After the usage, only flat fields may follow (OpenAI sends `user` and `metadata`, an object of strings) and the
// two closing braces of the response and the event: so the usage found is the response's own, not one nested deeper.
const STRING = '"(?:[^"\\\\]|\\\\.)*"'
const SCALAR = `(?:null|true|false|-?\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?|${STRING})`
const STRING_MAP = `\\{(?:${STRING}:${STRING}(?:,${STRING}:${STRING})*)?\\}`
const TAIL = new RegExp(`^(?:,"[a-z_]+":(?:${SCALAR}|${STRING_MAP}))*\\}\\}$`)

const OPEN_BRACE = 123
const CLOSE_BRACE = 125

/** Where the object starting at `start` ends (the index after its closing brace); -1 when it does not close. */
const objectEnd = (text: string, start: number): number => {
  let depth = 0
  for (let index = start; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (code === OPEN_BRACE) depth++
    else if (code === CLOSE_BRACE && --depth === 0) return index + 1
  }
  return -1
}

/**
 * The response's own `service_tier` in OpenAI's layout, where it sits among the flat fields between the items and
 * the tools, right before `store`. Only that neighbourhood is trusted: a tool's schema or an item could hold the
 * same key deeper, but not followed by the response's `store` flag. Undefined when it is not found so.
 */
const SERVICE_TIER = /,"service_tier":"([a-z_]+)","store":(?:true|false),/g

/** The tier a `response.completed` in OpenAI's compact layout reports, read as `readCompletedUsage` reads the usage. */
export const readCompletedServiceTier = (data: string): string | undefined => {
  let tier: string | undefined
  // The last match: the response's own fields come after every item.
  for (const match of data.matchAll(SERVICE_TIER)) tier = match[1]
  return tier
}

/** The response's usage (`null` when it has none), or `undefined` when `data` is not in OpenAI's compact layout. */
export const readCompletedUsage = (data: string): OpenAIUsage | null | undefined => {
  if (!HEAD.test(data)) return undefined
  const keyAt = data.lastIndexOf(USAGE_KEY)
  if (keyAt < 0) return undefined
  const valueAt = keyAt + USAGE_KEY.length
  let valueEnd: number
  if (data.startsWith('null', valueAt)) valueEnd = valueAt + 4
  else if (data.charCodeAt(valueAt) === OPEN_BRACE) valueEnd = objectEnd(data, valueAt)
  else return undefined
  if (valueEnd < 0 || !TAIL.test(data.slice(valueEnd))) return undefined
  try {
    const usage = JSON.parse(data.slice(valueAt, valueEnd)) as unknown
    return usage === null || (typeof usage === 'object' && !Array.isArray(usage)) ? (usage as OpenAIUsage | null) : undefined
  } catch {
    // A brace inside a key threw the count off: the whole event is parsed instead.
    return undefined
  }
}
