/** One response to run: only what belongs to this request. Everything else is the inference service's. */

import type { ClientSignal } from '../core/client-signal'
import type { ResponsesRequestBody } from './request.schemas'
import type { Attempt } from './routing'
import type { ServerToolPlan } from './server-tools/plan'

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
  /** The server tools the gateway runs for this request; absent when it has none (one turn, as always). */
  serverTools?: ServerToolPlan
}
