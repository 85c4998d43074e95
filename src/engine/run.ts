/**
 * One `/responses` request from validated body to an answer: a whole result or a session of events.
 * Shared by the HTTP route and by anything inside the gateway that runs a model turn on a caller's
 * behalf (interns). Writers (src/writers/) turn the answer into a wire format.
 */

import type { ClientSignal } from '../core/client-signal'
import { AuthenticationError, InvalidRequestError } from '../core/errors'
import type { Repositories } from '../repositories'
import type { Caller } from '../services/caller'
import { endUserIdFor } from './end-user'
import type { ResponsesRequestBody } from './request.schemas'
import { observeSession } from './observe'
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
import { prefetchGuardrails, resolveGuardrails, type AppliedGuardrail } from './guardrails/applicable'
import { guardInput, guardOutput, guardrailBlockError, withPaidUsage } from './guardrails/enforce'
import { endpointPolicyOf } from './guardrails/routing-policy'
import { refusedServiceMetadata } from './service-metadata'
import type { GuardrailBudget } from './spend-targets'

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
 * The spec's plugin ids validate, but this gateway runs none of them yet: an enabled one is refused by name rather
 * than accepted without effect (a disabled one asks for nothing).
 */
const refuseUnrunPlugins = (body: ResponsesRequestBody): void => {
  const index = body.plugins?.findIndex((plugin) => plugin.enabled !== false) ?? -1
  if (index < 0) return
  throw new InvalidRequestError(`body.plugins.${index}: the "${body.plugins![index]!.id}" plugin is not run by this gateway yet; leave it out or set enabled: false`)
}

/** The budgets of the guardrails governing a request: those with both `limit_usd` and `reset_interval`. */
const guardrailBudgetsOf = (guardrails: readonly AppliedGuardrail[]): GuardrailBudget[] =>
  guardrails.flatMap(({ record, scope }) =>
    record.limitNano === null || record.resetInterval === null
      ? []
      : [
          {
            guardrailId: record.id,
            name: record.name,
            // A member's budget is the member's, whichever of their keys spends it; any other is each key's own.
            holder: scope === 'member' ? ('user' as const) : ('key' as const),
            limitNano: record.limitNano,
            window: record.resetInterval,
            includeByok: record.includeByokInBudgets,
          },
        ],
  )

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
  const startedAt = performance.now()
  refuseUnrunPlugins(body)
  // All keyed by the caller (its workspace, its key), so a networked store answers them in one round trip.
  const [workspace, byok, prefetched] = await Promise.all([
    repositories.workspaces.get(caller.key.workspaceId),
    repositories.byok.list({ workspaceId: caller.key.workspaceId }, 0),
    prefetchGuardrails(repositories.guardrails, {
      accountId: caller.account.id,
      keyHash: caller.key.hash,
      userId: caller.key.creatorUserId,
      workspaceId: caller.key.workspaceId,
    }),
  ])
  // A key created while its workspace was being deleted outlives it; it must not run on the defaults.
  if (!workspace) throw new AuthenticationError(WORKSPACE_GONE)
  const guardrails = await resolveGuardrails(repositories.guardrails, caller.account.id, workspace, prefetched)
  // A request for images without a model runs on the workspace's image model (docs/decisions.md, image output).
  const defaultModel = body.modalities?.includes('image') ? workspace.defaultImageModel : workspace.defaultTextModel
  const models = requestedModels(body.model, body.models, defaultModel)
  // Content filters run before anything else reads the input: a block costs nothing, a redaction is all that goes on.
  const guarded = guardInput(guardrails, body)
  if (guarded?.block) {
    throw guardrailBlockError(guarded.block, context.isMetadataRequested ? refusedServiceMetadata(service, models[0]!, guarded.stages, startedAt) : undefined)
  }
  const guardedBody = guarded ? guarded.content : body
  const serverTools = planServerTools(service, guardedBody, workspace.disabledServerTools)
  const attempts = planAttempts(service.models, service.providers, {
    models,
    preferences: withRouteAlias(guardedBody),
    parametersUsed: parametersUsed(guardedBody, extensions?.values),
    modalities: guardedBody.modalities,
    mustHonour: [...mustHonour(guardedBody, extensions?.values, extensions?.fieldNames), ...(serverTools?.nativeWebSearch?.requirements ?? [])],
    credentials: byok.credentials,
    callerKeyHash: caller.key.hash,
    callerUserId: caller.key.creatorUserId,
    policy: endpointPolicyOf(guardrails),
  })
  service.logger.debug('response requested', { requestId, models, stream: body.stream, attempts: attempts.length, sessionId: context.sessionId })
  const guardrailBudgets = guardrailBudgetsOf(guardrails)
  return {
    body: guardedBody,
    attempts,
    requestedModel: models[0]!,
    endUserId: await endUserIdFor(service.endUserSecret, caller.account.id, body.safety_identifier ?? body.user),
    requestId,
    signal: context.signal,
    isMetadataRequested: context.isMetadataRequested,
    spend: { repository: repositories.spend, key: caller.key, workspace, account: caller.account, ...(guardrailBudgets.length > 0 ? { guardrailBudgets } : {}) },
    ...(extensions ? { extensions: extensions.values } : {}),
    attemptReports: [],
    ...(serverTools ? { serverTools } : {}),
    ...(guardrails.length > 0 ? { guardrails } : {}),
    ...(guarded ? { pipeline: [...guarded.stages], guardrailEvents: [...guarded.events] } : {}),
  }
}

