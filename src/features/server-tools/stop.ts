/**
 * `stop_server_tools_when` (spec; the five kinds in docs/decisions.md, "Server tools"): checked after each
 * turn that called server tools; any firing condition ends the loop (OR logic).
 */

import type { ResponsesRequestBody } from '../../engine/request.schemas'

export type StopCondition = NonNullable<ResponsesRequestBody['stop_server_tools_when']>[number]

/** Where the loop stands after a turn. */
export interface LoopProgress {
  /** Turns (model calls) made so far. */
  steps: number
  /** Server tools the model has called, by type (`service:datetime`) and by the function name it used. */
  calledTools: ReadonlySet<string>
  /** Tokens across every turn so far. */
  totalTokens: number
  /** Dollars across every turn and tool run so far (the figure `usage.cost` reports). */
  cost: number
  /** The last turn's finish reasons: Chat Completions' name (`stop`, `length`, `tool_calls`…) and the Responses one. */
  finishReasons: readonly string[]
}

/**
 * A turn's finish reasons. Chat Completions' names are what callers write (`length`), and the Responses
 * incomplete reason (`max_output_tokens`) is accepted as well.
 */
export const finishReasonsOf = (status: 'completed' | 'incomplete' | 'failed', incompleteReason: string | undefined, hasToolCalls: boolean): string[] => {
  if (status === 'completed') return [hasToolCalls ? 'tool_calls' : 'stop']
  if (status === 'failed') return ['error']
  const reason = incompleteReason ?? 'max_output_tokens'
  if (reason === 'max_output_tokens') return ['length', reason]
  return [reason]
}

const fires = (condition: StopCondition, progress: LoopProgress): boolean => {
  switch (condition.type) {
    case 'step_count_is':
      return progress.steps >= condition.step_count
    case 'has_tool_call':
      return progress.calledTools.has(condition.tool_name)
    case 'max_tokens_used':
      return progress.totalTokens > condition.max_tokens
    case 'max_cost':
      return progress.cost > condition.max_cost_in_dollars
    case 'finish_reason_is':
      return progress.finishReasons.includes(condition.reason)
  }
}

/** The first condition that fires, if any. */
export const firingCondition = (conditions: readonly StopCondition[], progress: LoopProgress): StopCondition | undefined =>
  conditions.find((condition) => fires(condition, progress))
