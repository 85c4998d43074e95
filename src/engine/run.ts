/**
 * One `/responses` request from validated body to an answer: a whole result or a session of events.
 * Shared by the HTTP route and by anything inside the gateway that runs a model turn on a caller's
 * behalf (interns). Writers (src/formats/) turn the answer into a wire format.
 */

import type { ClientSignal } from '../core/client-signal'
import type { StageEnded } from '../core/telemetry'
import { AuthenticationError } from '../core/errors'
import type { Repositories } from '../repositories'
import type { Caller } from '../services/caller'
import { loadCallerScope } from './caller-scope'
import { endUserIdFor } from './end-user'
import type { ResponsesRequestBody } from './request.schemas'
import { observeSession } from './observe'
import type { Arrival, PlannedDraft, Preparation } from './plan-stage'
import type { InferenceRequest, RouteExtensions } from './request'
import { createRequestDeadline } from './request-deadline'
import { applyRequestVariants } from './model-variants'
import { outlierKeys } from './attempt-health'
import { stickyKey } from './sticky-sessions'
import { conversationKey } from './conversation-key'
import { isSetAside, routingBalancing } from './set-aside'
import { mustHonour, parametersUsed, planAttempts, requestedModels } from './routing'
import type { InferenceService } from './service'
import type { ResponseSession, WholeAnswer } from './session-events'
import type { RunOutcome } from './run-stage'
import type { ReservedRun } from './reserved-run'
import { reserveSpend } from './spend'
import { openSession } from './stream-session'
import { answerWhole } from './whole'

/** 401 for a regular key whose workspace no longer exists (docs/decisions.md, workspace deletion). */
export const WORKSPACE_GONE = "The API key's workspace was deleted; create a new key"

/** What a request brings beyond its body. */
export interface RunContext {
  caller: Caller
  repositories: Repositories
  requestId: string
  signal: ClientSignal
  /** Whether the caller opted in to `service_metadata`. */
  isMetadataRequested: boolean
  sessionId?: string
}


// spec: `route` is the deprecated alias of the sort partition (fallback → model, sort → none).
const withRouteAlias = (body: ResponsesRequestBody): ResponsesRequestBody['provider'] => {
  if (!body.route) return body.provider
  const provider = body.provider ?? {}
  if (provider.sort) return provider
  return { ...provider, sort: { by: 'price', partition: body.route === 'sort' ? 'none' : 'model' } }
}

/**
 * An input scan that did work (its stage returned a promise), reported as `stageEnded` as the run stages are, so traces
 * and metrics see the guardrails' scans; a stage with nothing to scan reports nothing.
 */
const timedScan = (report: (event: StageEnded) => void, requestId: string, stage: string, scan: () => Promise<void> | void): Promise<void> | void => {
  const startedAt = performance.now()
  const ended = (isError: boolean) => report({ requestId, stage, isError, durationMs: Math.round(performance.now() - startedAt) })
  let scanning: Promise<void> | void
  try {
    scanning = scan()
  } catch (error) {
    ended(true)
    throw error
  }
  return scanning?.then(
    () => ended(false),
    (error: unknown) => {
      ended(true)
      throw error
    },
  )
}

/**
 * A session's requests go to the endpoint that served it before while that endpoint is healthy (not ejected), unless
 * the caller ordered the endpoints itself (`provider.order`, `provider.sort`).
 */
const holdSession = (service: InferenceService, request: InferenceRequest, key: string) => {
  const provider = request.body.provider
  if (provider?.order || provider?.sort) return
  const held = service.sessions.order(key, request.attempts, (attempt) => !service.outliers.isEjected(outlierKeys(attempt)))
  request.attempts = held.attempts
  request.sticky = { key, isHeld: held.isHeld, by: 'session' }
}

/**
 * A conversation without a session goes to the endpoint that served it before while that endpoint is not set aside
 * (failed in the last 30 s, or ejected), so its prompt cache keeps hitting. Only where the load balancing chose among
 * endpoints (no sort or order of the caller's, more than one endpoint): elsewhere the order is the same every time.
 */
