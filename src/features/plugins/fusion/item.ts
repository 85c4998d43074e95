/**
 * The `service:fusion` output item (OpenRouter's `openrouter:fusion` item: `responses`, `failed_models`, `analysis`)
 * and the `response.fusion_call.*` stream events that show it while the panel and the analyst run.
 */

import { randomHex } from '../../../core/crypto'
import type { OutputItem } from '../../../providers/types'
import type { AnalysisOutcome } from './analysis'
import type { PanelOutcome } from './panel'

export const FUSION_ITEM_TYPE = 'service:fusion'

export const newFusionItemId = () => `fu_${randomHex(24)}`

export const pendingFusionItem = (id: string): OutputItem => ({ type: FUSION_ITEM_TYPE, id, status: 'in_progress' })

/**
 * The finished item: `completed` when any member answered, `failed` (with `error`) when none did. Its `analysis` is
 * the analyst's; an analysis that failed leaves `error` and OpenRouter's `failure_reason` instead, and the judge
 * answered from the panel alone.
 */
export const fusionItem = (id: string, outcomes: readonly PanelOutcome[], analysis?: AnalysisOutcome): OutputItem => {
  const responses = outcomes.flatMap((outcome) => (outcome.isAnswered ? [{ model: outcome.model, content: outcome.content }] : []))
  const failed = outcomes.flatMap((outcome) =>
    outcome.isAnswered ? [] : [{ model: outcome.model, error: outcome.error, ...(outcome.statusCode === undefined ? {} : { status_code: outcome.statusCode }) }],
  )
  return {
    type: FUSION_ITEM_TYPE,
    id,
    status: responses.length > 0 ? 'completed' : 'failed',
    responses,
    ...(failed.length > 0 ? { failed_models: failed } : {}),
    ...(responses.length === 0 ? { error: 'Every analysis model failed', failure_reason: 'all_panels_failed' } : {}),
    ...(analysis?.isAnalysed ? { analysis: analysis.analysis } : {}),
    ...(analysis && !analysis.isAnalysed ? { error: `The analysis failed: ${analysis.error}`, failure_reason: analysis.failureReason } : {}),
  }
}

/** A `response.fusion_call.*` event of the item at `outputIndex`, as the stream relays it. */
export const fusionEvent = (type: string, itemId: string, outputIndex: number, fields: Record<string, unknown> = {}) => ({
  type: `response.fusion_call.${type}`,
  item_id: itemId,
  output_index: outputIndex,
  ...fields,
})
