/**
 * Plan stages: the parts features play while a request is prepared (docs/architecture.md, "Adding a feature"), as
 * run stages (run-stage.ts) are the parts they play around its run. The preparation (run.ts) calls them at named
 * points, in the order the composition root listed them once:
 *
 * 1. `checkBody`, before anything is read: refuse what no stored setting could make acceptable (a plugin this
 *    gateway does not run is a 400 before the store is asked anything);
 * 2. `loadScope`, beside the caller's workspace and BYOK keys, in the same round trip (caller-scope.ts);
 * 3. `checkInput`, once the scope is known: scan the input, refuse it, or replace the body the request runs;
 * 4. `chooseModels`: the first stage that answers chooses the models (fusion's judge, a router's choice), else the
 *    request's own `model` and `models` run;
 * 5. `shapePlanned`, for every request planned (the caller's, a fusion panel member's, a consulted model's): what
 *    the feature runs itself, before its attempts are planned;
 * 6. `finish`, on the caller's prepared request: the feature's own state (`requestSlot`), fields it decides.
 *
 * A stage keeps what it needs from one point to the next on the preparation, under a slot of its own.
 */

import type { Caller } from '../services/caller'
import type { CallerScope, ScopeLoader } from './caller-scope'
import type { PipelineStage } from './pipeline-stage'
import type { InferenceRequest, RouteExtensions } from './request'
import type { ResponsesRequestBody } from './request.schemas'
import type { Attempt } from './routing'
import type { InferenceService } from './service'

/** A request as it arrives, before anything was read for it. */
export interface Arrival {
  readonly service: InferenceService
  readonly caller: Caller
  readonly requestId: string
  readonly sessionId: string | undefined
  /** Whether the caller opted in to `service_metadata`. */
  readonly isMetadataRequested: boolean
  /** The body as the caller sent it. */
  readonly received: ResponsesRequestBody
  readonly extensions: RouteExtensions | undefined
  /** On `performance.now()`, for `service_metadata.generation_time`. */
  readonly startedAt: number
}

/** A request being prepared, once the caller's scope is known. */
export interface Preparation extends Arrival {
  readonly scope: CallerScope & { workspace: NonNullable<CallerScope['workspace']> }
  /** The model a request that names none runs on (the workspace's text or image default). */
  readonly defaultModel: string
  /** The body the request runs: the received one, or what a stage put in its place (a guardrail's redaction). */
  body: ResponsesRequestBody
  /** The models the caller's request runs, in order, once they are chosen (for `finish`). */
  readonly models: string[]
  /** Stages that ran while preparing (input scans, a router's choice), in order, for `service_metadata.pipeline`. */
  readonly pipeline: PipelineStage[]
  /**
   * Plans one request of the caller's, as the caller's own is planned: its attempts, the stages' shapes. Ready once
   * the models are chosen (for `shapePlanned` and `finish`), as is `routeNested`.
   */
  plan(body: ResponsesRequestBody, models: string[]): InferenceRequest
  /**
   * Plans a nested call's attempts (a server tool's model call) as `planBody`'s own would be routed: the caller's
   * keys, provider preferences and policy, `body`'s parameters and modalities.
   */
  routeNested(planBody: ResponsesRequestBody, model: string, body: ResponsesRequestBody): Attempt[]
}

/** One request being planned, before its attempts: what every endpoint must honour. */
export interface PlannedDraft {
  /** The request, its attempts not planned yet; a stage records its state on it (`requestSlot`). */
  readonly request: InferenceRequest
  readonly models: readonly string[]
  /** The body whose fields every endpoint must honour: a stage that runs some of them itself leaves those out. */
  honoured: ResponsesRequestBody
  /** More that every endpoint must honour, each with where the caller asked for it. */
  readonly requirements: Array<{ name: string; field: string }>
}

export interface PlanStage {
  /** The feature's name, for errors and traces. */
  readonly name: string
  checkBody?(arrival: Arrival): void
  loadScope?: ScopeLoader
  /** A stage with nothing to scan for this request returns nothing rather than a promise: no wait is added then. */
  checkInput?(preparation: Preparation): Promise<void> | void
  chooseModels?(preparation: Preparation): string[] | undefined
  shapePlanned?(preparation: Preparation, draft: PlannedDraft): void
  finish?(preparation: Preparation, request: InferenceRequest): void
}

/** The stages of each point, in the listed order: a point no stage uses costs nothing. */
export interface PlanStages {
  readonly checkBody: ReadonlyArray<Required<Pick<PlanStage, 'checkBody'>>>
  readonly loadScope: readonly ScopeLoader[]
  readonly checkInput: ReadonlyArray<Required<Pick<PlanStage, 'checkInput' | 'name'>>>
  readonly chooseModels: ReadonlyArray<Required<Pick<PlanStage, 'chooseModels' | 'name'>>>
  readonly shapePlanned: ReadonlyArray<Required<Pick<PlanStage, 'shapePlanned'>>>
  readonly finish: ReadonlyArray<Required<Pick<PlanStage, 'finish'>>>
}

const having = <K extends keyof PlanStage>(stages: readonly PlanStage[], point: K) =>
  stages.filter((stage): stage is PlanStage & Required<Pick<PlanStage, K>> => stage[point] !== undefined)

declare module './service' {
  interface EngineStages {
    readonly plan: PlanStages
  }
}

export const composePlanStages = (stages: readonly PlanStage[]): PlanStages => ({
  checkBody: having(stages, 'checkBody'),
  loadScope: having(stages, 'loadScope').map((stage): ScopeLoader => (...args) => stage.loadScope(...args)),
  checkInput: having(stages, 'checkInput'),
  chooseModels: having(stages, 'chooseModels'),
  shapePlanned: having(stages, 'shapePlanned'),
  finish: having(stages, 'finish'),
})