/** A whole answer: one turn, or the server-tool loop's turns. */
const answerTurns = (service: InferenceService, request: InferenceRequest): Promise<WholeAnswer> =>
  request.serverTools ? answerWithServerTools(service, request, request.serverTools) : answerWhole(service, request)

/** A streamed answer: one turn's session, or the server-tool loop's over its turns. */
const openTurns = (service: InferenceService, request: InferenceRequest): Promise<ResponseSession> =>
  request.serverTools ? openServerToolSession(service, request, request.serverTools) : openSession(service, request)

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

/**
 * A whole answer with the governing guardrails' content filters run over its output: redacted, flagged, or
 * refused with 403 (after it was paid for: the model did answer). Streamed output is not scanned (docs/decisions.md,
 * Guardrails): its text reaches the client as it is written.
 */
const guardAnswerOutput = (request: InferenceRequest, answer: WholeAnswer): WholeAnswer => {
  if (!request.guardrails) return answer
  const guarded = guardOutput(request.guardrails, answer.result.output)
  if (!guarded) return answer
  request.pipeline = [...(request.pipeline ?? []), ...guarded.stages]
  request.guardrailEvents = [...(request.guardrailEvents ?? []), ...guarded.events]
  const metadata = answer.result.serviceMetadata
  const serviceMetadata = metadata ? { ...metadata, pipeline: [...((metadata.pipeline as unknown[] | undefined) ?? []), ...guarded.stages] } : undefined
  if (guarded.block) throw withPaidUsage(guardrailBlockError(guarded.block, serviceMetadata), answer.result.usage)
  return { ...answer, result: { ...answer.result, output: guarded.content, ...(serviceMetadata ? { serviceMetadata } : {}) } }
}

const answerRunWhole = async (service: InferenceService, request: InferenceRequest): Promise<WholeAnswer> => {
  const reservation = await reserveSpend(service, request)
  let answer: WholeAnswer
  try {
    answer = await answerTurns(service, request)
    reservation.settle(answer.result.usage)
  } catch (error) {
    reservation.settle(null)
    throw error
  }
  return guardAnswerOutput(request, answer)
}

/** Runs a prepared request; rejects with the client's error before any answer, or `ClientClosedError`. */
export const runRequest = async (service: InferenceService, request: InferenceRequest): Promise<RunOutcome> =>
  request.body.stream
    ? { isStream: true, session: await openRunSession(service, request) }
    : { isStream: false, answer: await answerRunWhole(service, request) }