const holdConversation = async (service: InferenceService, request: InferenceRequest, caller: Caller, models: readonly string[], body: ResponsesRequestBody) => {
  if (!request.attempts.some((attempt) => attempt.share !== undefined)) return
  const key = await conversationKey({ workspaceId: caller.key.workspaceId, keyHash: caller.key.hash, endUserId: request.endUserId }, models, body)
  const held = service.conversations.order(key, request.attempts, (attempt) => !isSetAside(service, attempt))
  request.attempts = held.attempts
  request.sticky = { key, isHeld: held.isHeld, by: 'conversation' }
}

/**
 * Plans the attempts of a request (routing, BYOK keys) from the caller's workspace, with the features' plan stages
 * at their points (plan-stage.ts). `extensions` are the settings a route's own wire format adds to the body
 * (Chat Completions `stop`, …).
 */
export const prepareRequest = async (
  service: InferenceService,
  context: RunContext,
  requestBody: ResponsesRequestBody,
  extensions?: RouteExtensions,
): Promise<InferenceRequest> => {
  const { caller, repositories, requestId } = context
  const stages = service.stages.plan
  // `:online` and `:thinking` change the request itself (model-variants.ts); routing acts on the other variants.
  const body = applyRequestVariants(requestBody)
  const startedAt = performance.now()
  // Runs from here: the plugins' work, every attempt, turn and run of the request share it.
  const deadline = createRequestDeadline(service.requestTimeoutMs)
  // One object from arrival to preparation, its every field there from the start: what the stages keep on it is
  // under their slots.
  const prepared: { -readonly [K in keyof Preparation]: Preparation[K] } = {
    service,
    caller,
    requestId,
    sessionId: context.sessionId,
    isMetadataRequested: context.isMetadataRequested,
    received: body,
    extensions,
    startedAt,
    scope: undefined!,
    defaultModel: '',
    body,
    models: [],
    pipeline: [],
    plan: undefined!,
    routeNested: undefined!,
  }
  const arrival: Arrival = prepared
  for (const stage of stages.checkBody) stage.checkBody(arrival)
  const scope = await loadCallerScope(repositories, caller, stages.loadScope)
  const { workspace, credentials, policy, budgets } = scope
  // A key created while its workspace was being deleted outlives it; it must not run on the defaults.
  if (!workspace) throw new AuthenticationError(WORKSPACE_GONE)
  prepared.scope = scope as Preparation['scope']
  // A request for images without a model runs on the workspace's image model (docs/decisions.md, image output).
  prepared.defaultModel = body.modalities?.includes('image') ? workspace.defaultImageModel : workspace.defaultTextModel
  // Content filters run before anything else reads the input: a block costs nothing, a redaction is all that goes on.
  const reportStage = service.telemetry.stageEnded
  for (const stage of stages.checkInput) {
    const scanning = reportStage ? timedScan(reportStage, requestId, `${stage.name}:check-input`, () => stage.checkInput(prepared)) : stage.checkInput(prepared)
    if (scanning) await scanning
  }
  // Router models (`service/auto`, …) become the concrete models they chose; fusion adds a panel of analysis models
  // before the request's own model judges (docs/decisions.md, "Plugins: routers and fusion").
  let chosen: string[] | undefined
  for (const stage of stages.chooseModels) {
    if (chosen) break
    const startedAt = reportStage ? performance.now() : 0
    chosen = stage.chooseModels(prepared)
    if (chosen && reportStage) reportStage({ requestId, stage: `${stage.name}:choose-models`, isError: false, durationMs: Math.round(performance.now() - startedAt) })
  }
  const chosenBody = prepared.body
  const models = chosen ?? requestedModels(chosenBody.model, chosenBody.models, prepared.defaultModel)
  prepared.models = models
  const endUserId = await endUserIdFor(service.endUserSecret, caller.account.id, body.safety_identifier ?? body.user)
  // What every plan of the request routes with, nested calls' included: the caller's keys, policy and speed figures.
  const routingScope = {
    credentials,
    callerKeyHash: caller.key.hash,
    callerUserId: caller.key.creatorUserId,
    policy,
    performance: service.performance,
    defaultSort: workspace.defaultProviderSort,
    balancing: routingBalancing(service),
  }
  prepared.routeNested = (planBody, model, nestedBody) =>
    planAttempts(service.models, service.providers, {
      models: [model],
      preferences: withRouteAlias(planBody),
      parametersUsed: parametersUsed(nestedBody),
      modalities: nestedBody.modalities,
      ...routingScope,
    })
  prepared.plan = (planBody, planModels) => {
    const request: InferenceRequest = {
      body: planBody,
      attempts: [],
      requestedModel: planModels[0]!,
      endUserId,
      requestId,
      signal: context.signal,
      deadline,
      isMetadataRequested: context.isMetadataRequested,
      // Every run of the request (a fusion panel's too) counts against the guardrails' budgets.
      spend: { key: caller.key, workspace, account: caller.account, ...(budgets ? { guardrailBudgets: budgets } : {}) },
      ...(extensions ? { extensions: extensions.values } : {}),
      attemptReports: [],
      pipeline: [],
    }
    const draft: PlannedDraft = { request, models: planModels, honoured: planBody, requirements: [] }
    for (const stage of stages.shapePlanned) stage.shapePlanned(prepared, draft)
    request.attempts = planAttempts(service.models, service.providers, {
      models: planModels,
      preferences: withRouteAlias(planBody),
      parametersUsed: parametersUsed(planBody, extensions?.values),
      modalities: planBody.modalities,
      mustHonour: [...mustHonour(draft.honoured, extensions?.values, extensions?.fieldNames), ...draft.requirements],
      ...routingScope,
    })
    return request
  }
  const request = prepared.plan(chosenBody, models)
  // A router's or fusion's choice is its own; a session sticks to its endpoint only among the models it asked for.
  if (chosen === undefined) {
    if (context.sessionId !== undefined) holdSession(service, request, stickyKey(caller.key.workspaceId, context.sessionId, models))
    else await holdConversation(service, request, caller, models, chosenBody)
  }
  // Stages in the order they ran: the guardrails' input scans, then the router's choice (plugins' follow).
  request.pipeline.push(...prepared.pipeline)
  service.logger.debug('response requested', { requestId, models, stream: body.stream, attempts: request.attempts.length, sessionId: context.sessionId })
  for (const stage of stages.finish) stage.finish(prepared, request)
  return request
}

