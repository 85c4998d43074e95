/**
 * Runs a response over its planned attempts. Before the first byte of content, any failure moves
 * on to the next endpoint (docs/decisions.md, Errors and routing); the client sees only the last failure, as a clean HTTP error.
 * Streams hold their start-up events until content arrives, so a fallback stays invisible; after
 * that, failures go in-band (`response.failed`, then `[DONE]`).
 */

import { randomHex } from '../core/crypto'
import { GatewayError, InternalError, isGatewayError } from '../core/errors'
import type { Logger } from '../core/logger'
import type { UpstreamCall, UpstreamStreamEvent } from '../providers/contract'
import { isUpstreamFailure, redactSecrets } from '../providers/shared/errors'
import type { ActiveStream, ActiveStreams } from './active-streams'
import { outcomeOf, outlierKeys } from './attempt-health'
import { openAttempt, readJsonBody, toAttemptFailure, ClientClosedError, type AttemptEnvironment, type OpenedAttempt } from './attempts'
import { billUsage, type BilledUsage } from './billing'
import { toResponseObject, type ResponseState } from '../writers/envelope'
import type { AttemptOutcome, OutlierDetector } from './outlier-detection'
import type { ResponsesRequestBody } from './request.schemas'
import { boundedRetryAfter } from './retry-after'
import type { Attempt } from './routing'
import type { RetryPolicy } from './runtime'
import { StreamSignal } from './stream-signal'
import { emptyUsage, type OutputItem, type ResponsesRequest, type Usage } from '../providers/types'
import type { ChunkProducer } from '../core/event-stream-response'

export interface ExecutionOptions extends AttemptEnvironment {
  body: ResponsesRequestBody
  attempts: Attempt[]
  requestedModel: string
  endUserId: string
  byokFeeRate: number
  isMetadataRequested: boolean
  region: string
  /** How long a stream may wait for content before the HTTP response is committed with keep-alives. */
  commitAfterMs: number
  keepAliveMs: number
  logger: Logger
  retry: RetryPolicy
  outliers: OutlierDetector
  streams: ActiveStreams
}

interface Served {
  attempt: Attempt
  attemptNumber: number
}

// Prompt problems the caller can fix; other failures are the provider's or ours.
const PROMPT_ERROR_TYPES = new Set([
  'context_length_exceeded',
  'max_tokens_exceeded',
  'token_limit_exceeded',
  'string_too_long',
  'invalid_request',
  'invalid_prompt',
  'content_policy_violation',
  'refusal',
])
const IMAGE_ERROR_TYPES = new Set(['invalid_image', 'image_too_large', 'image_too_small', 'unsupported_image_format', 'image_download_failed', 'image_not_found'])

/**
 * docs/decisions.md, Errors and routing: on the Responses skin `error.code` is one of the four codes clients know; the precise type travels
 * in `error_type` beside it.
 */
export const responsesErrorCode = (errorType: unknown): string => {
  if (errorType === 'rate_limit_exceeded') return 'rate_limit_exceeded'
  if (typeof errorType === 'string' && PROMPT_ERROR_TYPES.has(errorType)) return 'invalid_prompt'
  if (typeof errorType === 'string' && IMAGE_ERROR_TYPES.has(errorType)) return 'image_content_policy_violation'
  return 'server_error'
}

const newResponseId = () => `resp_${randomHex(24)}`
const nowSeconds = () => Math.floor(Date.now() / 1000)

/** `attemptsMade`: how many attempts were sent (skipped and unreached endpoints are not attempts). */
const serviceMetadata = (options: ExecutionOptions, served: Served | null, attemptsMade: number, startedAt: number, strategy: string) => {
  const available = options.attempts.map((attempt) => ({
    model: attempt.model.slug,
    provider: attempt.provider.descriptor.id,
    selected: served?.attempt === attempt,
  }))
  return {
    attempt: served?.attemptNumber ?? attemptsMade,
    endpoints: { available, total: available.length },
    generation_time: Math.round(performance.now() - startedAt),
    is_byok: served?.attempt.credential != null,
    pipeline: [],
    region: options.region,
    requested: options.requestedModel,
    strategy,
    summary: served
      ? `${served.attempt.model.slug} via ${served.attempt.provider.descriptor.id} on attempt ${served.attemptNumber} of ${options.attempts.length}`
      : `no endpoint succeeded after ${attemptsMade} attempt${attemptsMade === 1 ? '' : 's'}`,
  }
}

