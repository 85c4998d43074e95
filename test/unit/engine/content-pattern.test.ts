import { RE2JS } from 're2js'
import { describe, expect, it } from 'vitest'
import type { AppliedGuardrail } from '../../../src/features/guardrails/applicable'
import { contentFiltersOf, createContentScan, SCAN_SLICE_STEPS } from '../../../src/features/guardrails/content-filters'
import { compileContentPattern, findSpans, type ScanCounter, type Span } from '../../../src/features/guardrails/content-pattern'

const compile = (pattern: string) => {
  const { regex, problem } = compileContentPattern(pattern)
  if (!regex) throw new Error(problem)
  return regex
}

/**
 * The oracle, by re2js's own matcher (quadratic, fine for short texts): for each start, the longest match that
 * starts there; every match is inside one of these, so their union, overlapping ones merged, is the union of all matches.
 */
const unionOfMatches = (pattern: string, text: string): Span[] => {
  const matcher = RE2JS.compile(pattern, RE2JS.LONGEST_MATCH).matcher(text)
  const spans: Span[] = []
  for (let start = 0; start <= text.length; start++) {
    if (!matcher.find(start) || matcher.start() !== start || matcher.end() === start) continue
    const end = matcher.end()
    const last = spans[spans.length - 1]
    if (last && last.end > start) last.end = Math.max(last.end, end)
    else spans.push({ start, end })
  }
  return spans
}

const stepsFor = (pattern: string, text: string) => {
  const counter: ScanCounter = { steps: 0 }
  findSpans(compile(pattern), text, counter)
  return counter.steps
}

describe('content filter patterns: one pass over the text', () => {
  const cases: Array<[string, string]> = [
    ['\\d{3}', 'call 1234567 or 12'],
    ['a+', 'baaab aa a'],
    ['(?:a*b)?', 'aaab aab b aaaa'],
    ['a*b|a', 'aaaab aa'],
    ['abcd|bc', 'xabcdx bc'],
    ['\\bcat\\b', 'cat concat cat.'],
    ['(?i)secret', 'SeCrEt and secret'],
    ['^foo|bar$', 'foo bar\nfoo bar'],
    ['(?m)^foo$', 'foo\nfoo\nxfoo'],
    ['sk-[A-Za-z0-9]{8,}', 'key sk-abcdEFGH1234 and sk-short'],
    ['.', '😀a😀'],
    ['😀+', 'x😀😀y😀'],
    ['[^a]', 'aabaa'],
    ['x*', 'xx yy xxx'],
    ['(a|ab)(c|bcd)(d*)', 'abcd abcdd acd'],
  ]
  for (const [pattern, text] of cases) {
    it(`finds every stretch a match of ${JSON.stringify(pattern)} covers`, () => {
      expect(findSpans(compile(pattern), text)).toEqual(unionOfMatches(pattern, text))
    })
  }

  it('agrees with re2js on random texts', () => {
    const patterns = ['a[bc]*d?', '(?:ab|b)+', '\\b[ab]{2}\\b', 'c|(?:ab)*c', 'b$|^a', '(?:a?){2}b']
    let seed = 7
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    for (const pattern of patterns) {
      for (let round = 0; round < 40; round++) {
        const text = Array.from({ length: 1 + Math.floor(random() * 24) }, () => 'abcd \n'[Math.floor(random() * 6)]).join('')
        expect(findSpans(compile(pattern), text), `${pattern} on ${JSON.stringify(text)}`).toEqual(unionOfMatches(pattern, text))
      }
    }
  })

  // re2js's find in a loop does n searches of n characters on these: each search reads to the end before settling.
  for (const pattern of ['(?:a*b)?', 'a*b|a', '(?:a|b)*c|']) {
    it(`does work linear in the text for ${JSON.stringify(pattern)}`, () => {
      const small = stepsFor(pattern, 'a'.repeat(2_000))
      const large = stepsFor(pattern, 'a'.repeat(8_000))
      const instructions = compile(pattern).re2().numberOfInstructions()
      // Four times the text, about four times the work (not sixteen), and never more than characters × instructions.
      expect(large / small).toBeGreaterThan(3.9)
      expect(large / small).toBeLessThan(4.1)
      expect(large).toBeLessThanOrEqual(8_001 * 2 * instructions)
    })
  }

  it('skips to the pattern\'s literal prefix where no match is under way', () => {
    const text = `${'x'.repeat(50_000)}password`
    expect(findSpans(compile('password'), text)).toEqual([{ start: 50_000, end: 50_008 }])
    expect(stepsFor('password', text)).toBeLessThan(100)
  })
})

describe('a content scan gives the event loop back', () => {
  it('runs a long scan in slices, with timers running between them, and finds the same spans', async () => {
    const guardrail = { record: { id: 'g1', name: 'G', contentFilters: [{ pattern: '(?:a*b)?', action: 'redact', label: '[AB]' }] }, scope: 'key' } as unknown as AppliedGuardrail
    const scan = createContentScan(contentFiltersOf([guardrail]), 'input')
    const text = `${'a'.repeat(200_000)}b`
    const counter: ScanCounter = { steps: 0 }
    expect(findSpans(compile('(?:a*b)?'), text, counter)).toEqual([{ start: 0, end: 200_001 }])
    let turns = 0
    let isReading = true
    const count = () => {
      if (!isReading) return
      turns++
      setTimeout(count, 0)
    }
    setTimeout(count, 0)
    await scan.read([[text, 'user']])
    isReading = false
    // Each slice is at most SCAN_SLICE_STEPS steps of work; between two of them the timer had a turn.
    expect(turns).toBeGreaterThanOrEqual(Math.floor(counter.steps / SCAN_SLICE_STEPS))
    expect(scan.visit(text, 'user')).toBe('[AB]')
  })
})
