/**
 * Operator content-filter patterns: parsed and compiled by re2js (RE2 syntax: no lookarounds, no backreferences,
 * refused when the guardrail is written), and run by our own single-pass scan over re2js's compiled program.
 *
 * Why not re2js's `find` in a loop: RE2 is linear for one search, but a search that finds a short (or empty) match
 * may have read to the end of the text to rule out a longer alternative (`(?:a*b)?`, `a*b|a` on a run of `a`), and
 * the next search starts again after that match: n searches of n characters. So the scan below is one pass of a
 * Pike VM (the NFA simulation RE2 itself uses) that never restarts: at each position it keeps at most one thread
 * per instruction, the one that started earliest, so its work is at most (characters + 1) × instructions, whatever
 * the pattern and the text (docs/decisions.md, "No tenant can stall the gateway").
 *
 * What it reports: every stretch of the text covered by a non-empty match of the pattern, overlapping matches
 * merged into one span. A redaction therefore hides every character that any match of the pattern covers, which
 * leftmost-first iteration does not promise (`\d{3}` on `1234567` leaves the `7`).
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
    // re2js explains in one line ("missing closing )", "invalid named capture") and quotes the part of the pattern
    // at fault; that quote is left out, as validation errors never repeat what was sent (the pattern may be secret).
    entry = { problem: error instanceof Error ? error.message.replace(/^error parsing regexp: /, '').replace(/: `[\s\S]*`$/, '') : 'it does not compile' }
  }
  if (compiled.size >= COMPILED_MAX) compiled.clear()
  compiled.set(pattern, entry)
  return entry
}

// re2js's program, as its Machine reads it (re2js is pinned: test/unit/engine/content-pattern.test.ts checks the
// scan against re2js's own matcher, so a change of this shape fails there, not in production).
interface Instruction {
  op: number
  out: number
  arg: number
  runes: Int32Array
  matchRune(rune: number): boolean
}
interface Program {
  inst: Instruction[]
  start: number
}

const OP = { ALT: 1, ALT_MATCH: 2, CAPTURE: 3, EMPTY_WIDTH: 4, FAIL: 5, MATCH: 6, NOP: 7, RUNE: 8, RUNE1: 9, RUNE_ANY: 10, RUNE_ANY_NOT_NL: 11 } as const
const EMPTY = { BEGIN_LINE: 1, END_LINE: 2, BEGIN_TEXT: 4, END_TEXT: 8, WORD_BOUNDARY: 16, NO_WORD_BOUNDARY: 32 } as const
const NEWLINE = 10

const isWordRune = (rune: number) =>
  (rune >= 97 && rune <= 122) || (rune >= 65 && rune <= 90) || (rune >= 48 && rune <= 57) || rune === 95

/** The zero-width conditions that hold between `before` and `after` (-1 at either end of the text), as RE2 reads them. */
const contextOf = (before: number, after: number): number => {
  let flags = 0
  if (before < 0) flags |= EMPTY.BEGIN_TEXT | EMPTY.BEGIN_LINE
  if (before === NEWLINE) flags |= EMPTY.BEGIN_LINE
  if (after < 0) flags |= EMPTY.END_TEXT | EMPTY.END_LINE
  if (after === NEWLINE) flags |= EMPTY.END_LINE
  flags |= isWordRune(before) !== isWordRune(after) ? EMPTY.WORD_BOUNDARY : EMPTY.NO_WORD_BOUNDARY
  return flags
}

/** The code point at `index` (a lone surrogate stands for itself, as in re2js's UTF-16 input); -1 past the end. */
const runeAt = (text: string, index: number): number => (index < text.length ? text.codePointAt(index)! : -1)
const widthOf = (rune: number) => (rune > 0xffff ? 2 : 1)

/** The code point that ends just before `index`; -1 at the start. */
const runeBefore = (text: string, index: number): number => {
  if (index <= 0) return -1
  const low = text.charCodeAt(index - 1)
  if (low >= 0xdc00 && low <= 0xdfff && index >= 2) {
    const high = text.charCodeAt(index - 2)
    if (high >= 0xd800 && high <= 0xdbff) return text.codePointAt(index - 2)!
  }
  return low
}

/** Counts the scan's work: threads stepped and instructions visited. Tests read it; production passes none. */
export interface ScanCounter {
  steps: number
}

interface ThreadList {
  pcs: Int32Array
  starts: Int32Array
  size: number
}

const programOf = (regex: RE2JS): { program: Program; prefix: string } => {
  const re2 = regex.re2() as unknown as { prog: Program; prefix: string | null }
  return { program: re2.prog, prefix: re2.prefix ?? '' }
}

/** A scan that runs in slices: `run(maxSteps)` goes on where it stopped and says whether it reached the end. */
export interface PatternScan {
  run(maxSteps: number): boolean
  /** The spans found so far (all of them once `run` said it is done). */
  readonly spans: Span[]
  /** Work done so far. */
  readonly steps: number
}

