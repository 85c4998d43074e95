/**
 * What every route that runs a model does the same way, whatever its wire format: the run context from
 * the request, planning and running through the engine, the access log, and the reply in the route's format.
 */

import { setReplyHeader, type Reply } from '../core/reply'
import { observeSession } from '../engine/observe'
import type { InferenceRequest, RouteExtensions } from '../engine/request'
import type { ResponsesRequestBody } from '../engine/request.schemas'
import type { ResponseResult } from '../engine/session-events'
import { prepareRequest } from '../engine/run'
import { createGenerationRecorder, prepareRecorded } from '../ledger/generation-record'
import { withPreset } from './presets.config'
import type { RouteContext } from '../pipeline/route'
import type { GenerationApi } from '../repositories/generations'
import { replyInFormat, type WireFormat } from '../formats/shared/reply'
import { cacheTtlHeader } from './response-cache.schemas'
import { cacheDirectiveFor } from '../features/response-cache/stage'
import { RESPONSE_CACHE } from '../features/response-cache/request-state'
import { sessionIdOf } from './session-id'

/**
 * Model requests (`/responses`, `/chat/completions`, `/messages`, `/embeddings`, presets' routes) take the gateway's
 * `inferenceBodyLimit` (default 20 MiB): bodies carry whole conversations, inline images and files.
 */
export const INFERENCE_BODY_LIMIT = 'inference'

const METADATA_HEADERS = ['x-service-metadata', 'x-service-experimental-metadata']

/** What the response cache did for the request (docs/routes.md, Response cache), on its reply; nothing when it was not asked. */
export const withCacheHeaders = (reply: Reply, request: InferenceRequest | undefined): Reply => {
  const outcome = request ? RESPONSE_CACHE.get(request)?.outcome : undefined
  if (!outcome) return reply
  const marked = setReplyHeader(reply, 'x-modelgate-cache', outcome.status)
  return outcome.ageSeconds === undefined ? marked : setReplyHeader(marked, 'x-modelgate-cache-age', String(outcome.ageSeconds))
}

type InferenceRouteContext = Pick<RouteContext<unknown, unknown, unknown>, 'request' | 'requestId' | 'caller' | 'repositories' | 'runtime' | 'access' | 'clientSignal' | 'now'>

/**
 * Keeps an answer before its caller sees it end (a stored response): awaited before a whole answer is sent, and before
 * a stream's last event.
 */
export type AnswerKeeper = (request: ResponsesRequestBody, result: ResponseResult) => Promise<void>

/**
 * Runs `body` (with the settings `extensions` adds to it) for the route's caller and answers in `format`;
 * `api` names the route in its usage record; `keep`, when given, keeps the answer before it is complete for the caller.
 */
export const answerInference = async (
  route: InferenceRouteContext,
  body: ResponsesRequestBody,
  format: WireFormat,
  api: GenerationApi,
  extensions?: RouteExtensions,
  keep?: AnswerKeeper,
): Promise<Reply> => {
  const { request, access, runtime } = route
  const service = runtime.inference
  const context = {
    caller: route.caller,
    repositories: route.repositories,
    requestId: route.requestId,
    signal: route.clientSignal,
    isMetadataRequested: METADATA_HEADERS.some((name) => request.headers.get(name)?.toLowerCase() === 'enabled'),
    // spec session_id: the body wins over the header.
    sessionId: sessionIdOf(body.session_id, request.headers),
  }
  const arrival = { arrivedAt: route.now(), startedAt: performance.now() }
  const requestedTtlSeconds = cacheTtlHeader(request.headers)
  let prepared: InferenceRequest | undefined
  // A preset the request names fills in what the request leaves out (docs/decisions.md, Presets).
  const running = withPreset(route.repositories, route.caller, body).then(async ({ body: resolved, presetId }) => {
    const generation = { api, caller: route.caller, requestId: route.requestId, sessionId: context.sessionId, ...arrival, ...(presetId ? { presetId } : {}) }
    const planned = await prepareRecorded(runtime.ledger, service, generation, resolved, () => prepareRequest(service, context, resolved, extensions))
    const cache = cacheDirectiveFor(planned, requestedTtlSeconds)
    if (cache) RESPONSE_CACHE.set(planned, cache)
    prepared = planned
    // A workspace that broadcasts to observability hands observers (traces) the conversation too (docs/operations.md).
    access?.requested(planned.requestedModel, planned.spend.workspace.isObservabilityBroadcastEnabled ? { instructions: resolved.instructions, input: resolved.input } : undefined)
    const recorder = createGenerationRecorder(runtime.ledger, service, generation, planned)
    return recorder.run(runtime.runRequest(planned))
  })
  const replying = replyInFormat(
    format,
    running.then(async (outcome) => {
      if (!outcome.isStream) {
        if (keep) await keep(outcome.answer.request, outcome.answer.result)
        access?.whole(outcome.answer)
      }
      return outcome
    }),
    (session) => {
      const kept = keep ? observeSession(session, { beforeFinished: (result) => keep(session.request, result) }) : session
      return access ? observeSession(kept, access.observer()) : kept
    },
  )
  return withCacheHeaders(await replying, prepared)
}
