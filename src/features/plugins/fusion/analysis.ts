/**
 * Fusion's analysis step (docs/decisions.md, "Plugins: routers and fusion"): after the panel, the analyst model reads
 * the caller's conversation and the panel's answers and returns a structured analysis, which the judge then answers
 * from. The schema is OpenRouter's `FusionAnalysisResult` (as `@openrouter/sdk` parses it), so SDK clients read ours.
 * The analyst is asked for it with structured output (`text.format` json_schema) when every endpoint it may be sent
 * to takes that; always in its instructions too, and its text is healed and checked here whichever way it came.
 */

import * as v from 'valibot'
import type { BilledUsage } from '../../../engine/billing'
import type { ResponsesRequestBody } from '../../../engine/request.schemas'
import type { Attempt } from '../../../engine/routing'
import { healJson } from '../json-healing'
import { withoutCallerTools } from './conversation'
import type { PanelOutcome } from './panel'

const StringsSchema = v.array(v.string())

/**
 * What the analyst returns. A list the model left out is read as empty (nothing to report there); a field of the
 * wrong shape makes the whole analysis a schema mismatch.
 */
export const FusionAnalysisSchema = v.object({
  consensus: v.optional(StringsSchema, []),
  contradictions: v.optional(v.array(v.object({ topic: v.string(), stances: v.array(v.object({ model: v.string(), stance: v.string() })) })), []),
  partial_coverage: v.optional(v.array(v.object({ point: v.string(), models: StringsSchema })), []),
  unique_insights: v.optional(v.array(v.object({ model: v.string(), insight: v.string() })), []),
  blind_spots: v.optional(StringsSchema, []),
})

export type FusionAnalysis = v.InferOutput<typeof FusionAnalysisSchema>

const strings = { type: 'array', items: { type: 'string' } }
const object = (properties: Record<string, unknown>) => ({ type: 'object', properties, required: Object.keys(properties), additionalProperties: false })

/** The same shape as a JSON schema, strict as OpenAI's structured output wants it (every field required, no others). */
export const FUSION_ANALYSIS_JSON_SCHEMA = object({
  consensus: strings,
  contradictions: { type: 'array', items: object({ topic: { type: 'string' }, stances: { type: 'array', items: object({ model: { type: 'string' }, stance: { type: 'string' } }) } }) },
  partial_coverage: { type: 'array', items: object({ point: { type: 'string' }, models: strings }) },
  unique_insights: { type: 'array', items: object({ model: { type: 'string' }, insight: { type: 'string' } }) },
  blind_spots: strings,
})

const ANALYST_BRIEF = [
  'Several models answered the conversation below independently; their answers follow, each under its model.',
  'Do not answer the conversation yourself: compare their answers for the model that will write the final answer.',
  'Return only a JSON object with these fields: consensus (points the answers agree on), contradictions (each topic',
  'they disagree on, with every model’s stance), partial_coverage (points only some of them made, with those models),',
  'unique_insights (a point only one model made, with that model) and blind_spots (what every answer missed or got',
  'wrong). Name models exactly as the answers do. The JSON schema:',
  JSON.stringify(FUSION_ANALYSIS_JSON_SCHEMA),
].join(' ')

/** An answer of the panel, as the analyst and the judge read it. */
export const panelSection = (outcome: PanelOutcome) =>
  outcome.isAnswered ? `<answer model="${outcome.model}">\n${outcome.content}\n</answer>` : `<answer model="${outcome.model}" failed="true">\n(no answer: ${outcome.error})\n</answer>`

/** The analysis as the judge (or the model calling the `service:fusion` tool) reads it. */
export const analysisSection = (model: string, analysis: FusionAnalysis) => `<analysis model="${model}">\n${JSON.stringify(analysis)}\n</analysis>`

/** Whether every endpoint the analyst may be sent to takes `text.format` (the catalog lists it as `text`). */
export const takesStructuredOutput = (attempts: readonly Attempt[]) => attempts.length > 0 && attempts.every((attempt) => attempt.endpoint.supportedParameters?.includes('text') === true)

/**
 * The analyst's request before the panel answered (what its reservation is made on): the caller's conversation and
 * settings, without the caller's tools or output format, with the analyst's brief in `instructions`.
 */
export const analystBody = (body: ResponsesRequestBody, model: string, isStructured: boolean): ResponsesRequestBody => {
  const { text: _text, ...rest } = withoutCallerTools(body)
  const callerInstructions = body.instructions ? `The model writing the final answer was told:\n<instructions>\n${body.instructions}\n</instructions>` : undefined
  return {
    ...rest,
    model,
    stream: true,
    instructions: [ANALYST_BRIEF, callerInstructions].filter((part) => part !== undefined).join('\n\n'),
    ...(isStructured ? { text: { format: { type: 'json_schema', name: 'fusion_analysis', schema: FUSION_ANALYSIS_JSON_SCHEMA, strict: true } } } : {}),
  } as ResponsesRequestBody
}

/** The analyst's request once the panel answered: their answers after its brief. */
export const withPanelAnswers = (body: ResponsesRequestBody, outcomes: readonly PanelOutcome[]): ResponsesRequestBody => ({
  ...body,
  instructions: [body.instructions, ...outcomes.map(panelSection)].join('\n\n'),
})

/**
 * OpenRouter's failure reasons for the analysis stage (`failure_reason` of its fusion item), which keep their
 * `judge_` spelling from before it named the analyst.
 */
export type AnalysisFailureReason = 'judge_upstream_error' | 'judge_empty_completion' | 'judge_not_valid_json' | 'judge_schema_mismatch'

export type AnalysisOutcome =
  | { isAnalysed: true; model: string; analysis: FusionAnalysis; usage: BilledUsage | null }
  | { isAnalysed: false; model: string; error: string; failureReason: AnalysisFailureReason; statusCode?: number; usage: BilledUsage | null }

/** The analysis in the analyst's answer, or why there is none. */
export const readAnalysis = (outcome: PanelOutcome): AnalysisOutcome => {
  const { model, usage } = outcome
  const failed = (failureReason: AnalysisFailureReason, error: string, statusCode?: number): AnalysisOutcome => ({
    isAnalysed: false,
    model,
    error,
    failureReason,
    ...(statusCode === undefined ? {} : { statusCode }),
    usage,
  })
  if (!outcome.isAnswered) return failed('judge_upstream_error', outcome.error, outcome.statusCode)
  if (outcome.content.trim() === '') return failed('judge_empty_completion', 'The analyst returned no text')
  const healed = healJson(outcome.content)
  if (!healed.isHealed) return failed('judge_not_valid_json', `The analyst's answer is not JSON: ${healed.reason}`)
  const parsed = v.safeParse(FusionAnalysisSchema, healed.value)
  if (!parsed.success) {
    const issue = parsed.issues[0]
    const path = v.getDotPath(issue) ?? 'the analysis'
    return failed('judge_schema_mismatch', `The analyst's JSON does not match the analysis schema: ${path}: ${issue.message}`)
  }
  return { isAnalysed: true, model, analysis: parsed.output, usage }
}
