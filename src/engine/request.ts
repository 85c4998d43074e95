/** One response to run: only what belongs to this request. Everything else is the inference service's. */

import type { ClientSignal } from '../core/client-signal'
import type { RequestExtensionName, RequestExtensions } from '../providers/types'
import type { ResponsesRequestBody } from './request.schemas'
import type { Attempt } from './routing'
import type { ServerToolPlan } from './server-tools/plan'
import type { SpendTargets } from './spend-targets'

/** One upstream attempt as it ended: what the usage ledger reports per attempt (OpenRouter's `provider_responses`). */
export interface AttemptReport {
  provider: string
  model: string
  /** The provider's own id for the model. */
  endpoint: string
  isByok: boolean
  /** 200 for the attempt that answered, the provider's status (or the gateway's for a failure of its own) otherwise, null when the client left first. */
  status: number | null
  /** From sending the attempt to its answer (a stream's first event) or its failure. */
  latencyMs: number
}

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
  /** Whether the caller opted in to `service_metadata`. */
  isMetadataRequested: boolean
  /** The key, workspace and account the request spends for (src/engine/spend.ts). */
  spend: SpendTargets
  /** Settings beyond the Responses body (Chat Completions `stop`, …); every attempt's adapter declares those set. */
  extensions?: RequestExtensions
  /** Filled by the fallback loop as attempts end, in the order they were sent. */
  attemptReports: AttemptReport[]
  /** The server tools the gateway runs for this request; absent when it has none (one turn, as always). */
  serverTools?: ServerToolPlan
}

/** Extensions a route translated from its own wire format. */
export interface RouteExtensions {
  values: RequestExtensions
  /** Where the caller wrote each one, for errors (`body.stop_sequences`); `body.<name>` when absent. */
  fieldNames?: Partial<Record<RequestExtensionName, string>>
}