const strategyOf = (served: Served | null, options: ExecutionOptions) =>
  served && (served.attemptNumber > 1 || served.attempt.model.slug !== options.requestedModel) ? 'fallback' : 'direct'

const callFor = (options: ExecutionOptions, attempt: Attempt, stream: boolean): UpstreamCall => ({
  request: options.body as unknown as ResponsesRequest,
  upstreamModel: attempt.endpoint.model,
  stream,
  endUserId: options.endUserId,
  maxEventBytes: options.limits.maxEventBytes,
})

const bill = (usage: Usage, attempt: Attempt, options: ExecutionOptions): BilledUsage =>
  billUsage(usage, attempt.endpoint.pricing, { isByok: attempt.credential !== null, byokFeeRate: options.byokFeeRate })

const withRetryAfter = (seconds: string | undefined) => (seconds === undefined ? {} : { headers: { 'retry-after': seconds } })

/**
 * The error the client sees for a failed attempt. A provider refusing the operator's shared key is
 * the operator's problem, not the caller's: it becomes a 502, never a 401 that blames the caller.
 */
const clientError = (failure: GatewayError, attempt: Attempt | undefined, options: ExecutionOptions, extraBody?: Record<string, unknown>) => {
  if (!isUpstreamFailure(failure)) return failure
  const provider = attempt?.provider.descriptor
  const isSharedCredentialProblem = attempt?.credential === null && ['authentication', 'permission_denied', 'payment_required'].includes(failure.errorType)
  const errorType = isSharedCredentialProblem ? 'provider_unavailable' : failure.errorType
  const status = isSharedCredentialProblem ? 502 : failure.status
  const message = isSharedCredentialProblem ? `${provider?.displayName ?? 'The provider'} is unavailable` : `${provider?.displayName ?? 'Provider'}: ${failure.message}`
  return new GatewayError(status, redactSecrets(message), {
    metadata: {
      error_type: errorType,
      ...(provider ? { provider_name: provider.id } : {}),
      ...(failure.providerCode && !isSharedCredentialProblem ? { provider_code: failure.providerCode } : {}),
    },
    ...withRetryAfter(boundedRetryAfter(failure.retryAfterSeconds, options.retry.maxRetryAfterSeconds)),
    ...(extraBody ? { extraBody } : {}),
    cause: failure,
  })
}

type ServedOutcome<T> =
  | { isServed: true; value: T; served: Served; opened: OpenedAttempt }
  | { isServed: false; failure: GatewayError; attempt: Attempt | undefined; attemptsMade: number }

/**
 * The fallback loop (docs/decisions.md, Errors and routing): tries the attempts in order until `use` succeeds on an opened one. Before the
 * first byte of content every failure moves on, within `retry.maxAttempts` and the gateway's retry budget;
 * endpoints and keys that keep failing are skipped unless every planned one is (then all are tried, as
 * Envoy's panic routing does: a wrong ejection must not fail every request). The client closing stops everything.
 */
