/** One response to run: only what belongs to this request. Everything else is the inference service's. */

import type { ClientSignal } from '../core/client-signal'
import type { RequestExtensionName, RequestExtensions } from '../providers/types'
import type { ResponsesRequestBody } from './request.schemas'
import type { Attempt } from './routing'

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
  /** Settings beyond the Responses body (Chat Completions `stop`, …); every attempt's adapter declares those set. */
  extensions?: RequestExtensions
}

/** Extensions a route translated from its own wire format. */
export interface RouteExtensions {
  values: RequestExtensions
  /** Where the caller wrote each one, for errors (`body.stop_sequences`); `body.<name>` when absent. */
  fieldNames?: Partial<Record<RequestExtensionName, string>>
}
