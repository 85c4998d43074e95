/** A request whose spend is reserved (src/engine/run.ts `reserveRun`), for code that runs requests on a caller's behalf. */

import type { InferenceRequest } from './request'
import type { ResponseSession, WholeAnswer } from './session-events'

export interface ReservedRun {
  /** Opens the streamed run (of `run`, the reserved request or one derived from it); settled when its session ends. */
  open(run?: InferenceRequest): Promise<ResponseSession>
  /** Answers whole and settles. */
  answer(run?: InferenceRequest): Promise<WholeAnswer>
  /** Gives the reservation back: the run will not happen. */
  release(): void
}

/** Reserves a request's spend; rejects with 402 when a limit would be passed, before any upstream call. */
export type ReserveRun = (request: InferenceRequest) => Promise<ReservedRun>