const firstServedAttempt = async <T>(
  options: ExecutionOptions,
  stream: boolean,
  // `startedAt` lets `use` stop the upstream's clock where the gateway's own work begins.
  use: (opened: OpenedAttempt, call: UpstreamCall, attempt: Attempt, startedAt: number) => Promise<T>,
): Promise<ServedOutcome<T>> => {
  const { retry, outliers } = options
  retry.budget.deposit()
  const isPanic = options.attempts.every((attempt) => outliers.isEjected(outlierKeys(attempt)))
  // Built only when every attempt failed: an error's stack trace is not free on every request.
  let lastFailure: GatewayError | undefined
  let lastAttempt: Attempt | undefined
  let attemptsMade = 0
  for (const attempt of options.attempts) {
    const keys = outlierKeys(attempt)
    if (!isPanic && outliers.isEjected(keys)) continue
    if (attemptsMade >= retry.maxAttempts) break
    if (attemptsMade > 0 && !retry.budget.tryWithdraw()) {
      options.logger.warn('retry budget exhausted: no further attempt', { requestId: options.requestId, attempts: attemptsMade })
      break
    }
    attemptsMade++
    outliers.admit(keys)
    const call = callFor(options, attempt, stream)
    let opened: OpenedAttempt | undefined
    let outcome: AttemptOutcome = 'unknown'
    try {
      const attemptStarted = performance.now()
      opened = await openAttempt(attempt, call, options)
      const value = await use(opened, call, attempt, attemptStarted)
      outcome = 'answered'
      return { isServed: true, value, served: { attempt, attemptNumber: attemptsMade }, opened }
    } catch (error) {
      opened?.abort()
      if (error instanceof ClientClosedError || options.signal.aborted) throw new ClientClosedError()
      lastFailure = toAttemptFailure(error, attempt, opened?.secrets ?? [])
      lastAttempt = attempt
      outcome = outcomeOf(lastFailure)
      logAttemptFailure(options, attempt, attemptsMade, lastFailure)
    } finally {
      outliers.record(keys, outcome)
    }
  }
  return { isServed: false, failure: lastFailure ?? new InternalError('No attempt was made'), attempt: lastAttempt, attemptsMade }
}

/** Runs the attempts in order until one answers; returns the complete Response object. */
export const executeNonStreaming = async (options: ExecutionOptions) => {
  const startedAt = performance.now()
  const outcome = await firstServedAttempt(options, false, async (opened, call, attempt, attemptStarted) => {
    const body = await readJsonBody(opened.response, options.limits.maxResponseBytes)
    const upstreamMs = performance.now() - attemptStarted
    opened.release()
    // Translated inside the attempt, so a malformed answer still falls back to the next endpoint.
    return { result: attempt.provider.adapter.readResult(body, call), upstreamMs }
  })
  if (!outcome.isServed) {
    throw clientError(
      outcome.failure,
      outcome.attempt,
      options,
      options.isMetadataRequested ? { service_metadata: serviceMetadata(options, null, outcome.attemptsMade, startedAt, 'fallback') } : undefined,
    )
  }
  const { served } = outcome
  const { result, upstreamMs } = outcome.value
  const state: ResponseState = {
    status: result.status,
    output: result.output,
    usage: bill(result.usage, served.attempt, options),
    error: null,
    errorType: null,
    incompleteDetails: result.incompleteDetails,
    completedAt: nowSeconds(),
    ...(options.isMetadataRequested ? { serviceMetadata: serviceMetadata(options, served, served.attemptNumber, startedAt, strategyOf(served, options)) } : {}),
  }
  return {
    response: toResponseObject({ id: newResponseId(), createdAt: nowSeconds(), model: served.attempt.model.slug, request: options.body }, state),
    overheadMs: performance.now() - startedAt - upstreamMs,
  }
}

const logAttemptFailure = (options: ExecutionOptions, attempt: Attempt, attemptNumber: number, failure: GatewayError) => {
  options.logger.warn('upstream attempt failed', {
    requestId: options.requestId,
    attempt: attemptNumber,
    model: attempt.model.slug,
    provider: attempt.provider.descriptor.id,
    isByok: attempt.credential !== null,
    status: failure.status,
    errorType: isUpstreamFailure(failure) ? failure.errorType : undefined,
  })
}

interface OpenStream {
  served: Served
  opened: OpenedAttempt
  iterator: AsyncIterator<UpstreamStreamEvent>
  first: IteratorResult<UpstreamStreamEvent>
  upstreamMs: number
}

