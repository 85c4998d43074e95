/**
 * What the judge is told (docs/decisions.md, "Plugins: routers and fusion"): the caller's instructions, then the
 * panel's answers and the analyst's analysis of them, with the brief to answer from both. Carried in `instructions`,
 * which every upstream format has, so the caller's conversation reaches the judge unchanged.
 */

import type { ResponsesRequestBody } from '../../../engine/request.schemas'
import { analysisSection, panelSection, type AnalysisOutcome } from './analysis'
import type { PanelOutcome } from './panel'

const BRIEF = [
  'Other models have answered the conversation below independently; their answers follow, each under its model.',
  'Weigh them: keep what they agree on, settle disagreements on the merits, take up a point only one of them made',
  'when it holds, and cover what all of them missed. Then write your own complete answer to the latest message.',
  'Do not mention the other models unless you are asked about them.',
].join(' ')

const ANALYSIS_BRIEF = [
  'An analyst compared the answers; its analysis follows them as JSON: consensus, contradictions (each model’s stance),',
  'partial_coverage, unique_insights and blind_spots. Build your answer on it: state the consensus, settle each',
  'contradiction, keep the insights that hold and cover the blind spots.',
].join(' ')

const analysisParts = (analysis: AnalysisOutcome | undefined) => (analysis?.isAnalysed ? [ANALYSIS_BRIEF, analysisSection(analysis.model, analysis.analysis)] : [])

/** The judge's request: the caller's body with the panel's answers and the analysis after its instructions. */
export const judgeBody = (body: ResponsesRequestBody, outcomes: readonly PanelOutcome[], analysis?: AnalysisOutcome): ResponsesRequestBody => ({
  ...body,
  instructions: [body.instructions, BRIEF, ...outcomes.map(panelSection), ...analysisParts(analysis)]
    .filter((part) => typeof part === 'string' && part !== '')
    .join('\n\n'),
})
