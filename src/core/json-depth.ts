/**
 * How deep a parsed JSON value nests. Free-form request fields (tool parameters, JSON schemas,
 * pass-through fields) are bounded so that no later step (a provider's request builder, a stored
 * conversation) meets a value too deep for `JSON.stringify` or any other recursive walk.
 */

/** The deepest nesting of objects and arrays a free-form request field may have (docs/decisions.md). */
export const MAX_JSON_DEPTH = 128

/**
 * Whether `value` nests objects and arrays more than `limit` levels deep (`{}` and `[]` are one level).
 * Iterative, so a value of any depth is safe to ask about; it stops at the first node past the limit.
 */
export const isNestedDeeperThan = (value: unknown, limit: number): boolean => {
  if (typeof value !== 'object' || value === null) return false
  const pending: unknown[] = [value]
  const depths: number[] = [1]
  while (pending.length > 0) {
    const node = pending.pop() as object
    const depth = depths.pop()!
    if (depth > limit) return true
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === 'object' && child !== null) {
        pending.push(child)
        depths.push(depth + 1)
      }
    }
  }
  return false
}
