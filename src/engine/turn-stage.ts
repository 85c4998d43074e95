/**
 * Turn stages: the parts features play in answering a prepared request's turns (docs/architecture.md, "Adding a
 * feature"). The engine's own answer is one turn, whole (whole.ts) or streamed (stream-session.ts); a stage may
 * answer with turns of its own instead (the server-tool loop), change the whole answer (a plugin's `afterWhole`),
 * watch the streamed one, or shape the call each upstream attempt sends. The composition root lists them once,
 * outermost first; run.ts runs them, and the fallback loop (fallback.ts) applies the call shapers in that order.
 */

import type { UpstreamCall } from '../providers/contract'
import type { InferenceRequest } from './request'
import type { Attempt } from './routing'
import type { InferenceService } from './service'
import type { ResponseSession, WholeAnswer } from './session-events'

export type AnswerNext = (request: InferenceRequest) => Promise<WholeAnswer>
export type OpenNext = (request: InferenceRequest) => Promise<ResponseSession>
export type CallShaper = (call: UpstreamCall, attempt: Attempt, request: InferenceRequest) => UpstreamCall

export interface TurnStage {
  /** The feature's name, for errors and traces. */
  readonly name: string
  /** A whole answer: the turns inside this stage are `next`. */
  answer?(service: InferenceService, request: InferenceRequest, next: AnswerNext): Promise<WholeAnswer>
  /** A streamed answer: the session of the turns inside this stage is `next`'s. */
  open?(service: InferenceService, request: InferenceRequest, next: OpenNext): Promise<ResponseSession>
  /** The call one attempt sends, as this feature shapes it for that endpoint. */
  shapeCall?: CallShaper
}

/** The stages of each hook, in the listed order. */
export interface TurnStages {
  readonly answer: ReadonlyArray<Required<Pick<TurnStage, 'answer'>>>
  readonly open: ReadonlyArray<Required<Pick<TurnStage, 'open'>>>
  readonly shapeCall: readonly CallShaper[]
}

declare module './service' {
  interface EngineStages {
    readonly turns: TurnStages
  }
}

export const composeTurnStages = (stages: readonly TurnStage[]): TurnStages => ({
  answer: stages.filter((stage): stage is TurnStage & Required<Pick<TurnStage, 'answer'>> => stage.answer !== undefined),
  open: stages.filter((stage): stage is TurnStage & Required<Pick<TurnStage, 'open'>> => stage.open !== undefined),
  shapeCall: stages.flatMap((stage) => (stage.shapeCall ? [stage.shapeCall] : [])),
})
