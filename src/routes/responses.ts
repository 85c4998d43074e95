/**
 * `POST /responses` (spec): one complete JSON result, or a server-sent event stream. Routing,
 * fallbacks, BYOK and billing happen in src/responses; this route wires the request to them.
 */

import { defineRoute, json } from '../core/route'
import { ClientClosedError } from '../responses/attempts'
import { endUserIdFor } from '../responses/end-user'
import { executeNonStreaming, executeStreaming, type ExecutionOptions } from '../responses/execute'
import { ResponsesRequestSchema, type ResponsesRequestBody } from '../responses/request.schemas'
import { parametersUsed, planAttempts, requestedModels } from '../responses/routing'

/** Bodies carry whole conversations and inline images; far above the JSON routes' 1 MiB. */
export const RESPONSES_BODY_LIMIT = 20 * 1024 * 1024
export const OVERHEAD_HEADER = 'x-modelgate-overhead-ms'

const METADATA_HEADERS = ['x-service-metadata', 'x-service-experimental-metadata']

// spec: `route` is the deprecated alias of the sort partition (fallback → model, sort → none).
const withRouteAlias = (body: ResponsesRequestBody): ResponsesRequestBody['provider'] => {
  if (!body.route) return body.provider
  const provider = body.provider ?? {}
  if (provider.sort) return provider
  return { ...provider, sort: { by: 'price', partition: body.route === 'sort' ? 'none' : 'model' } }
}

export const createResponse = defineRoute({
  method: 'POST',
  path: '/responses',
  auth: 'inference',
  bodyLimit: RESPONSES_BODY_LIMIT,
  body: ResponsesRequestSchema,
  async handle({ request, requestId, body, caller, repositories, secrets, logger, runtime, signal }) {
    const workspace = await repositories.workspaces.get(caller.key.workspaceId)
    const models = requestedModels(body.model, body.models, workspace?.defaultTextModel ?? 'openai/gpt-4.1-mini')
    const credentials = workspace ? (await repositories.byok.list({ workspaceId: workspace.id }, 0)).credentials : []
    const attempts = planAttempts(runtime.models, runtime.providers, {
      models,
      preferences: withRouteAlias(body),
      parametersUsed: parametersUsed(body),
      credentials,
      callerKeyHash: caller.key.hash,
      userId: body.user,
    })
    // spec session_id: the body wins over the header.
    const sessionId = body.session_id ?? request.headers.get('x-session-id') ?? undefined
    const options: ExecutionOptions = {
      body,
      attempts,
      requestedModel: models[0]!,
      endUserId: await endUserIdFor(runtime.endUserSecret, caller.account.id, body.safety_identifier ?? body.user),
      byokFeeRate: runtime.byokFeeRate,
      isMetadataRequested: METADATA_HEADERS.some((name) => request.headers.get(name)?.toLowerCase() === 'enabled'),
      region: runtime.region,
      commitAfterMs: runtime.commitAfterMs,
      keepAliveMs: runtime.keepAliveMs,
      transport: runtime.transport,
      timeouts: runtime.timeouts,
      secrets,
      logger,
      requestId,
      signal,
    }
    logger.debug('response requested', { requestId, models, stream: body.stream, attempts: attempts.length, sessionId })
    try {
      if (body.stream) {
        const { stream, overheadMs } = await executeStreaming(options)
        return new Response(stream, {
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
  },
})
