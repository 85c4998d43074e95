/**
 * Content filters of the guardrails governing a request: operators' RE2 patterns and the builtin detectors, each
 * with an action. `block` refuses the request, `redact` replaces the match before it goes anywhere, `flag` lets
 * it through and records it. Over one text, blocking wins over redacting, and redacting over flagging. What a
 * filter found is reported by its name (the builtin's slug, the pattern's label), never by the matched text.
 */

import type { ContentFilterAction, ScanScope } from '../../repositories/guardrails'
import type { AppliedGuardrail, GuardrailScope } from './applicable'
import { BUILTIN_DETECTORS, BUILTIN_REDACTION_LABELS } from './builtin-detectors'
import { compileContentPattern, createPatternScan, type PatternScan, type Span } from './content-pattern'
import type { TextAuthor, TextVisitor } from './request-texts'

export type FilterEngine = 'builtin' | 'regex'

/** Which way a text travels: the request's input, or the model's answer. */
export type ScanDirection = 'input' | 'output'

interface ActiveFilter {
  guardrail: AppliedGuardrail
  /** How findings name it: the builtin's slug, or the pattern's label (`content_filters.<n>` without one). */
  name: string
  engine: FilterEngine
  action: ContentFilterAction
  /** What a redaction writes in place of the match. */
  replacement: string
  scope: ScanScope
  /** A scan of `text` that runs in slices (operators' patterns), or the spans at once (builtins: V8, ours, fast). */
  find(text: string): Span[] | PatternScan
}

/** What the filters of one guardrail found for one action. */
export interface ContentFinding {
  guardrailId: string
  guardrailName: string
  scope: GuardrailScope
  action: ContentFilterAction
  engines: FilterEngine[]
  patterns: string[]
  matches: number
}

/** The filters of every governing guardrail, in guardrail order, builtins before patterns. */
export const contentFiltersOf = (guardrails: readonly AppliedGuardrail[]): ActiveFilter[] =>
  guardrails.flatMap((guardrail): ActiveFilter[] => [
    ...(guardrail.record.contentFilterBuiltins ?? []).map((entry) => ({
      guardrail,
      name: entry.slug,
      engine: 'builtin' as const,
      action: entry.action,
      replacement: entry.label ?? BUILTIN_REDACTION_LABELS[entry.slug],
      // Injection attempts come from the caller: by default only their messages are read for them.
      scope: entry.scanScope ?? (entry.slug === 'regex-prompt-injection' ? 'user_only' : 'all_messages'),
      find: BUILTIN_DETECTORS[entry.slug],
    })),
    ...(guardrail.record.contentFilters ?? []).flatMap((entry, index) => {
      const { regex } = compileContentPattern(entry.pattern)
      // Patterns are checked when written; one stored by an older version that RE2 refuses cannot match anything.
      if (!regex) return []
      return [
        {
          guardrail,
          name: entry.label ?? `content_filters.${index}`,
          engine: 'regex' as const,
          action: entry.action,
          replacement: entry.label ?? '[REDACTED]',
          scope: 'all_messages' as const,
          find: (text: string) => createPatternScan(regex, text),
        },
      ]
    }),
  ])

/** The guardrails that have content filters, in order: each gets a pipeline stage whether or not it found anything. */
export const filteringGuardrails = (filters: readonly ActiveFilter[]): AppliedGuardrail[] => [...new Set(filters.map((filter) => filter.guardrail))]

type Replacement = Span & { text: string }

/** `text` with each replacement written in; overlapping ones keep the one that starts first (then the longer). */
const applyReplacements = (text: string, replacements: Replacement[]): string => {
  replacements.sort((left, right) => left.start - right.start || right.end - left.end)
  let result = ''
  let position = 0
  for (const replacement of replacements) {
    if (replacement.start < position) continue
    result += text.slice(position, replacement.start) + replacement.text
    position = replacement.end
  }
  return result + text.slice(position)
}

