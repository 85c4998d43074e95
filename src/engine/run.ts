/**
 * One `/responses` request from validated body to an answer: a whole result or a session of events.
 * Shared by the HTTP route and by anything inside the gateway that runs a model turn on a caller's
 * behalf (interns). Writers (src/writers/) turn the answer into a wire format.
 */

import type { ClientSignal } from '../core/client-signal'
import { AuthenticationError, GatewayError, isGatewayError } from '../core/errors'
import type { Repositories } from '../repositories'
import type { Caller } from '../services/caller'
import { endUserIdFor } from './end-user'
import type { ResponsesRequestBody } from './request.schemas'
import { observeSession } from './observe'
import { serviceMetadata } from './service-metadata'
import type { InferenceRequest, RouteExtensions } from './request'
import { mustHonour, parametersUsed, planAttempts, requestedModels } from './routing'
import type { InferenceService } from './service'
import type { ResponseSession, WholeAnswer } from './session-events'
import { reserveSpend } from './spend'
import { openSession } from './stream-session'
import { answerWhole } from './whole'
import { planServerTools } from './server-tools/plan'
import { openServerToolSession } from './server-tools/session-loop'
import { answerWithServerTools } from './server-tools/whole-loop'
import { afterWhole, observedByPlugins, runBeforeAttempts } from './plugins/apply'
import { planPlugins } from './plugins/registry'

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

export type RunOutcome = { isStream: false; answer: WholeAnswer } | { isStream: true; session: ResponseSession }

// spec: `route` is the deprecated alias of the sort partition (fallback → model, sort → none).
const withRouteAlias = (body: ResponsesRequestBody): ResponsesRequestBody['provider'] => {
  if (!body.route) return body.provider
  const provider = body.provider ?? {}
  if (provider.sort) return provider
  return { ...provider, sort: { by: 'price', partition: body.route === 'sort' ? 'none' : 'model' } }
}

/**
 * Plans the attempts of a request (routing, BYOK keys) from the caller's workspace. `extensions` are the settings
 * a route's own wire format adds to the body (Chat Completions `stop`, …).
 */
export const prepareRequest = async (
  service: InferenceService,
  context: RunContext,
  body: ResponsesRequestBody,
  extensions?: RouteExtensions,
): Promise<InferenceRequest> => {
  const { caller, repositories, requestId } = context
  const plugins = planPlugins(service, body)
  // Both keyed by the caller's workspace, so a networked store answers them in one round trip, not two.
  const [workspace, byok] = await Promise.all([
    repositories.workspaces.get(caller.key.workspaceId),
    repositories.byok.list({ workspaceId: caller.key.workspaceId }, 0),
  ])
  // A key created while its workspace was being deleted outlives it; it must not run on the defaults.
  if (!workspace) throw new AuthenticationError(WORKSPACE_GONE)
  const serverTools = planServerTools(service, body, workspace.disabledServerTools)
  // A request for images without a model runs on the workspace's image model (docs/decisions.md, image output).
  const defaultModel = body.modalities?.includes('image') ? workspace.defaultImageModel : workspace.defaultTextModel
  const models = requestedModels(body.model, body.models, defaultModel)
  const attempts = planAttempts(service.models, service.providers, {
    models,
    preferences: withRouteAlias(body),
    parametersUsed: parametersUsed(body, extensions?.values),
    modalities: body.modalities,
    mustHonour: mustHonour(body, extensions?.values, extensions?.fieldNames),
    credentials: byok.credentials,
    callerKeyHash: caller.key.hash,
    callerUserId: caller.key.creatorUserId,
  })
  service.logger.debug('response requested', { requestId, models, stream: body.stream, attempts: attempts.length, sessionId: context.sessionId })
  return {
    body,
    attempts,
    requestedModel: models[0]!,
    endUserId: await endUserIdFor(service.endUserSecret, caller.account.id, body.safety_identifier ?? body.user),
    requestId,
    signal: context.signal,
    isMetadataRequested: context.isMetadataRequested,
    spend: { repository: repositories.spend, key: caller.key, workspace, account: caller.account },
    ...(extensions ? { extensions: extensions.values } : {}),
    attemptReports: [],
    ...(serverTools ? { serverTools } : {}),
    plugins,
    pipeline: [],
  }
}

/** A whole answer: one turn, or the server-tool loop's turns. */
const answerTurns = async (service: InferenceService, request: InferenceRequest): Promise<WholeAnswer> => {
  const answer = await (request.serverTools ? answerWithServerTools(service, request, request.serverTools) : answerWhole(service, request))
  return request.plugins.length === 0 ? answer : { ...answer, result: afterWhole(answer.result, request) }
}

/** A streamed answer: one turn's session, or the server-tool loop's over its turns. */
const openTurns = async (service: InferenceService, request: InferenceRequest): Promise<ResponseSession> =>
  observedByPlugins(await (request.serverTools ? openServerToolSession(service, request, request.serverTools) : openSession(service, request)), request)

/**
 * Opens a prepared streamed request: its spend reserved first (402 when a limit would be passed, before
 * any upstream call), settled when the session ends or when it fails to open.
 */
export const openRunSession = async (service: InferenceService, request: InferenceRequest): Promise<ResponseSession> => {
  const reservation = await reserveSpend(service, request)
  let session: ResponseSession
  try {
    session = await openTurns(service, request)
  } catch (error) {
    reservation.settle(null)
    throw error
  }
  return observeSession(session, reservation.observer())
}

const answerRunWhole = async (service: InferenceService, request: InferenceRequest): Promise<WholeAnswer> => {
  const reservation = await reserveSpend(service, request)
  try {
    const answer = await answerTurns(service, request)
    reservation.settle(answer.result.usage)
    return answer
  } catch (error) {
    reservation.settle(null)
    throw error
  }
}

/**
 * The plugins' work before the attempts. A plugin's refusal (moderation's 403) carries the metadata pipeline when
 * the caller asked for it, so the stage that refused is visible.
 */
const runPluginsBeforeAttempts = async (service: InferenceService, request: InferenceRequest): Promise<void> => {
  const startedAt = performance.now()
  try {
    await runBeforeAttempts(request)
  } catch (error) {
    if (!isGatewayError(error) || !request.isMetadataRequested || error.extraBody) throw error
    throw new GatewayError(error.status, error.message, {
      ...(error.metadata ? { metadata: error.metadata } : {}),
      ...(error.headers ? { headers: error.headers } : {}),
      extraBody: { service_metadata: serviceMetadata(service, request, null, 0, startedAt) },
      cause: error,
    })
  }
}

/**
 * Runs a prepared request, its plugins' work before the attempts first; rejects with the client's error before any
 * answer, or `ClientClosedError`.
 */
export const runRequest = async (service: InferenceService, request: InferenceRequest): Promise<RunOutcome> => {
  await runPluginsBeforeAttempts(service, request)
  return request.body.stream
    ? { isStream: true, session: await openRunSession(service, request) }
    : { isStream: false, answer: await answerRunWhole(service, request) }
}