/** Tries attempts until one yields its first event. */
const openStream = async (options: ExecutionOptions): Promise<OpenStream> => {
  const outcome = await firstServedAttempt(options, true, async (opened, call, attempt, attemptStarted) => {
    const iterator = attempt.provider.adapter.readStream(opened.response.body, call)[Symbol.asyncIterator]()
    const first = await iterator.next()
    return { iterator, first, upstreamMs: performance.now() - attemptStarted }
  })
  if (!outcome.isServed) throw clientError(outcome.failure, outcome.attempt, options)
  return { served: outcome.served, opened: outcome.opened, ...outcome.value }
}

// Events are written as text: the Node bridge hands strings to the socket as they are, and a web stream encodes them.
const encodeEvent = (event: Record<string, unknown> & { type: string }, sequenceNumber: number) => {
  // `sequence_number` goes last, spliced into the serialised event rather than copied into a new object.
  const json = JSON.stringify(event)
  return `event: ${event.type}\ndata: ${json.slice(0, -1)},"sequence_number":${sequenceNumber}}\n\n`
}
const KEEP_ALIVE = ': PROCESSING\n\n'
const DONE = 'data: [DONE]\n\n'

/** How long an upstream may take to end its body after its last event before the connection is dropped. */
const DRAIN_DEADLINE_MS = 5_000

/**
 * Reads an upstream stream to its end after its finish event. An exchange that ends cleanly leaves its
 * keep-alive connection reusable; aborting one mid-body costs a new connection (and a handshake) next time.
 */
const drainThenRelease = (iterator: AsyncIterator<UpstreamStreamEvent>, opened: OpenedAttempt): void => {
  const deadline = setTimeout(() => {
    opened.abort()
    iterator.return?.()?.catch(() => {})
  }, DRAIN_DEADLINE_MS)
  const drain = async () => {
    while (!(await iterator.next()).done) {
      // Events after the finish (a trailing keep-alive) carry nothing the client still needs.
    }
  }
  drain()
    .then(
      () => opened.release(),
      () => opened.abort(),
    )
    .finally(() => clearTimeout(deadline))
}

// A canonical type (spec `error_type`), so clients read it as the gateway's failure, not the provider's or theirs.
const SHUTDOWN_ERROR_TYPE = 'server'

const shuttingDown = (message: string) => new GatewayError(503, message, { metadata: { error_type: SHUTDOWN_ERROR_TYPE } })

/** Resolves `'commit'` after `ms` unless cancelled first. */
const commitDeadline = (ms: number) => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const reached = new Promise<'commit'>((resolve) => {
    timer = setTimeout(() => resolve('commit'), ms)
  })
  return { reached, cancel: () => clearTimeout(timer) }
}

/**
 * Starts a streamed response. Resolves once content arrived (or the commit deadline passed), so an
 * early failure can still reject with a clean HTTP error. The events are produced into whatever sink
 * starts the returned producer, one upstream event at a time, at the pace the sink accepts them.
 */
