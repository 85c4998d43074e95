/**
 * The generation record of one request, and the observer that writes it (docs/decisions.md, Usage ledger):
 * a whole answer is recorded before it is returned, a stream from its `finished` event before the client sees
 * the end, a stream the client stopped with what it had used, and a failure once an upstream was tried or a guardrail
 * refused the request.
 */

import { isGatewayError, withMetadata } from '../core/errors'
import { hmacSha256Hex } from '../core/crypto'
import type { JsonObject } from '../storage/contract'
import { ClientClosedError } from '../engine/attempts'
import type { BilledUsage } from '../engine/billing'
import { observeSession, type SessionObserver } from '../engine/observe'
import { paidUsageOf } from '../features/guardrails/enforce'
import { guardrailEventsOf, setGuardrailEvents } from '../features/guardrails/request-guardrails'
import { RESPONSE_CACHE } from '../features/response-cache/request-state'
import { guardrailRefusalOf, type GuardrailRefusal } from '../engine/refusal'
import { endUserIdFor } from '../engine/end-user'
import type { InferenceRequest } from '../engine/request'
import type { ResponsesRequestBody } from '../engine/request.schemas'
import { newResponseId } from '../engine/response-identity'
import type { RunOutcome } from '../engine/run-stage'
import type { InferenceService } from '../engine/service'
import type { ResponseResult, StoppedUsage } from '../engine/session-events'
import { contentLength } from '../engine/stopped-usage'
import type { GenerationApi, GenerationContentRecord, GenerationRecord, GenerationStatus } from '../repositories/generations'
import type { Caller } from '../services/caller'
import type { Ledger } from './ledger'
import { answeredContent, failedContent, shouldKeepContent } from './generation-content'

/** What a request brings to its record beyond the prepared request and its answer. */
export interface GenerationContext {
  api: GenerationApi
  caller: Caller
  requestId: string
  sessionId: string | undefined
  /** When the request arrived, on the gateway's clock. */
  arrivedAt: Date
  /** The same instant on `performance.now()`, for durations. */
  startedAt: number
  /** The preset the request used, if any. */
  presetId?: string
}

/** How the answer ended, in the terms of a record. */
export interface GenerationOutcome {
  id: string
  status: GenerationStatus
  httpStatus: number
  errorType: string | null
  /** The model that served (or was requested). */
  model: string
  usage: BilledUsage | null
  isUsageEstimated: boolean
  finishReason: string | null
  nativeFinishReason: string | null
  latencyMs: number
  timeToFirstTokenMs: number | null
  generationTimeMs: number | null
}

/**
 * What a record reads of the request: a prepared one, or what is known of one a guardrail refused before it was
 * prepared (no attempts, nothing planned).
 */
export type RecordedRequest = Pick<InferenceRequest, 'requestedModel' | 'attemptReports' | 'attempts' | 'endUserId' | 'routing'> & {
  body: Partial<Pick<ResponsesRequestBody, 'stream' | 'user' | 'safety_identifier' | 'trace'>>
}

const sessionHashes = new Map<string, Promise<string>>()
const SESSION_CACHE_MAX = 4_096

/** A keyed hash of a session id, per account (as end-user ids are, src/engine/end-user.ts): groups without storing it. */
export const sessionHashFor = (secret: string, accountId: string, sessionId: string): Promise<string> => {
  const cacheKey = `${secret}\u0000${accountId}\u0000${sessionId}`
  let hash = sessionHashes.get(cacheKey)
  if (!hash) {
    if (sessionHashes.size >= SESSION_CACHE_MAX) sessionHashes.clear()
    hash = hmacSha256Hex(`modelgate-session:${secret}:${accountId}`, sessionId).then((hex) => `mgs_${hex.slice(0, 32)}`)
    sessionHashes.set(cacheKey, hash)
    hash.catch(() => sessionHashes.delete(cacheKey))
  }
  return hash
}

const hasToolCall = (result: ResponseResult) => result.output.some((item) => item.type === 'function_call')

/** OpenRouter's normalized finish reason, and the Responses API's own ending it came from. */
const finishReasonsOf = (result: ResponseResult): Pick<GenerationOutcome, 'finishReason' | 'nativeFinishReason'> => {
  if (result.status === 'failed') return { finishReason: 'error', nativeFinishReason: 'failed' }
  if (result.status === 'incomplete') {
    const reason = result.incompleteDetails?.reason ?? 'incomplete'
    return { finishReason: reason === 'content_filter' ? 'content_filter' : 'length', nativeFinishReason: reason }
  }
  return { finishReason: hasToolCall(result) ? 'tool_calls' : 'stop', nativeFinishReason: 'completed' }
}