/** A whole answer: the engine's one turn, inside the features' turn stages (turn-stage.ts). */
const answerTurns = (service: InferenceService, request: InferenceRequest, index = 0): Promise<WholeAnswer> => {
  const stages = service.stages.turns.answer
  if (index === stages.length) return answerWhole(service, request)
  return stages[index]!.answer(service, request, (next) => answerTurns(service, next, index + 1))
}

/** A streamed answer: the engine's one turn's session, inside the features' turn stages (turn-stage.ts). */
export const openTurns = (service: InferenceService, request: InferenceRequest, index = 0): Promise<ResponseSession> => {
  const stages = service.stages.turns.open
  if (index === stages.length) return openSession(service, request)
  return stages[index]!.open(service, request, (next) => openTurns(service, next, index + 1))
}

/** Reserves a request's spend (402 when a limit would be passed, before any upstream call). */
export const reserveRun = async (service: InferenceService, request: InferenceRequest): Promise<ReservedRun> => {
  const reservation = await reserveSpend(service, request)
  return {
    async open(run = request) {
      let session: ResponseSession
      try {
        session = await openTurns(service, run)
      } catch (error) {
        reservation.settle(null)
        throw error
      }
      return observeSession(session, reservation.observer())
    },
    async answer(run = request) {
      try {
        const answer = await answerTurns(service, run)
        reservation.settle(answer.result.usage)
        return answer
      } catch (error) {
        reservation.settle(null)
        throw error
      }
    },
    release: () => reservation.settle(null),
  }
}

/**
 * Opens a prepared streamed request: its spend reserved first (402 when a limit would be passed, before
 * any upstream call), settled when the session ends or when it fails to open.
 */
export const openRunSession = async (service: InferenceService, request: InferenceRequest): Promise<ResponseSession> => (await reserveRun(service, request)).open()

/**
 * The engine's own run of a prepared request, inside the features' stages (run-stage.ts): its spend reserved first
 * (402 when a limit would be passed, before any upstream call), then the turns answered whole or opened as a stream,
 * settled when the answer or the session ends, or when it fails to open.
 */
export const runTurns = async (service: InferenceService, request: InferenceRequest): Promise<RunOutcome> =>
  request.body.stream
    ? { isStream: true, session: await openRunSession(service, request) }
    : { isStream: false, answer: await (await reserveRun(service, request)).answer() }
