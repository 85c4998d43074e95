/**
 * A streamed response as a session of typed events. Before the first byte of content, any failure moves
 * on to the next endpoint (docs/decisions.md, Errors and routing): the session starts only once content
 * arrived, so a fallback stays invisible and an early failure is still a clean HTTP error. Past the commit
 * deadline the answer is committed with keep-alives, and from then on failures go in-band (`error`, then a
 * failed `finished`).
 */

import { GatewayError, InternalError, isGatewayError } from '../core/errors'
import { redactSecrets } from '../providers/shared/errors'
import type { OutputItem, Usage } from '../providers/types'
import type { FinishStatus } from '../providers/events'
import type { ActiveStream } from './active-streams'
import { ClientClosedError, toAttemptFailure } from './attempts'
import { performanceKeyOf } from './attempt-health'
import { billAttempt } from './billing'
import { performanceSample } from './endpoint-performance'
import { commitDeadline, drainThenRelease } from './drain'
import { clientError, servedBy, toResponseFailure, type Served } from './fallback'
import { openStream, type OpenStream } from './open-stream'
import type { InferenceRequest } from './request'
import { newResponseId, nowSeconds } from './response-identity'
import { metadataIfRequested } from './service-metadata'
import type { InferenceService } from './service'
import type { EventSink, ResponseFailure, ResponseResult, ResponseSession, SessionEvent, StoppedUsage } from './session-events'
import { createSessionKit, KEEP_ALIVE } from './session-kit'
import { StreamSignal } from './stream-signal'
import { createDeliveredText, estimatedUsage } from './stopped-usage'

// A canonical type (spec `error_type`), so clients read it as the gateway's failure, not the provider's or theirs.
const SHUTDOWN_ERROR_TYPE = 'server'

const shuttingDown = (message: string) => new GatewayError(503, message, { metadata: { error_type: SHUTDOWN_ERROR_TYPE } })

/** The in-band failure of a stream the gateway ended as it shuts down: marked so, whatever the message. */
export const shutdownFailure = (message: string): ResponseFailure => ({ status: 503, errorType: SHUTDOWN_ERROR_TYPE, message, isShutdown: true })

type Opened = Extract<OpenStream, { isOpen: true }>

/** Whether an event carries the answer's content (a token, a finished item): the first one ends the latency. */
const isContent = (type: string) => type.endsWith('.delta') || type === 'response.output_item.done'


/**
 * Starts a streamed response. Resolves once content arrived (or the commit deadline passed), so an
 * early failure can still reject with a clean HTTP error. The events are produced into whatever sink
 * starts the session, one upstream event at a time, at the pace the sink accepts them.
 */