/** The outcome of an answer that finished (whole or streamed). */
export const finishedOutcome = (result: ResponseResult, timing: Pick<GenerationOutcome, 'latencyMs' | 'timeToFirstTokenMs' | 'generationTimeMs'>): GenerationOutcome => ({
  id: result.id,
  status: result.status,
  httpStatus: result.error?.status ?? 200,
  errorType: result.error?.errorType ?? null,
  model: result.model,
  usage: result.usage,
  isUsageEstimated: result.isUsageEstimated === true,
  ...finishReasonsOf(result),
  ...timing,
})

const errorTypeOf = (error: unknown): string => {
  if (!isGatewayError(error)) return 'internal_error'
  const type = error.metadata?.error_type
  return typeof type === 'string' ? type : `http_${error.status}`
}

const round = (amount: number) => Math.round(amount * 1e12) / 1e12

/** What the guardrails' content filters found for the request, as the record keeps it (a copy). */
const cacheSourceOf = (request: RecordedRequest) => {
  const sourceId = RESPONSE_CACHE.get(request)?.outcome?.sourceId
  return sourceId === undefined ? {} : { responseCacheSourceId: sourceId }
}

const guardrailsOf = (request: RecordedRequest) => {
  const events = guardrailEventsOf(request)
  return events && events.length > 0 ? { guardrails: events.map((event) => ({ ...event, patterns: [...event.patterns] })) } : {}
}

/**
 * The record of one generation: everything the ledger keeps, from the request, its attempts and how it ended.
 * Pure, so other consumers of finished generations (limits, exports) build the same record.
 */
export const toGenerationRecord = (
  service: InferenceService,
  context: GenerationContext,
  request: RecordedRequest,
  outcome: GenerationOutcome,
  hashes: { session: string | null },
): GenerationRecord => {
  const { caller, api } = context
  const attempts = request.attemptReports.map((report) => ({ ...report }))
  const served = attempts.find((attempt) => attempt.status === 200) ?? null
  const usage = outcome.usage
  const isByok = usage?.is_byok ?? served?.isByok ?? false
  const cost = usage?.cost ?? 0
  return {
    id: outcome.id,
    createdAt: context.arrivedAt.toISOString(),
    requestId: context.requestId,
    accountId: caller.account.id,
    workspaceId: caller.key.workspaceId,
    keyHash: caller.key.hash,
    userId: caller.key.creatorUserId,
    api,
    requestedModel: request.requestedModel,
    model: outcome.model,
    provider: served?.provider ?? null,
    endpoint: served?.endpoint ?? null,
    isByok,
    isStreamed: request.body.stream === true,
    status: outcome.status,
    httpStatus: outcome.httpStatus,
    errorType: outcome.errorType,
    finishReason: outcome.finishReason,
    nativeFinishReason: outcome.nativeFinishReason,
    tokens: {
      input: usage?.input_tokens ?? 0,
      output: usage?.output_tokens ?? 0,
      cached: usage?.input_tokens_details.cached_tokens ?? 0,
      reasoning: usage?.output_tokens_details.reasoning_tokens ?? 0,
    },
    isUsageEstimated: outcome.isUsageEstimated,
    cost,
    upstreamCost: usage?.cost_details.upstream_inference_cost ?? null,
    byokFee: isByok ? round(cost) : 0,
    latencyMs: outcome.latencyMs,
    timeToFirstTokenMs: outcome.timeToFirstTokenMs,
    generationTimeMs: outcome.generationTimeMs,
    attempts,
    endUser: request.body.user != null || request.body.safety_identifier != null ? request.endUserId : null,
    session: hashes.session,
    // A copy: the record is handed over to the store (src/repositories/generations.ts), the body stays the request's.
    trace: request.body.trace === undefined ? null : (JSON.parse(JSON.stringify(request.body.trace)) as JsonObject),
    presetId: context.presetId ?? null,
    routing: {
      requested: request.requestedModel,
      // A router or fusion chose the models (src/features/plugins/); otherwise the requested model served, or a fallback.
      // A request refused before any attempt fell back to nothing: direct, as its service_metadata says.
      strategy:
        request.routing?.strategy ??
        (attempts.length === 0 || (served && attempts.indexOf(served) === 0 && outcome.model === request.requestedModel) ? 'direct' : 'fallback'),
      attempts: attempts.length,
      endpointsPlanned: request.attempts.length,
      region: service.region,
    },
    // Served from the response cache: the generation whose answer it was (docs/decisions.md, Response cache).
    ...cacheSourceOf(request),
    ...guardrailsOf(request),
  }
}

const elapsedSince = (startedAt: number) => Math.round(performance.now() - startedAt)

