/**
 * `POST /responses` (spec): one complete JSON result, or a server-sent event stream. Routing,
 * fallbacks, BYOK and billing happen in src/engine; this route wires the request to them.
 */

import { clientSignalOf } from '../core/client-signal'
import { defineRoute } from '../pipeline/route'
import { ResponsesRequestSchema } from '../engine/request.schemas'
import { runResponse } from '../engine/run'

/** Bodies carry whole conversations and inline images; far above the JSON routes' 1 MiB. */
export const RESPONSES_BODY_LIMIT = 20 * 1024 * 1024

const METADATA_HEADERS = ['x-service-metadata', 'x-service-experimental-metadata']

export const createResponse = defineRoute({
  method: 'POST',
  path: '/responses',
  auth: 'inference',
  bodyLimit: RESPONSES_BODY_LIMIT,
  body: ResponsesRequestSchema,
  handle: ({ request, requestId, body, caller, repositories, secrets, logger, runtime }) =>
    runResponse(
      {
        caller,
        repositories,
        secrets,
        logger,
        runtime,
        requestId,
        signal: clientSignalOf(request),
        isMetadataRequested: METADATA_HEADERS.some((name) => request.headers.get(name)?.toLowerCase() === 'enabled'),
        // spec session_id: the body wins over the header.
        sessionId: body.session_id ?? request.headers.get('x-session-id') ?? undefined,
      },
      body,
    ),
})
