/** Opening a streamed answer: the attempts in order until one yields its first event. */

import type { GatewayError } from '../core/errors'
import type { UpstreamStreamEvent } from '../providers/contract'
import type { AttemptRequest, OpenedAttempt } from './attempts'
import { clientError, firstServedAttempt, type Served } from './fallback'
import type { InferenceRequest } from './request'
import type { InferenceService } from './service'
import { serviceMetadata } from './service-metadata'

export type OpenStream =
  | {
      isOpen: true
      served: Served
      opened: OpenedAttempt
      iterator: AsyncIterator<UpstreamStreamEvent>
      first: IteratorResult<UpstreamStreamEvent>
      upstreamMs: number
      /** When the served attempt was sent, on `performance.now()`. */
      attemptStartedAt: number
    }
  /** Every attempt failed: `error` is what the client sees. */
  | { isOpen: false; error: GatewayError; attemptsMade: number }

/** Rejects only when the client went away (`ClientClosedError`). */
export const openStream = async (
  service: InferenceService,
  request: InferenceRequest,
  attemptRequest: AttemptRequest,
  startedAt: number,
): Promise<OpenStream> => {
  const outcome = await firstServedAttempt(service, request, attemptRequest, true, async (opened, call, attempt, attemptStarted) => {
    const iterator = attempt.provider.adapter.readStream(opened.response.body, call)[Symbol.asyncIterator]()
    const first = await iterator.next()
    return { iterator, first, upstreamMs: performance.now() - attemptStarted, attemptStartedAt: attemptStarted }
  })
  if (!outcome.isServed) {
    const metadata = request.isMetadataRequested ? { service_metadata: serviceMetadata(service, request, null, outcome.attemptsMade, startedAt) } : undefined
    return { isOpen: false, error: clientError(outcome.failure, outcome.attempt, service, metadata), attemptsMade: outcome.attemptsMade }
  }
  return { isOpen: true, served: outcome.served, opened: outcome.opened, ...outcome.value }
}
