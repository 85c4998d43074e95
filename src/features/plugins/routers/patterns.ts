/**
 * `allowed_models` / `excluded_models` wildcard patterns (docs/decisions.md, "Plugins: routers and fusion"): `*` stands for any run of characters
 * (`anthropic/*`, `openai/gpt-5*`), everything else matches itself, case-insensitively. Compiled once per request
 * without regular expressions, so no pattern can make matching slow.
 */

const matchesPattern = (slug: string, pattern: string): boolean => {
  const parts = pattern.toLowerCase().split('*')
  const text = slug.toLowerCase()
  if (parts.length === 1) return text === parts[0]
  const first = parts[0]!
  const last = parts.at(-1)!
  if (!text.startsWith(first) || !text.endsWith(last) || text.length < first.length + last.length) return false
  let at = first.length
  const end = text.length - last.length
  for (const middle of parts.slice(1, -1)) {
    const found = text.indexOf(middle, at)
    if (found < 0 || found + middle.length > end) return false
    at = found + middle.length
  }
  return true
}

/** Whether `slug` passes the filters: allowed by some pattern (or no allow-list), excluded by none. Exclusion wins. */
export const createModelFilter = (allowed: readonly string[] | undefined, excluded: readonly string[] | undefined) => (slug: string) =>
  (allowed === undefined || allowed.some((pattern) => matchesPattern(slug, pattern))) && !(excluded ?? []).some((pattern) => matchesPattern(slug, pattern))

export { matchesPattern }