export interface GenerationRecorder {
  /**
   * The outcome of running the request, with its record written (or its stream observed) before it is returned.
   * A guardrail's refusal is rejected with its record's id in the error.
   */
  run(running: Promise<RunOutcome>): Promise<RunOutcome>
}

/**
 * With the ledger off (`ledger.enabled: false`) a request builds no record and its stream gets no observer:
 * the answer passes as it was run, so the ledger costs nothing at all.
 */
const UNRECORDED: GenerationRecorder = { run: (running) => running }

/** The session hash the record keeps; null without a session. */
const sessionOf = (service: InferenceService, context: GenerationContext): Promise<string | null> =>
  context.sessionId === undefined ? Promise.resolve(null) : sessionHashFor(service.endUserSecret, context.caller.account.id, context.sessionId)

/**
 * The outcome of a failure before any answer, under an id of its own: with what it cost when an answer was paid for
 * and then refused (a guardrail blocked its output), else nothing.
 */
const failureOutcome = (error: unknown, request: RecordedRequest, startedAt: number): GenerationOutcome => {
  const usage = paidUsageOf(error) ?? null
  return {
    id: newResponseId(),
    status: 'failed',
    httpStatus: isGatewayError(error) ? error.status : 500,
    errorType: errorTypeOf(error),
    model: (usage && request.attemptReports.find((report) => report.status === 200)?.model) || request.requestedModel,
    usage,
    isUsageEstimated: false,
    finishReason: 'error',
    nativeFinishReason: 'failed',
    latencyMs: elapsedSince(startedAt),
    timeToFirstTokenMs: null,
    generationTimeMs: null,
  }
}

/** The request as the record of a guardrail's refusal reads it: what the request found, then what refused it. */
const withRefusalEvents = (request: RecordedRequest, refusal: GuardrailRefusal | undefined): RecordedRequest => {
  if (!refusal || refusal.events.length === 0) return request
  const refused = { ...request }
  setGuardrailEvents(refused, [...(guardrailEventsOf(request) ?? []), ...refusal.events])
  return refused
}

/** The refusal's error with its record's id in `error.metadata.generation_id` (spec Errors), so `GET /generation` finds it. */
const withGenerationId = (error: unknown, id: string): unknown => (isGatewayError(error) ? withMetadata(error, { generation_id: id }) : error)

