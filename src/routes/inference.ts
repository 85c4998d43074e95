/**
 * What every route that runs a model does the same way, whatever its wire format: the run context from
 * the request, planning and running through the engine, the access log, and the reply in the route's format.
 */

import type { Reply } from '../core/reply'
import { observeSession } from '../engine/observe'
import type { RouteExtensions } from '../engine/request'
import type { ResponsesRequestBody } from '../engine/request.schemas'
import { prepareRequest, runRequest } from '../engine/run'
import type { RouteContext } from '../pipeline/route'
import { replyInFormat, type WireFormat } from '../writers/reply'

/** Bodies carry whole conversations and inline images; far above the JSON routes' 1 MiB. */
export const INFERENCE_BODY_LIMIT = 20 * 1024 * 1024

const METADATA_HEADERS = ['x-service-metadata', 'x-service-experimental-metadata']

type InferenceRouteContext = Pick<RouteContext<unknown, unknown, unknown>, 'request' | 'requestId' | 'caller' | 'repositories' | 'runtime' | 'access' | 'clientSignal'>

/** Runs `body` (with the settings `extensions` adds to it) for the route's caller and answers in `format`. */
export const answerInference = (route: InferenceRouteContext, body: ResponsesRequestBody, format: WireFormat, extensions?: RouteExtensions): Promise<Reply> => {
  const { request, access, runtime } = route
  const service = runtime.inference
  const context = {
    caller: route.caller,
    repositories: route.repositories,
    requestId: route.requestId,
    signal: route.clientSignal,
    isMetadataRequested: METADATA_HEADERS.some((name) => request.headers.get(name)?.toLowerCase() === 'enabled'),
    // spec session_id: the body wins over the header.
    sessionId: body.session_id ?? request.headers.get('x-session-id') ?? undefined,
  }
  const running = prepareRequest(service, context, body, extensions).then((prepared) => {
    access?.requested(prepared.requestedModel)
    return runRequest(service, prepared)
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
