/**
 * Guardrail content checks on the request path (docs/decisions.md, Guardrails): the input before routing and any
 * upstream call, a whole answer's output before it is returned. Each governing guardrail with content filters
 * leaves a `guardrail` stage in `service_metadata.pipeline`; what was found is kept for the usage ledger.
 */

import { PayloadTooLargeError, PermissionDeniedError, type GatewayError } from '../../core/errors'
import type { ContentFilterAction } from '../../repositories/guardrails'
import type { OutputItem } from '../../providers/types'
import type { BilledUsage } from '../../engine/billing'
import type { ResponsesRequestBody } from '../../engine/request.schemas'
import type { AppliedGuardrail, GuardrailScope } from './applicable'
import { contentFiltersOf, createContentScan, filteringGuardrails, SCAN_CHARACTERS_MAX, type ContentFinding, type FilterEngine, type ScanDirection } from './content-filters'
import { mapOutputTexts, mapRequestTexts, type TextAuthor, type TextVisitor } from './request-texts'

/** A `service_metadata.pipeline` stage of type `guardrail` (spec: Response result, routing metadata). */
export type GuardrailStage = {
  type: 'guardrail'
  name: string
  summary: string
  guardrail_id: string
  guardrail_scope: GuardrailScope
  data: { action: ContentFilterAction | 'none'; detected: boolean; engines: FilterEngine[]; patterns: string[] }
}

/** What a guardrail found in one direction, as the usage ledger keeps it. */
export interface GuardrailEvent {
  guardrailId: string
  scope: GuardrailScope
  direction: ScanDirection
  action: ContentFilterAction
  patterns: string[]
  matches: number
}

const ACTION_ORDER: readonly ContentFilterAction[] = ['block', 'redact', 'flag']
const PAST_TENSE: Record<ContentFilterAction, string> = { block: 'blocked', redact: 'redacted', flag: 'flagged' }

const summaryOf = (direction: ScanDirection, finding: ContentFinding) =>
  `${direction}: ${PAST_TENSE[finding.action]} ${finding.matches} match${finding.matches === 1 ? '' : 'es'} of ${finding.patterns.join(', ')}`

const stagesOf = (guardrails: readonly AppliedGuardrail[], findings: readonly ContentFinding[], direction: ScanDirection): GuardrailStage[] =>
  guardrails.flatMap(({ record, scope }): GuardrailStage[] => {
    const own = findings
      .filter((finding) => finding.guardrailId === record.id)
      .sort((left, right) => ACTION_ORDER.indexOf(left.action) - ACTION_ORDER.indexOf(right.action))
    const base = { type: 'guardrail' as const, name: record.name, guardrail_id: record.id, guardrail_scope: scope }
    if (own.length === 0) {
      return [{ ...base, summary: `${direction}: nothing detected`, data: { action: 'none', detected: false, engines: [], patterns: [] } }]
    }
    return own.map((finding) => ({
      ...base,
      summary: summaryOf(direction, finding),
      data: { action: finding.action, detected: true, engines: [...finding.engines], patterns: [...finding.patterns] },
    }))
  })

const eventsOf = (findings: readonly ContentFinding[], direction: ScanDirection): GuardrailEvent[] =>
  findings.map((finding) => ({
    guardrailId: finding.guardrailId,
    scope: finding.scope,
    direction,
    action: finding.action,
    patterns: [...finding.patterns],
    matches: finding.matches,
  }))

/** A refusal by one or more `block` filters. */
export interface GuardrailBlock {
  direction: ScanDirection
  findings: ContentFinding[]
  /** Set when the texts were longer than the scan reads: refused whole, by the first guardrail with content filters. */
  overLimit?: { guardrail: AppliedGuardrail; maxCharacters: number }
}

export interface GuardedContent<T> {
  /** The content with redactions written in (the same object when nothing was redacted). */
  content: T
  stages: GuardrailStage[]
  events: GuardrailEvent[]
  block: GuardrailBlock | null
}

