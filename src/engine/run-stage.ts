/**
 * Request stages: the parts features play around a prepared request's run (docs/architecture.md, "Adding a
 * feature"). Each stage sees the request and the rest of the run as `next`, and may act before it (hold a price,
 * run a plugin's search), answer without it (fusion runs its own panel), or change what it answered (a guardrail's
 * output scan). The composition root lists the stages once, outermost first, and composes them around the engine's
 * own run (reserve, then answer or open the turns), as Hono composes middleware: the engine names no feature.
 */

import type { InferenceRequest } from './request'
import type { ResponseSession, WholeAnswer } from './session-events'

/** A request's answer: whole, or a session of events still to stream. */
export type RunOutcome = { isStream: false; answer: WholeAnswer } | { isStream: true; session: ResponseSession }

/** The rest of the run after a stage: the stages inside it, then the engine's own run. */
export type RunNext = (request: InferenceRequest) => Promise<RunOutcome>

export interface RunStage {
  /** The feature's name, for errors and traces. */
  readonly name: string
  run(request: InferenceRequest, next: RunNext): Promise<RunOutcome>
}

/** The stages around `core`, the first outermost; each `next` may be called at most once. */
export const composeRunStages = (stages: readonly RunStage[], core: RunNext): RunNext => {
  const from = (index: number): RunNext => {
    if (index === stages.length) return core
    const stage = stages[index]!
    const next = from(index + 1)
    return (request) => stage.run(request, next)
  }
  return from(0)
}