/** Writes the record of one prepared request as its answer ends; records nothing when `ledger` is null (off). */
export const createGenerationRecorder = (
  ledger: Ledger | null,
  service: InferenceService,
  context: GenerationContext,
  request: InferenceRequest,
): GenerationRecorder => {
  if (ledger === null) return UNRECORDED
  const session = sessionOf(service, context)
  // The settlements that charge the answer wait for its record, which carries them (docs/decisions.md, "Books that balance").
  const gate = service.spend.book.gate(context.requestId)
  const write = async (outcome: GenerationOutcome, recorded: RecordedRequest = request) => {
    let record: GenerationRecord
    try {
      record = toGenerationRecord(service, context, recorded, outcome, { session: await session })
    } catch (error) {
      void gate.open()
      throw error
    }
    await ledger.write(record, gate)
  }
  const isContentKept = shouldKeepContent(request, context.api)
  // Content is the caller's record, not the answer: a store that cannot take it is logged, never fails the request.
  const keepContent = async (content: () => GenerationContentRecord) => {
    if (!isContentKept) return
    await ledger.writeContent(content()).catch((error: unknown) => service.logger.error('generation content lost', { requestId: context.requestId, error }))
  }
  const createdAt = context.arrivedAt.toISOString()

  const observer = (): SessionObserver => {
    let id: string | undefined
    let model = request.requestedModel
    let firstContentMs: number | null = null
    let isWritten = false
    const streamTiming = () => {
      const latencyMs = elapsedSince(context.startedAt)
      return { latencyMs, timeToFirstTokenMs: firstContentMs, generationTimeMs: firstContentMs === null ? null : latencyMs - firstContentMs }
    }
    /** The outcome of a stream that ended before its `finished` event: stopped by its client, or broken by a bug. */
    const endedEarly = (how: 'cancelled' | 'broken', used: StoppedUsage | undefined): GenerationOutcome | undefined => {
      if (id === undefined) return undefined
      const usage = used?.usage ?? null
      const ending =
        how === 'cancelled'
          ? // nginx's "client closed request": the client, not the gateway, ended it.
            ({ status: 'cancelled', httpStatus: 499, errorType: null, finishReason: null, nativeFinishReason: 'cancelled' } as const)
          : ({ status: 'failed', httpStatus: 500, errorType: 'internal_error', finishReason: 'error', nativeFinishReason: 'failed' } as const)
      return { id, model, usage, isUsageEstimated: used?.isEstimated === true, ...ending, ...streamTiming() }
    }
    const writeInBackground = (outcome: GenerationOutcome | undefined) => {
      if (!outcome) void gate.open()
      if (!outcome || isWritten) return
      isWritten = true
      // Nobody waits for this answer any more: a failure can only be logged.
      write(outcome).catch((error: unknown) => service.logger.error('usage ledger: record lost', { requestId: context.requestId, error }))
    }
    return {
      onEvent(event) {
        if (event.type === 'started') {
          id = event.id
          model = event.model
          return
        }
        if (contentLength(event) > 0) firstContentMs ??= elapsedSince(context.startedAt)
      },
      async beforeFinished(result) {
        isWritten = true
        await write(finishedOutcome(result, streamTiming()))
        await keepContent(() => answeredContent(request, result, createdAt))
      },
      onEnd(end) {
        if (end.how === 'stopped') writeInBackground(endedEarly('cancelled', end.used))
        else if (end.how === 'broken') writeInBackground(endedEarly('broken', undefined))
      },
    }
  }

  /** Records a failure before any answer (an upstream was tried, or a guardrail refused it); resolves with its id. */
  const failed = async (error: unknown, refusal: GuardrailRefusal | undefined): Promise<string> => {
    const outcome = failureOutcome(error, request, context.startedAt)
    await write(outcome, withRefusalEvents(request, refusal))
    await keepContent(() => failedContent(request, outcome.id, error, createdAt))
    return outcome.id
  }

  return {
    async run(running: Promise<RunOutcome>): Promise<RunOutcome> {
      let outcome: RunOutcome
      try {
        outcome = await running
      } catch (error) {
        const refusal = guardrailRefusalOf(error)
        const hasReachedUpstream = request.attemptReports.some((report) => report.status !== null)
        if ((!hasReachedUpstream && !refusal) || error instanceof ClientClosedError) {
          // No record: what was charged goes out as it is.
          void gate.open()
          throw error
        }
        const id = await failed(error, refusal).catch((writeError: unknown) => {
          service.logger.error('usage ledger: record of a failed request lost', { requestId: context.requestId, error: writeError })
          return undefined
        })
        throw refusal && id !== undefined ? withGenerationId(error, id) : error
      }
      if (outcome.isStream) return { isStream: true, session: observeSession(outcome.session, observer()) }
      const { result } = outcome.answer
      const servedLatency = request.attemptReports.find((report) => report.status === 200)?.latencyMs ?? null
      await write(finishedOutcome(result, { latencyMs: elapsedSince(context.startedAt), timeToFirstTokenMs: null, generationTimeMs: servedLatency }))
      await keepContent(() => answeredContent(request, result, createdAt))
      return outcome
    },
  }
}

/** What a refused request's record reads of its body (a Responses body, an embeddings body). */
export type RefusedBody = RecordedRequest['body'] & { model?: string | null }

/**
 * Records a request a guardrail refused before it was prepared (a content filter's block, routing rules that left
 * no endpoint): one failed generation, no attempts, nothing spent. Resolves with the error to answer: with the
 * record's id when it was written, as it was when it was not (or when no guardrail refused).
 */
export const recordRefusal = async (
  ledger: Ledger | null,
  service: InferenceService,
  context: GenerationContext,
  body: RefusedBody,
  error: unknown,
): Promise<unknown> => {
  const refusal = guardrailRefusalOf(error)
  // With the ledger off there is no record to name.
  if (!refusal || ledger === null) return error
  const endUserId = await endUserIdFor(service.endUserSecret, context.caller.account.id, body.safety_identifier ?? body.user)
  const request: RecordedRequest = {
    body,
    requestedModel: refusal.requestedModel ?? body.model ?? '',
    attemptReports: [],
    attempts: [],
    endUserId,
  }
  setGuardrailEvents(request, refusal.events)
  const outcome = failureOutcome(error, request, context.startedAt)
  try {
    await ledger.write(toGenerationRecord(service, context, request, outcome, { session: await sessionOf(service, context) }))
  } catch (writeError) {
    // The refusal is the answer either way; only its record is missing, so the error names no id.
    service.logger.error('usage ledger: record of a guardrail refusal lost', { requestId: context.requestId, error: writeError })
    return error
  }
  return withGenerationId(error, outcome.id)
}

/** The request `prepare` resolves with; a guardrail's refusal of it is recorded (`recordRefusal`) before it is rejected. */
export const prepareRecorded = async <T>(
  ledger: Ledger | null,
  service: InferenceService,
  context: GenerationContext,
  body: RefusedBody,
  prepare: () => Promise<T>,
): Promise<T> => {
  try {
    return await prepare()
  } catch (error) {
    throw await recordRefusal(ledger, service, context, body, error)
  }
}
