/**
 * One `/responses` request from validated body to an answer: a whole result or a session of events.
 * Shared by the HTTP route and by anything inside the gateway that runs a model turn on a caller's
 * behalf (interns). Writers (src/writers/) turn the answer into a wire format.
 */

import type { ClientSignal } from '../core/client-signal'
import { AuthenticationError, InvalidRequestError, isGatewayError } from '../core/errors'
import type { Repositories } from '../repositories'
import type { Caller } from '../services/caller'
import { endUserIdFor } from './end-user'
import type { ResponsesRequestBody } from './request.schemas'
import { observeSession } from './observe'
import type { InferenceRequest, RouteExtensions } from './request'
import { createRequestDeadline } from './request-deadline'
import { applyRequestVariants } from './model-variants'
import { outlierKeys } from './attempt-health'
import { stickyKey } from './sticky-sessions'
import { mustHonour, parametersUsed, planAttempts, requestedModels } from './routing'
import type { InferenceService } from './service'
import type { ResponseSession, WholeAnswer } from './session-events'
import type { RunOutcome } from './run-stage'
import type { ReservedRun } from './reserved-run'
import { reserveSpend } from './spend'
import { openSession } from './stream-session'
import { routeWithPlugins } from '../features/plugins/routers/route'
import { FUSION_SLUG, planFusion } from '../features/plugins/fusion/plan'
import { FUSION_ITEM_TYPE } from '../features/plugins/fusion/item'
import { analystBody, takesStructuredOutput } from '../features/plugins/fusion/analysis'
import { routableModels } from '../features/plugins/routers/candidates'
import { answerWhole } from './whole'
import { providerToolsRunHere } from '../features/server-tools/executor'
import type { Nesting } from '../features/server-tools/nesting'
import { planServerTools } from '../features/server-tools/plan'
import { openServerToolSession } from '../features/server-tools/session-loop'
import { answerWithServerTools } from '../features/server-tools/whole-loop'
import { loadCallerScope } from './caller-scope'
import { guardrailBudgetsOf } from '../features/guardrails/applicable'
import { guardInput, guardrailBlockError } from '../features/guardrails/enforce'
import { withGuardrailRefusal } from './refusal'
import { endpointPolicyOf } from '../features/guardrails/routing-policy'
import { refusedServiceMetadata } from './service-metadata'
import { afterWhole, observedByPlugins } from '../features/plugins/apply'
import { planPlugins, withImplicitPlugins } from '../features/plugins/registry'

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
 * A session's requests go to the endpoint that served it before while that endpoint is healthy (not ejected), unless
 * the caller ordered the endpoints itself (`provider.order`, `provider.sort`).
 */
const holdSession = (service: InferenceService, request: InferenceRequest, key: string) => {
  const provider = request.body.provider
  if (provider?.order || provider?.sort) return
  const held = service.sessions.order(key, request.attempts, (attempt) => !service.outliers.isEjected(outlierKeys(attempt)))
  request.attempts = held.attempts
  request.sticky = { key, isHeld: held.isHeld }
}

/** A panel member's plan; its tools are the plugin's, so a bad one is named where the caller wrote it. */
const planPanelMember = (plan: () => InferenceRequest, pluginIndex: number | null): InferenceRequest => {
  try {
    return plan()
  } catch (error) {
    if (pluginIndex === null || !isGatewayError(error) || error.status !== 400 || !error.message.startsWith('body.tools.')) throw error
    throw new InvalidRequestError(error.message.replace('body.tools.', `body.plugins.${pluginIndex}.tools.`))
  }
}

/**
 * Plans the attempts of a request (routing, BYOK keys) from the caller's workspace. `extensions` are the settings
 * a route's own wire format adds to the body (Chat Completions `stop`, …).
 */
