/**
 * `POST /responses` (spec): one complete JSON result, or a server-sent event stream. Routing,
 * fallbacks, BYOK and billing happen in src/engine; src/writers encodes the answer; this route wires
 * the request to them.
 */

import { defineRoute } from '../pipeline/route'
import { ResponsesRequestSchema } from '../engine/request.schemas'
import { observeSession } from '../engine/observe'
import { prepareRequest, runRequest } from '../engine/run'
import { replyTo } from '../writers/responses-reply'

/** Bodies carry whole conversations and inline images; far above the JSON routes' 1 MiB. */
export const RESPONSES_BODY_LIMIT = 20 * 1024 * 1024

const METADATA_HEADERS = ['x-service-metadata', 'x-service-experimental-metadata']

export const createResponse = defineRoute({
  method: 'POST',
  path: '/responses',
  auth: 'inference',
  bodyLimit: RESPONSES_BODY_LIMIT,
  body: ResponsesRequestSchema,
  isAccessLogged: true,
  async handle({ request, requestId, body, caller, repositories, runtime, access, clientSignal }) {
    const service = runtime.inference
    const context = {
      caller,
      repositories,
      requestId,
      signal: clientSignal,
      isMetadataRequested: METADATA_HEADERS.some((name) => request.headers.get(name)?.toLowerCase() === 'enabled'),
      // spec session_id: the body wins over the header.
      sessionId: body.session_id ?? request.headers.get('x-session-id') ?? undefined,
    }
    const running = prepareRequest(service, context, body).then((prepared) => {
      access?.requested(prepared.requestedModel)
      return runRequest(service, prepared)
    })
    return replyTo(
      running.then((outcome) => {
        if (!outcome.isStream) access?.whole(outcome.answer)
        return outcome
      }),
      (session) => (access ? observeSession(session, access.observer()) : session),
    )
  },
})