/**
 * Characters of text one scan reads at most: a request's input, or a whole answer's output. Each filter's work is
 * linear in what it reads (content-pattern.ts), so this bounds the time a request spends being scanned (the scan
 * gives the event loop back between slices, so other requests do not wait for it); text over it is refused whole,
 * never passed on unscanned (docs/guardrails.md).
 */
export const SCAN_CHARACTERS_MAX = 1_048_576

/** Steps of one slice of a pattern scan (a few milliseconds) before the event loop gets a turn. */
export const SCAN_SLICE_STEPS = 250_000

// A macrotask, so timers and sockets run between slices (a resolved promise would not let them).
const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0))

/** The findings of a scan: `read` finds, `visit` writes the redactions in. */
export interface ContentScan {
  /**
   * Runs every filter over `texts` (in the order `visit` will see them), giving the event loop a turn between
   * slices of work, so a long scan delays only its own request.
   */
  read(texts: ReadonlyArray<readonly [string, TextAuthor]>): Promise<void>
  /** Visits the texts `read` was given, in the same order, and returns each with the redactions written in. */
  visit: TextVisitor
  findings(): ContentFinding[]
  /** Whether a filter with action `block` matched. */
  isBlocked(): boolean
  /** Whether the texts went past `maxCharacters`: the scan stopped there, and what it read must not go on. */
  isOverLimit(): boolean
}

/** A scan of texts travelling in `direction` (a model's answer is never the user's own text). */
export const createContentScan = (filters: readonly ActiveFilter[], direction: ScanDirection, maxCharacters = SCAN_CHARACTERS_MAX): ContentScan => {
  const found = new Map<string, ContentFinding>()
  let isBlocked = false
  let isOverLimit = false
  const replacementsByText: Array<Replacement[]> = []
  let visited = 0
  const record = (filter: ActiveFilter, matches: number) => {
    const key = `${filter.guardrail.record.id}\u0000${filter.action}`
    let finding = found.get(key)
    if (!finding) {
      finding = {
        guardrailId: filter.guardrail.record.id,
        guardrailName: filter.guardrail.record.name,
        scope: filter.guardrail.scope,
        action: filter.action,
        engines: [],
        patterns: [],
        matches: 0,
      }
      found.set(key, finding)
    }
    if (!finding.engines.includes(filter.engine)) finding.engines.push(filter.engine)
    if (!finding.patterns.includes(filter.name)) finding.patterns.push(filter.name)
    finding.matches += matches
    if (filter.action === 'block') isBlocked = true
  }
  const read = async (texts: ReadonlyArray<readonly [string, TextAuthor]>) => {
    const total = texts.reduce((sum, [text]) => sum + text.length, 0)
    // Refused before any work: text past the limit would go on unread.
    if (total > maxCharacters) {
      isOverLimit = true
      return
    }
    // Work left in this slice, in scan steps (a builtin counts a step per character).
    let budget = SCAN_SLICE_STEPS
    const spend = async (steps: number) => {
      budget -= steps
      if (budget > 0) return
      budget = SCAN_SLICE_STEPS
      await yieldToEventLoop()
    }
    for (const [text, author] of texts) {
      const replacements: Replacement[] = []
      replacementsByText.push(replacements)
      if (text.length === 0) continue
      for (const filter of filters) {
        if (filter.scope === 'user_only' && (direction === 'output' || author !== 'user')) continue
        const scan = filter.find(text)
        let spans: Span[]
        if (Array.isArray(scan)) {
          spans = scan
          await spend(text.length)
        } else {
          let isDone = false
          while (!isDone) {
            const before = scan.steps
            isDone = scan.run(budget)
            await spend(scan.steps - before)
          }
          spans = scan.spans
        }
        if (spans.length === 0) continue
        record(filter, spans.length)
        if (filter.action === 'redact') for (const span of spans) replacements.push({ ...span, text: filter.replacement })
      }
    }
  }
  const visit: TextVisitor = (text: string) => {
    const replacements = replacementsByText[visited++]
    return !replacements || replacements.length === 0 ? text : applyReplacements(text, replacements)
  }
  return { read, visit, findings: () => [...found.values()], isBlocked: () => isBlocked, isOverLimit: () => isOverLimit }
}