/**
 * A scan of `text` for every stretch covered by a non-empty match of `regex`, left to right, overlapping matches
 * merged. One pass: at most (text.length + 1) × the program's instructions of work (see the module comment), in
 * slices of the caller's size, so a long scan can give the event loop back between them.
 */
export const createPatternScan = (regex: RE2JS, text: string): PatternScan => {
  const { program, prefix } = programOf(regex)
  const size = program.inst.length
  let current: ThreadList = { pcs: new Int32Array(size), starts: new Int32Array(size), size: 0 }
  let next: ThreadList = { pcs: new Int32Array(size), starts: new Int32Array(size), size: 0 }
  // Which list an instruction is already on, by a stamp per position: one thread per instruction and position.
  const onList = new Int32Array(size).fill(-1)
  const stack = new Int32Array(size + 1)
  let steps = 0
  let stamp = 0

  // Follows the empty transitions from `pc` and puts each thread that reads a rune (or matches) on `list`.
  const add = (list: ThreadList, pc: number, start: number, context: number) => {
    let depth = 0
    stack[depth++] = pc
    while (depth > 0) {
      let at = stack[--depth]!
      while (at !== 0 && onList[at] !== stamp) {
        onList[at] = stamp
        steps++
        const instruction = program.inst[at]!
        switch (instruction.op) {
          case OP.ALT:
          case OP.ALT_MATCH:
            stack[depth++] = instruction.arg
            at = instruction.out
            break
          case OP.EMPTY_WIDTH:
            at = (instruction.arg & ~context) === 0 ? instruction.out : 0
            break
          case OP.NOP:
          case OP.CAPTURE:
            at = instruction.out
            break
          case OP.MATCH:
          case OP.RUNE:
          case OP.RUNE1:
          case OP.RUNE_ANY:
          case OP.RUNE_ANY_NOT_NL:
            list.pcs[list.size] = at
            list.starts[list.size] = start
            list.size++
            at = 0
            break
          default:
            // FAIL, and lookbehind instructions, which compileContentPattern never lets through.
            at = 0
        }
      }
    }
  }

  const spans: Span[] = []
  const record = (start: number, end: number) => {
    let last = spans[spans.length - 1]
    // Ends arrive in increasing order: a span starting at or before the last one's start contains it.
    while (last && last.start >= start) {
      spans.pop()
      last = spans[spans.length - 1]
    }
    if (last && last.end > start) last.end = end
    else spans.push({ start, end })
  }

  let position = 0
  let rune = runeAt(text, 0)
  let context = contextOf(-1, rune)
  let isDone = false
  const run = (maxSteps: number): boolean => {
    const until = steps + maxSteps
    while (!isDone && steps < until) {
      if (current.size === 0 && prefix.length > 0) {
        // No thread alive: a match can only start where the pattern's literal prefix occurs (RE2's own shortcut).
        const found = text.indexOf(prefix, position)
        if (found < 0) {
          isDone = true
          break
        }
        if (found !== position) {
          // Instructions stamped at the old position must not stand in the way at the new one.
          stamp++
          position = found
          rune = runeAt(text, position)
          context = contextOf(runeBefore(text, position), rune)
        }
      }
      // The threads already on the list (stamped when the last step put them there) started earlier, so they keep
      // an instruction the new thread also reaches.
      add(current, program.start, position, context)
      const width = rune < 0 ? 0 : widthOf(rune)
      const nextRune = rune < 0 ? -1 : runeAt(text, position + width)
      const nextContext = rune < 0 ? 0 : contextOf(rune, nextRune)
      stamp++
      let hasMatched = false
      for (let index = 0; index < current.size; index++) {
        steps++
        const instruction = program.inst[current.pcs[index]!]!
        const start = current.starts[index]!
        let isTaken = false
        switch (instruction.op) {
          case OP.MATCH:
            // The first match on the list has the earliest start of every match ending here.
            if (!hasMatched && position > start) record(start, position)
            hasMatched = true
            break
          case OP.RUNE:
            isTaken = rune >= 0 && instruction.matchRune(rune)
            break
          case OP.RUNE1:
            isTaken = rune >= 0 && rune === instruction.runes[0]
            break
          case OP.RUNE_ANY:
            isTaken = rune >= 0
            break
          case OP.RUNE_ANY_NOT_NL:
            isTaken = rune >= 0 && rune !== NEWLINE
            break
        }
        if (isTaken) add(next, instruction.out, start, nextContext)
      }
      if (rune < 0) {
        isDone = true
        break
      }
      position += width
      rune = nextRune
      context = nextContext
      const done = current
      current = next
      next = done
      next.size = 0
    }
    return isDone
  }
  return {
    run,
    spans,
    get steps() {
      return steps
    },
  }
}

/** Every stretch of `text` covered by a non-empty match of `regex`, in one go (createPatternScan, not sliced). */
export const findSpans = (regex: RE2JS, text: string, counter?: ScanCounter): Span[] => {
  const scan = createPatternScan(regex, text)
  scan.run(Number.POSITIVE_INFINITY)
  if (counter) counter.steps += scan.steps
  return scan.spans
}