const guard = async <T>(
  guardrails: readonly AppliedGuardrail[],
  direction: ScanDirection,
  content: T,
  map: (content: T, visit: TextVisitor) => T,
): Promise<GuardedContent<T> | null> => {
  // A model's answer is never the user's own text: filters that read only the user's messages skip it.
  const filters = contentFiltersOf(guardrails).filter((filter) => direction === 'input' || filter.scope !== 'user_only')
  if (filters.length === 0) return null
  const scan = createContentScan(filters, direction, SCAN_CHARACTERS_MAX)
  // Two passes over the same texts in the same order: one collects them for the (sliced) scan, one writes redactions.
  const texts: Array<readonly [string, TextAuthor]> = []
  map(content, (text, author) => {
    texts.push([text, author])
    return text
  })
  await scan.read(texts)
  const rewritten = scan.isOverLimit() ? content : map(content, scan.visit)
  const findings = scan.findings()
  // Text the filters did not read never goes on: the whole request (or answer) is refused.
  const block: GuardrailBlock | null = scan.isOverLimit()
    ? { direction, findings: findings.filter((finding) => finding.action === 'block'), overLimit: { guardrail: filters[0]!.guardrail, maxCharacters: SCAN_CHARACTERS_MAX } }
    : scan.isBlocked()
      ? { direction, findings: findings.filter((finding) => finding.action === 'block') }
      : null
  return { content: block ? content : rewritten, stages: stagesOf(filteringGuardrails(filters), findings, direction), events: eventsOf(findings, direction), block }
}

/** Scans a request's input; `null` when no governing guardrail has content filters. */
export const guardInput = (guardrails: readonly AppliedGuardrail[], body: ResponsesRequestBody): Promise<GuardedContent<ResponsesRequestBody> | null> =>
  guard(guardrails, 'input', body, mapRequestTexts)

/** Scans a whole answer's output; `null` when no governing guardrail has content filters. */
export const guardOutput = (guardrails: readonly AppliedGuardrail[], output: OutputItem[]): Promise<GuardedContent<OutputItem[]> | null> =>
  guard(guardrails, 'output', output, mapOutputTexts)

// An answer refused for its output was produced and paid for: the refusal carries its usage to the usage ledger.
const paidUsage = new WeakMap<object, BilledUsage>()

/** The usage an answer refused by a guardrail was billed for; `undefined` for any other error. */
export const paidUsageOf = (error: unknown): BilledUsage | undefined =>
  typeof error === 'object' && error !== null ? paidUsage.get(error) : undefined

/** Marks `error` as the refusal of an answer that cost `usage`. */
export const withPaidUsage = (error: GatewayError, usage: BilledUsage | null): GatewayError => {
  if (usage) paidUsage.set(error, usage)
  return error
}

/**
 * The 403 of a block (spec Errors: `error.metadata.patterns`, and `service_metadata` with the guardrail stage
 * when the caller opted in). Names the guardrail and the filters, never what they matched.
 */
export const guardrailBlockError = (block: GuardrailBlock, serviceMetadata?: Record<string, unknown>): GatewayError => {
  const extraBody = serviceMetadata ? { extraBody: { service_metadata: serviceMetadata } } : {}
  if (block.overLimit) {
    const { guardrail, maxCharacters } = block.overLimit
    const metadata = { error_type: 'guardrail_scan_limit', guardrail_id: guardrail.record.id, guardrail_scope: guardrail.scope, max_characters: maxCharacters }
    const limit = `its content filters read at most ${maxCharacters} characters of text`
    // The caller can shorten its own input (413); an answer too long to scan is the model's, refused as a block is.
    return block.direction === 'input'
      ? new PayloadTooLargeError(`Request refused by guardrail "${guardrail.record.name}": ${limit}, and the input has more`, { metadata, ...extraBody })
      : new PermissionDeniedError(`Response blocked by guardrail "${guardrail.record.name}": ${limit}, and the output has more`, { metadata, ...extraBody })
  }
  const patterns = [...new Set(block.findings.flatMap((finding) => finding.patterns))]
  const first = block.findings[0]!
  const what = block.direction === 'input' ? 'Request' : 'Response'
  return new PermissionDeniedError(`${what} blocked by guardrail "${first.guardrailName}": the ${block.direction} matched ${patterns.join(', ')}`, {
    metadata: { error_type: 'guardrail_blocked', guardrail_id: first.guardrailId, guardrail_scope: first.scope, patterns },
    ...extraBody,
  })
}
