/**
 * Operator content-filter patterns run through re2js: RE2 semantics, linear in the text, so no pattern can
 * backtrack catastrophically on a hostile prompt. Lookarounds and backreferences, which need backtracking,
 * are refused when the guardrail is written, not when a request arrives.
 */

import { RE2JS } from 're2js'

/** A span of a text, in UTF-16 code units as JavaScript strings count them. */
export type Span = { start: number; end: number }

export type CompiledPattern = { regex: RE2JS; problem?: undefined } | { regex?: undefined; problem: string }

const COMPILED_MAX = 512
// Guardrails are read from the store on every request: compile each distinct pattern once, not per request.
const compiled = new Map<string, CompiledPattern>()

/** Compiles `pattern` (case-sensitive, as written), or says why RE2 cannot run it. */
export const compileContentPattern = (pattern: string): CompiledPattern => {
  let entry = compiled.get(pattern)
  if (entry) return entry
  try {
    entry = { regex: RE2JS.compile(pattern) }
  } catch (error) {
    // re2js explains in one line ("missing closing )", "invalid named capture"); the pattern is the operator's own.
    entry = { problem: error instanceof Error ? error.message.replace(/^error parsing regexp: /, '') : 'it does not compile' }
  }
  if (compiled.size >= COMPILED_MAX) compiled.clear()
  compiled.set(pattern, entry)
  return entry
}

/** Every non-empty match of `regex` in `text`, left to right. */
export const findSpans = (regex: RE2JS, text: string): Span[] => {
  const spans: Span[] = []
  const matcher = regex.matcher(text)
  let from = 0
  while (from <= text.length && matcher.find(from)) {
    const start = matcher.start()
    const end = matcher.end()
    if (end > start) spans.push({ start, end })
    // An empty match would be found again at the same place: step past it.
    from = end > start ? end : end + 1
  }
  return spans
}
