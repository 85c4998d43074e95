/**
 * The metrics endpoint (docs/operations.md, "Metrics"): the exporter's exposition at `metrics.path` (default
 * `/metrics`), outside the API's base path, for management keys unless the operator made it public; the same answer
 * through `gateway.metrics(request)` for a host that serves it elsewhere.
 */

import { errorReply, MethodNotAllowedError, NotFoundError } from '../core/errors'
import { toResponse } from '../core/reply'
import type { GatewayOptions } from './options'

/** Where the metrics are served unless `metrics.path` says otherwise. */
export const DEFAULT_METRICS_PATH = '/metrics'

export interface MetricsEndpoint {
  /** Whether the gateway serves the metrics at `pathname`. */
  isAt(pathname: string): boolean
  reply(request: Request): Promise<Response>
}

export const createMetricsEndpoint = (
  option: GatewayOptions['metrics'],
  basePath: string,
  /** Rejects a request that is not a management key's. */
  authorize: (request: Request) => Promise<void>,
): MetricsEndpoint => {
  const path = option?.path === false ? undefined : (option?.path ?? DEFAULT_METRICS_PATH)
  if (option && path !== undefined && basePath !== '' && (path === basePath || path.startsWith(`${basePath}/`))) {
    throw new TypeError(`modelgate: options.metrics.path: must be outside the API's base path ${basePath}`)
  }
  const served = option && path !== undefined ? path : undefined
  return {
    isAt: (pathname) => pathname === served,
    async reply(request) {
      try {
        if (!option) throw new NotFoundError('No metrics exporter is configured (createGateway options.metrics)')
        if (request.method !== 'GET' && request.method !== 'HEAD') throw new MethodNotAllowedError(`Method ${request.method} is not allowed here; use GET`, { headers: { allow: 'GET, HEAD' } })
        if (!option.isPublic) await authorize(request)
        const text = await option.exporter.render()
        return new Response(request.method === 'HEAD' ? null : text, {
          status: 200,
          headers: { 'content-type': option.exporter.contentType, 'cache-control': 'no-store' },
        })
      } catch (error) {
        return toResponse(errorReply(error, 'standard'))
      }
    },
  }
}
