/** One response to run: only what belongs to this request. Everything else is the inference service's. */

import type { ClientSignal } from '../core/client-signal'
import type { GenerationAttempt } from '../repositories/generations'
import type { RequestExtensionName, RequestExtensions } from '../providers/types'
import type { PipelineStage } from './pipeline-stage'
import type { ResponsesRequestBody } from './request.schemas'
import type { RequestDeadline } from './request-deadline'
import type { Attempt } from './routing'
import type { SpendTargets } from './spend-targets'

/**
 * One upstream attempt as it ended, as the usage ledger stores it (OpenRouter's `provider_responses`): its
 * `latencyMs` runs from sending the attempt to its answer (a stream's first event) or its failure.
 */
export type AttemptReport = GenerationAttempt

/**
 * A feature's state on the request (its server-tool plan, its plugins, the guardrails governing it) is not a field
 * here: each feature keeps it under a slot of its own (request-slot.ts).
 */
export interface InferenceRequest {
  body: ResponsesRequestBody
  attempts: Attempt[]
  /** The first model asked for (the workspace default when none was). */
  requestedModel: string
  /** A keyed hash standing in for `user` / `safety_identifier` upstream. */
  endUserId: string
  requestId: string
  /** Fires when the client went away. */
  signal: ClientSignal
  /**
   * The request's deadline: every attempt, turn and run made for the request (a server tool's nested calls, a fusion
   * panel's members) shares this one object.
   */
  deadline: RequestDeadline
  /** Whether the caller opted in to `service_metadata`. */
  isMetadataRequested: boolean
  /** The key, workspace and account the request spends for (src/engine/spend.ts). */
  spend: SpendTargets
  /** Settings beyond the Responses body (Chat Completions `stop`, …); every attempt's adapter declares those set. */
  extensions?: RequestExtensions
  /** Filled by the fallback loop as attempts end, in the order they were sent. */
  attemptReports: AttemptReport[]
  /**
   * The request's session, or its conversation (same caller, same prompt prefix), whose endpoint it sticks to
   * (sticky-sessions.ts); `isHeld` when that endpoint leads the attempts.
   */
  sticky?: { key: string; isHeld: boolean; by: 'session' | 'conversation' }
  /** How the models were chosen when a stage chose them (a router, fusion: `service_metadata.strategy`); its stage is in `pipeline`. */
  routing?: { strategy: 'auto' | 'pareto' | 'fusion' }
  /** A batch of prompts, each within the context length (embeddings), rather than one prompt bounded by it. */
  isBatchPrompt?: boolean
  /**
   * `service_metadata.pipeline`, in the order the stages ran: guardrails' input scans, the router, plugins,
   * guardrails' output scans.
   */
  pipeline: PipelineStage[]
}

/** Extensions a route translated from its own wire format. */
export interface RouteExtensions {
  values: RequestExtensions
  /** Where the caller wrote each one, for errors (`body.stop_sequences`); `body.<name>` when absent. */
  fieldNames?: Partial<Record<RequestExtensionName, string>>
}