export const openSession = async (service: InferenceService, request: InferenceRequest): Promise<ResponseSession> => {
  const startedAt = performance.now()
  // The gateway may end the stream itself (shutdown): that aborts its upstream as a client leaving would.
  const signal = new StreamSignal(request.signal)
  let shutdownMessage: string | undefined
  let onShutdown: ((message: string) => void) | undefined
  let shutdownRequested!: (value: 'shutdown') => void
  const shutdown = new Promise<'shutdown'>((resolve) => (shutdownRequested = resolve))
  const opening = openStream(service, request, { requestId: request.requestId, signal, deadline: request.deadline }, startedAt)
  const abortOpening = () =>
    void opening.then(
      (open) => open.isOpen && open.opened.abort(),
      () => {},
    )
  const active: ActiveStream = {
    end(message) {
      if (shutdownMessage !== undefined) return
      shutdownMessage = message
      shutdownRequested('shutdown')
      onShutdown?.(message)
      signal.abort(new Error(message))
      abortOpening()
    },
  }
  service.streams.add(active)
  const deadline = commitDeadline(service.commitAfterMs)
  const early = await Promise.race([
    opening.then(
      (open) => (open.isOpen ? ('ready' as const) : ('failed' as const)),
      () => 'failed' as const,
    ),
    deadline.reached,
    shutdown,
  ])
  deadline.cancel()
  if (early === 'failed') {
    service.streams.delete(active)
    const open = await opening
    if (!open.isOpen) throw open.error
  }
  const upstreamMs = early === 'ready' ? ((await opening) as Opened).upstreamMs : 0
  const id = newResponseId()
  const createdAt = nowSeconds(service)

  const start = (sink: EventSink<SessionEvent>) => {
    const kit = createSessionKit(service, sink, { requestId: request.requestId, producer: 'stream producer', active })
    let open: Opened | undefined
    // Set once `started` is out: a failure from then on ends the response that was started.
    let started: Served | undefined
    const items: OutputItem[] = []
    let usage: Usage | undefined
    // When the first content arrived (on `performance.now()`): the end of the attempt's latency.
    let firstContentAt: number | undefined
    // What an estimate counts when the upstream reported no usage.
    const delivered = createDeliveredText()

    const write = (event: SessionEvent) => {
      delivered.add(event)
      kit.write(event)
    }
    // What the answer used when it was cut short after `started`: the upstream's usage if it came, else an estimate.
    const stoppedUsage = (): StoppedUsage | undefined => {
      if (!started) return undefined
      const used = usage ?? estimatedUsage(request.body, delivered)
      return { usage: billAttempt(used, started.attempt, service.byokFeeRate, items.filter(Boolean)), isEstimated: usage === undefined }
    }
    const result = (
      fields: Pick<ResponseResult, 'model' | 'status' | 'output' | 'usage' | 'error' | 'incompleteDetails' | 'servedBy' | 'stopSequence' | 'serviceTier'>,
    ): ResponseResult => ({
      id,
      createdAt,
      completedAt: nowSeconds(service),
      ...fields,
    })

    const finish = (
      served: Served,
      status: ResponseResult['status'],
      failure: ResponseFailure | null,
      incompleteDetails: { reason: string } | null,
      ended: { stopSequence?: string | undefined; serviceTier?: string | undefined } = {},
    ) => {
      const { stopSequence, serviceTier } = ended
      const output = items.filter(Boolean)
      if (status === 'completed' && open) {
        const end = performance.now()
        const contentAt = firstContentAt ?? end
        service.performance.record(
          performanceKeyOf(served.attempt),
          performanceSample(contentAt - open.attemptStartedAt, end - contentAt, usage?.output_tokens),
        )
      }
      // No usage from the upstream (none sent, or the stream broke off first): what was delivered is charged, estimated.
      const billed = billAttempt(usage ?? estimatedUsage(request.body, delivered), served.attempt, service.byokFeeRate, output)
      const finished = result({
        model: served.attempt.model.slug,
        status,
        output,
        usage: billed,
        error: failure,
        incompleteDetails,
        servedBy: servedBy(served),
        ...(stopSequence === undefined ? {} : { stopSequence }),
        ...(serviceTier === undefined ? {} : { serviceTier }),
        ...(usage === undefined ? { isUsageEstimated: true } : {}),
      })
      kit.finish(billed, failure, { ...finished, ...metadataIfRequested(service, request, served, served.attemptNumber, startedAt) })
    }

    // Committed before any content, and every attempt failed: report it in-band, with what a whole answer reports.
    const failBeforeContent = (error: GatewayError, failure = toResponseFailure(error)) => {
      const metadata = error.extraBody?.service_metadata as Record<string, unknown> | undefined
      kit.write({ type: 'started', id, createdAt, model: request.requestedModel, servedBy: null })
      const failed = result({ model: request.requestedModel, status: 'failed', output: [], usage: null, error: failure, incompleteDetails: null, servedBy: null })
      kit.finish(null, failure, metadata ? { ...failed, serviceMetadata: metadata } : failed)
    }

    onShutdown = (message) => {
      if (kit.isEnded) return
      if (!started) return failBeforeContent(shuttingDown(message), shutdownFailure(message))
      open?.opened.abort()
      finish(started, 'failed', shutdownFailure(message), null)
    }

    const run = async () => {
      if (shutdownMessage !== undefined) return onShutdown!(shutdownMessage)
      if (early === 'commit') {
        kit.write(KEEP_ALIVE)
        kit.keepAlive('always')
      }
      let opened: OpenStream
      try {
        opened = await opening
      } catch (error) {
        kit.keepAlive('off')
        if (kit.isEnded) return
        if (error instanceof ClientClosedError) return kit.end()
        return failBeforeContent(isGatewayError(error) ? error : new InternalError('Internal server error'))
      }
      kit.keepAlive('off')
      if (!opened.isOpen) return kit.isEnded ? undefined : failBeforeContent(opened.error)
      open = opened
      if (kit.isEnded) return open.opened.abort()
      const { served, iterator } = open
      const attempt = open.opened
      if (request.body.debug?.echo_upstream_body) {
        let upstreamBody: unknown
        try {
          upstreamBody = JSON.parse(redactSecrets(attempt.request.body, attempt.secrets))
        } catch {
          upstreamBody = null
        }
        write({ type: 'debug', upstreamBody, provider: served.attempt.provider.descriptor.id })
      }
      write({ type: 'started', id, createdAt, model: served.attempt.model.slug, servedBy: servedBy(served) })
      started = served
      kit.keepAlive('when-quiet')

      try {
        for (let next = open.first; ; next = await iterator.next()) {
          if (kit.isEnded) return
          if (next.done) {
            attempt.release()
            return finish(served, 'completed', null, null)
          }
          const event = next.value
          if (event.type === 'upstream.usage') usage = event.usage
          else if (event.type === 'upstream.finish') {
            // Nothing after the finish reaches the client: answer now, and let the upstream end its body in the background.
            drainThenRelease(iterator, attempt)
            return finish(served, event.status satisfies FinishStatus, null, event.incompleteDetails, event)
          } else {
            if (event.type === 'response.output_item.done') items[event.output_index] = event.item
            if (firstContentAt === undefined && isContent(event.type)) firstContentAt = performance.now()
            write(event)
          }
          await kit.paced()
        }
      } catch (error) {
        if (kit.isEnded) return
        attempt.abort()
        // The client went away without the consumer stopping the session (a host that aborts the request's signal):
        // the answer is charged what it used, as a stop would charge it.
        if (error instanceof ClientClosedError || signal.aborted) return kit.end(stoppedUsage())
        const failure = toAttemptFailure(error, served.attempt, attempt.secrets, { timeouts: service.timeouts })
        service.logger.warn('upstream stream failed after content', {
          requestId: request.requestId,
          provider: served.attempt.provider.descriptor.id,
          status: failure.status,
        })
        return finish(served, 'failed', toResponseFailure(clientError(failure, served.attempt, service)), null)
      }
    }

    // A bug, not an upstream failure: the client must not take what it got for a whole answer.
    kit.run(run, () => open?.opened.abort())

    // The consumer went away: abort the upstream at once.
    return kit.stopper(() => {
      open?.opened.abort()
      abortOpening()
      open?.iterator.return?.()?.catch(() => {})
      return stoppedUsage()
    })
  }

  return { request: request.body, overheadMs: performance.now() - startedAt - upstreamMs, start }
}