export const prepareRequest = async (
  service: InferenceService,
  context: RunContext,
  requestBody: ResponsesRequestBody,
  extensions?: RouteExtensions,
): Promise<InferenceRequest> => {
  const { caller, repositories, requestId } = context
  // `:online` and `:thinking` change the request itself (model-variants.ts); routing acts on the other variants.
  const body = applyRequestVariants(requestBody)
  const startedAt = performance.now()
  // Runs from here: the plugins' work, every attempt, turn and run of the request share it.
  const deadline = createRequestDeadline(service.requestTimeoutMs)
  const plugins = planPlugins(service, body)
  const { workspace, credentials, guardrails } = await loadCallerScope(repositories, caller)
  // A key created while its workspace was being deleted outlives it; it must not run on the defaults.
  if (!workspace) throw new AuthenticationError(WORKSPACE_GONE)
  // A request for images without a model runs on the workspace's image model (docs/decisions.md, image output).
  const defaultModel = body.modalities?.includes('image') ? workspace.defaultImageModel : workspace.defaultTextModel
  // Content filters run before anything else reads the input: a block costs nothing, a redaction is all that goes on.
  const guarded = await guardInput(guardrails, body)
  if (guarded?.block) {
    const requested = requestedModels(body.model, body.models, defaultModel)[0]!
    const blocked = guardrailBlockError(guarded.block, context.isMetadataRequested ? refusedServiceMetadata(service, requested, guarded.stages, startedAt) : undefined)
    // The usage ledger records the block with everything the scan found (the route writes it: nothing was prepared).
    throw withGuardrailRefusal(blocked, { events: guarded.events, requestedModel: requested })
  }
  const guardedBody = guarded ? guarded.content : body
  // Router models (`service/auto`, …) become the concrete models they chose; fusion adds a panel of analysis models
  // before the request's own model judges (docs/decisions.md, "Plugins: routers and fusion").
  const fusion = planFusion(service, guardedBody, credentials)
  const routed = routeWithPlugins(service, guardedBody, { workspaceId: caller.key.workspaceId, sessionId: context.sessionId, credentials: credentials })
  const models = fusion?.judge
    ? [...new Set([fusion.judge, ...(guardedBody.models ?? []).filter((slug) => slug !== FUSION_SLUG)])]
    : routed
      ? routed.models
      : requestedModels(guardedBody.model, guardedBody.models, defaultModel)
  const endUserId = await endUserIdFor(service.endUserSecret, caller.account.id, body.safety_identifier ?? body.user)
  const policy = endpointPolicyOf(guardrails)
  const guardrailBudgets = guardrailBudgetsOf(guardrails)
  const planned = (planBody: ResponsesRequestBody, planModels: string[]): InferenceRequest => {
    const gatewayRunTools = providerToolsRunHere(service, planBody.tools, planModels)
    // Nested model calls (advisor, subagent) route as the caller's request does: their keys, their preferences.
    const nesting: Nesting = {
      depth: 0,
      defaultModel: planModels[0]!,
      defaultImageModel: workspace.defaultImageModel,
      gatewayRunTools,
      disabled: workspace.disabledServerTools,
      route: (model, nestedBody) =>
        planAttempts(service.models, service.providers, {
          models: [model],
          preferences: withRouteAlias(planBody),
          parametersUsed: parametersUsed(nestedBody),
          modalities: nestedBody.modalities,
          credentials: credentials,
          callerKeyHash: caller.key.hash,
          callerUserId: caller.key.creatorUserId,
          policy,
          performance: service.performance,
          defaultSort: workspace.defaultProviderSort,
        }),
    }
    const serverTools = planServerTools(service, planBody, workspace.disabledServerTools, nesting)
    // Provider tools the gateway runs itself need no endpoint that takes them.
    const honoured = gatewayRunTools.size > 0 ? { ...planBody, tools: planBody.tools?.filter((tool) => !gatewayRunTools.has(tool.type)) } : planBody
    return {
      body: planBody,
      attempts: planAttempts(service.models, service.providers, {
        models: planModels,
        preferences: withRouteAlias(planBody),
        parametersUsed: parametersUsed(planBody, extensions?.values),
        modalities: planBody.modalities,
        mustHonour: [...mustHonour(honoured, extensions?.values, extensions?.fieldNames), ...(serverTools?.nativeWebSearch?.requirements ?? [])],
        credentials: credentials,
        callerKeyHash: caller.key.hash,
        callerUserId: caller.key.creatorUserId,
        policy,
        performance: service.performance,
        defaultSort: workspace.defaultProviderSort,
      }),
      requestedModel: planModels[0]!,
      endUserId,
      requestId,
      signal: context.signal,
      deadline,
      isMetadataRequested: context.isMetadataRequested,
      // Every run of the request (a fusion panel's too) counts against the guardrails' budgets.
      spend: { key: caller.key, workspace, account: caller.account, ...(guardrailBudgets.length > 0 ? { guardrailBudgets } : {}) },
      ...(extensions ? { extensions: extensions.values } : {}),
      attemptReports: [],
      ...(serverTools ? { serverTools } : {}),
      // The request's plugins are its own: a fusion panel's and a server tool's runs feed its answer.
      plugins: [],
      pipeline: [],
    }
  }
  const request = planned(guardedBody, models)
  if (context.sessionId !== undefined && !routed && !fusion) holdSession(service, request, stickyKey(caller.key.workspaceId, context.sessionId, models))
  request.plugins = withImplicitPlugins(service, guardedBody, plugins, request.attempts)
  if (guardrails.length > 0) request.guardrails = guardrails
  // Stages in the order they ran: the guardrails' input scans, then the router's choice (plugins' follow).
  request.pipeline.push(...(guarded?.stages ?? []), ...(routed ? [routed.stage] : []))
  if (guarded) request.guardrailEvents = [...guarded.events]
  if (request.serverTools?.byItemType.has(FUSION_ITEM_TYPE)) {
    // `service:fusion` consults other models from inside the loop: their runs are planned as this request's are, and
    // opened without a reservation of their own, since the tool reports their cost with the response's.
    const reachable = new Set(routableModels(service, credentials).map((candidate) => candidate.slug))
    request.subRuns = {
      body: guardedBody,
      model: request.attempts[0]!.model.slug,
      takesStructuredOutput: (model) => takesStructuredOutput(planned(analystBody(guardedBody, model, false), [model]).attempts),
      isReachable: (model) => reachable.has(model),
      open: async (subBody, model) => openTurns(service, { ...planned(subBody, [model]), isMetadataRequested: false }),
    }
  }
  service.logger.debug('response requested', { requestId, models, stream: body.stream, attempts: request.attempts.length, sessionId: context.sessionId })
  if (routed) request.requestedModel = routed.requested
  if (fusion) {
    if (fusion.judge) request.requestedModel = FUSION_SLUG
    const panel = fusion.analysisModels.map((model) => ({ ...planPanelMember(() => planned(fusion.panelBody(model), [model]), fusion.pluginIndex), isMetadataRequested: false }))
    // The analyst is the plugin's model, or the judge with its fallbacks; asked for structured output where every endpoint takes it.
    const analystModels = fusion.analyst ? [fusion.analyst] : models
    const analyst = planned(analystBody(guardedBody, analystModels[0]!, false), analystModels)
    if (takesStructuredOutput(analyst.attempts)) analyst.body = analystBody(guardedBody, analystModels[0]!, true)
    return { ...request, routing: { strategy: 'fusion' }, fusion: { panel, analyst: { ...analyst, isMetadataRequested: false } } }
  }
  return routed ? { ...request, routing: { strategy: routed.strategy } } : request
}

/** A whole answer: one turn, or the server-tool loop's turns. */
const answerTurns = async (service: InferenceService, request: InferenceRequest): Promise<WholeAnswer> => {
  const answer = await (request.serverTools ? answerWithServerTools(service, request, request.serverTools) : answerWhole(service, request))
  return request.plugins.length === 0 ? answer : { ...answer, result: afterWhole(answer.result, request) }
}

/** A streamed answer: one turn's session, or the server-tool loop's over its turns. */
const openTurns = async (service: InferenceService, request: InferenceRequest): Promise<ResponseSession> =>
  observedByPlugins(await (request.serverTools ? openServerToolSession(service, request, request.serverTools) : openSession(service, request)), request)

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
