/**
 * What the judge is told (docs/decisions.md, "Plugins: routers and fusion"): the caller's instructions, then the
 * panel's answers with the brief to weigh them. Carried in `instructions`, which every upstream format has, so the
 * caller's conversation reaches the judge unchanged.
 */

import type { ResponsesRequestBody } from '../../request.schemas'
import type { PanelOutcome } from './panel'

const BRIEF = [
  'Other models have answered the conversation below independently; their answers follow, each under its model.',
  'Weigh them: keep what they agree on, settle disagreements on the merits, take up a point only one of them made',
  'when it holds, and cover what all of them missed. Then write your own complete answer to the latest message.',
  'Do not mention the other models unless you are asked about them.',
].join(' ')

const section = (outcome: PanelOutcome) =>
  outcome.isAnswered ? `<answer model="${outcome.model}">\n${outcome.content}\n</answer>` : `<answer model="${outcome.model}" failed="true">\n(no answer: ${outcome.error})\n</answer>`

/** The judge's request: the caller's body with the panel's answers after its instructions. */
export const judgeBody = (body: ResponsesRequestBody, outcomes: readonly PanelOutcome[]): ResponsesRequestBody => ({
  ...body,
  instructions: [body.instructions, BRIEF, ...outcomes.map(section)].filter((part) => typeof part === 'string' && part !== '').join('\n\n'),
})
