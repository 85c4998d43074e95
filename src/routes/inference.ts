/**
 * What every route that runs a model does the same way, whatever its wire format: the run context from
 * the request, planning and running through the engine, the access log, and the reply in the route's format.
 */

import type { Reply } from '../core/reply'
import { observeSession } from '../engine/observe'
import type { RouteExtensions } from '../engine/request'
import type { ResponsesRequestBody } from '../engine/request.schemas'
import { prepareRequest } from '../engine/run'
import { createGenerationRecorder, prepareRecorded } from '../ledger/generation-record'
import { withPreset } from './presets.config'
import type { RouteContext } from '../pipeline/route'
import type { GenerationApi } from '../repositories/generations'
import { replyInFormat, type WireFormat } from '../writers/reply'
import { sessionIdOf } from './session-id'

/**
 * Model requests (`/responses`, `/chat/completions`, `/messages`, `/embeddings`, presets' routes) take the gateway's
 * `inferenceBodyLimit` (default 20 MiB): bodies carry whole conversations, inline images and files.
 */
export const INFERENCE_BODY_LIMIT = 'inference'

const METADATA_HEADERS = ['x-service-metadata', 'x-service-experimental-metadata']

type InferenceRouteContext = Pick<RouteContext<unknown, unknown, unknown>, 'request' | 'requestId' | 'caller' | 'repositories' | 'runtime' | 'access' | 'clientSignal' | 'now'>

/**
 * Runs `body` (with the settings `extensions` adds to it) for the route's caller and answers in `format`;
 * `api` names the route in its usage record.
 */
export const answerInference = (
  route: InferenceRouteContext,
  body: ResponsesRequestBody,
  format: WireFormat,
  api: GenerationApi,
  extensions?: RouteExtensions,
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
  // A preset the request names fills in what the request leaves out (docs/decisions.md, Presets).
  const running = withPreset(route.repositories, route.caller, body).then(async ({ body: resolved, presetId }) => {
    const generation = { api, caller: route.caller, requestId: route.requestId, sessionId: context.sessionId, ...arrival, ...(presetId ? { presetId } : {}) }
    const prepared = await prepareRecorded(runtime.ledger, service, generation, resolved, () => prepareRequest(service, context, resolved, extensions))
    access?.requested(prepared.requestedModel)
    const recorder = createGenerationRecorder(runtime.ledger, service, generation, prepared)
    return recorder.run(runtime.runRequest(prepared))
  })
  return replyInFormat(
    format,
    running.then((outcome) => {
      if (!outcome.isStream) access?.whole(outcome.answer)
      return outcome
    }),
    (session) => (access ? observeSession(session, access.observer()) : session),
  )
}