export const executeStreaming = async (options: ExecutionOptions): Promise<{ produce: ChunkProducer; overheadMs: number }> => {
  const startedAt = performance.now()
  // The gateway may end the stream itself (shutdown): that aborts its upstream as a client leaving would.
  const signal = new StreamSignal(options.signal)
  let shutdownMessage: string | undefined
  let onShutdown: ((message: string) => void) | undefined
  let shutdownRequested!: (value: 'shutdown') => void
  const shutdown = new Promise<'shutdown'>((resolve) => (shutdownRequested = resolve))
  const opening = openStream({ ...options, signal })
  const active: ActiveStream = {
    end(message) {
      if (shutdownMessage !== undefined) return
      shutdownMessage = message
      shutdownRequested('shutdown')
      onShutdown?.(message)
      signal.abort(new Error(message))
      void opening.then(
        (open) => open.opened.abort(),
        () => {},
      )
    },
  }
  options.streams.add(active)
  const deadline = commitDeadline(options.commitAfterMs)
  const early = await Promise.race([opening.then(() => 'ready' as const, () => 'failed' as const), deadline.reached, shutdown])
  deadline.cancel()
  if (early === 'failed') {
    options.streams.delete(active)
    await opening
  }
  const upstreamMs = early === 'ready' ? (await opening).upstreamMs : 0
  const responseId = newResponseId()
  const createdAt = nowSeconds()

  const produce: ChunkProducer = (sink) => {
    let sequence = 0
    let open: OpenStream | undefined
    // Set once the start-up events are out: a failure from then on ends the response that was started.
    let started: Served | undefined
    let isStopped = false
    let needsDrain = false
    // Keep-alive comments whenever the upstream goes quiet (long reasoning), so proxies keep the connection.
    let lastWrite = performance.now()
    let keepAlive: ReturnType<typeof setInterval> | undefined
    const items: OutputItem[] = []
    let usage: Usage | undefined
    let finished: { status: 'completed' | 'incomplete'; incompleteDetails: { reason: string } | null } = { status: 'completed', incompleteDetails: null }

    const write = (chunk: string) => {
      lastWrite = performance.now()
      if (!sink.write(chunk)) needsDrain = true
    }
    const emit = (event: Record<string, unknown> & { type: string }) => write(encodeEvent(event, sequence++))
    const base = (model: string) => ({ id: responseId, createdAt, model, request: options.body })
    const inProgress = (model: string) =>
      toResponseObject(base(model), { status: 'in_progress', output: [], usage: null, error: null, errorType: null, incompleteDetails: null, completedAt: null })
    const end = () => {
      isStopped = true
      clearInterval(keepAlive)
      options.streams.delete(active)
      sink.close()
    }

    const finish = (served: Served, status: ResponseState['status'], extra: Partial<ResponseState>) => {
      const response = toResponseObject(
        { id: responseId, createdAt, model: served.attempt.model.slug, request: options.body },
        {
          status,
          output: items.filter(Boolean),
          usage: bill(usage ?? emptyUsage(), served.attempt, options),
          error: null,
          errorType: null,
          incompleteDetails: null,
          completedAt: nowSeconds(),
          ...(options.isMetadataRequested ? { serviceMetadata: serviceMetadata(options, served, served.attemptNumber, startedAt, strategyOf(served, options)) } : {}),
          ...extra,
        },
      )
      emit({ type: status === 'completed' ? 'response.completed' : status === 'incomplete' ? 'response.incomplete' : 'response.failed', response })
      write(DONE)
      end()
    }

    // Committed before any content, and every attempt failed: report it in-band.
    const failBeforeContent = (error: unknown) => {
      const failure = isGatewayError(error) ? error : new InternalError('Internal server error')
      emit({ type: 'response.created', response: inProgress(options.requestedModel) })
      emit({ type: 'response.in_progress', response: inProgress(options.requestedModel) })
      emit({
        type: 'response.failed',
        response: toResponseObject(base(options.requestedModel), {
          status: 'failed',
          output: [],
          usage: null,
          error: { code: responsesErrorCode(failure.metadata?.error_type), message: failure.status === 500 ? 'Internal server error' : failure.message },
          errorType: (failure.metadata?.error_type as string | undefined) ?? 'server',
          incompleteDetails: null,
          completedAt: nowSeconds(),
        }),
      })
      write(DONE)
      end()
    }

    onShutdown = (message) => {
      if (isStopped) return
      if (!started) return failBeforeContent(shuttingDown(message))
      open?.opened.abort()
      finish(started, 'failed', { error: { code: responsesErrorCode(SHUTDOWN_ERROR_TYPE), message }, errorType: SHUTDOWN_ERROR_TYPE })
    }

    const run = async () => {
      if (shutdownMessage !== undefined) return onShutdown!(shutdownMessage)
      if (early === 'commit') {
        write(KEEP_ALIVE)
        keepAlive = setInterval(() => write(KEEP_ALIVE), options.keepAliveMs)
      }
      try {
        open = await opening
      } catch (error) {
        clearInterval(keepAlive)
        if (isStopped) return
        if (error instanceof ClientClosedError) return end()
        return failBeforeContent(error)
      }
      clearInterval(keepAlive)
      if (isStopped) return open.opened.abort()
      const { served, iterator, opened } = open
      const model = served.attempt.model.slug
      if (options.body.debug?.echo_upstream_body) {
        let upstreamBody: unknown
        try {
          upstreamBody = JSON.parse(redactSecrets(opened.request.body, opened.secrets))
        } catch {
          upstreamBody = null
        }
        emit({ type: 'response.debug', debug: { upstream_body: upstreamBody, provider: served.attempt.provider.descriptor.id } })
      }
      // The two start-up events carry the same response object: it is serialised once.
      const startingResponse = JSON.stringify(inProgress(model))
      write(`event: response.created\ndata: {"type":"response.created","response":${startingResponse},"sequence_number":${sequence++}}\n\n`)
      write(`event: response.in_progress\ndata: {"type":"response.in_progress","response":${startingResponse},"sequence_number":${sequence++}}\n\n`)
      started = served
      keepAlive = setInterval(() => {
        if (performance.now() - lastWrite >= options.keepAliveMs) write(KEEP_ALIVE)
      }, options.keepAliveMs)

      try {
        for (let result = open.first; ; result = await iterator.next()) {
          if (isStopped) return
          if (result.done) {
            opened.release()
            return finish(served, finished.status, { incompleteDetails: finished.incompleteDetails })
          }
          const event = result.value
          if (event.type === 'upstream.usage') usage = (event as { usage: Usage }).usage
          else if (event.type === 'upstream.finish') {
            // Nothing after the finish reaches the client: answer now, and let the upstream end its body in the background.
            finished = event as typeof finished
            drainThenRelease(iterator, opened)
            return finish(served, finished.status, { incompleteDetails: finished.incompleteDetails })
          } else if (event.type === 'relayed') emit(event.event)
          else {
            if (event.type === 'response.output_item.done') items[event.output_index] = event.item
            emit(event as unknown as Record<string, unknown> & { type: string })
          }
          // The client's pace sets the upstream's: a full socket pauses the reading.
          if (needsDrain) {
            needsDrain = false
            await sink.ready()
          }
        }
      } catch (error) {
        if (isStopped) return
        opened.abort()
        if (error instanceof ClientClosedError || signal.aborted) return end()
        const failure = toAttemptFailure(error, served.attempt, opened.secrets)
        const visible = clientError(failure, served.attempt, options)
        options.logger.warn('upstream stream failed after content', {
          requestId: options.requestId,
          provider: served.attempt.provider.descriptor.id,
          status: failure.status,
        })
        return finish(served, 'failed', {
          error: { code: responsesErrorCode(visible.metadata?.error_type), message: visible.status === 500 ? 'Internal server error' : visible.message },
          errorType: String(visible.metadata?.error_type ?? 'server'),
        })
      }
    }

    run().catch((error: unknown) => {
      // A bug, not an upstream failure: the client must not take what it got for a whole answer.
      isStopped = true
      clearInterval(keepAlive)
      options.streams.delete(active)
      open?.opened.abort()
      options.logger.error('stream producer failed', { requestId: options.requestId, error })
      sink.fail(error)
    })

    // The client went away: abort the upstream at once.
    return () => {
      if (isStopped) return
      isStopped = true
      clearInterval(keepAlive)
      options.streams.delete(active)
      open?.opened.abort()
      void opening.then(
        (opened) => opened.opened.abort(),
        () => {},
      )
      open?.iterator.return?.()?.catch(() => {})
    }
  }

  return { produce, overheadMs: performance.now() - startedAt - upstreamMs }
}
