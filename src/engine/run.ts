/**
 * One `/responses` request from validated body to `Response`: shared by the HTTP route and by
 * anything inside the gateway that runs a model turn on a caller's behalf (interns).
 */

import type { Caller } from '../services/caller'
import { AuthenticationError } from '../core/errors'
import type { ClientSignal } from '../core/client-signal'
import type { Logger } from '../core/logger'
import { EventStreamResponse } from '../core/event-stream-response'
import { json } from '../core/json-response'
import type { SecretBox } from '../core/secrets'
import type { Repositories } from '../repositories'
import { ClientClosedError } from './attempts'
import { endUserIdFor } from './end-user'
import { executeNonStreaming, executeStreaming, type ExecutionOptions } from './execute'
import type { ResponsesRequestBody } from './request.schemas'
import { parametersUsed, planAttempts, requestedModels } from './routing'
import type { GatewayRuntime } from './runtime'

export const OVERHEAD_HEADER = 'x-modelgate-overhead-ms'

/** 401 for a regular key whose workspace no longer exists (docs/decisions.md, workspace deletion). */
export const WORKSPACE_GONE = "The API key's workspace was deleted; create a new key"

export interface ResponseDependencies {
  caller: Caller
  repositories: Repositories
  secrets: SecretBox
  logger: Logger
  runtime: GatewayRuntime
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

export const runResponse = async (dependencies: ResponseDependencies, body: ResponsesRequestBody): Promise<Response> => {
  const { caller, repositories, runtime, logger, requestId } = dependencies
  // Both keyed by the caller's workspace, so a networked store answers them in one round trip, not two.
  const [workspace, byok] = await Promise.all([
    repositories.workspaces.get(caller.key.workspaceId),
    repositories.byok.list({ workspaceId: caller.key.workspaceId }, 0),
  ])
  // A key created while its workspace was being deleted outlives it; it must not run on the defaults.
  if (!workspace) throw new AuthenticationError(WORKSPACE_GONE)
  const models = requestedModels(body.model, body.models, workspace.defaultTextModel)
  const attempts = planAttempts(runtime.models, runtime.providers, {
    models,
    preferences: withRouteAlias(body),
    parametersUsed: parametersUsed(body),
    credentials: byok.credentials,
    callerKeyHash: caller.key.hash,
    callerUserId: caller.key.creatorUserId,
  })
  const options: ExecutionOptions = {
    body,
    attempts,
    requestedModel: models[0]!,
    endUserId: await endUserIdFor(runtime.endUserSecret, caller.account.id, body.safety_identifier ?? body.user),
    byokFeeRate: runtime.byokFeeRate,
    isMetadataRequested: dependencies.isMetadataRequested,
    region: runtime.region,
    commitAfterMs: runtime.commitAfterMs,
    keepAliveMs: runtime.keepAliveMs,
    transport: runtime.transport,
    timeouts: runtime.timeouts,
    retry: runtime.retry,
    outliers: runtime.outliers,
    streams: runtime.streams,
    now: runtime.now,
    limits: runtime.limits,
    guard: runtime.upstreamGuard,
    secrets: dependencies.secrets,
    logger,
    requestId,
    signal: dependencies.signal,
  }
  logger.debug('response requested', { requestId, models, stream: body.stream, attempts: attempts.length, sessionId: dependencies.sessionId })
  try {
    if (body.stream) {
      const { produce, overheadMs } = await executeStreaming(options)
      return new EventStreamResponse(produce, {
        headers: {
          'content-type': 'text/event-stream',
          'cache-control': 'no-cache',
          'x-accel-buffering': 'no',
          [OVERHEAD_HEADER]: overheadMs.toFixed(3),
        },
      })
    }
    const { response, overheadMs } = await executeNonStreaming(options)
    return json(response, 200, { [OVERHEAD_HEADER]: overheadMs.toFixed(3) })
  } catch (error) {
    // Nobody is listening any more; the status is for logs only (nginx's "client closed request").
    if (error instanceof ClientClosedError) return new Response(null, { status: 499 })
    throw error
  }
}
