import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FetchHandler } from '../core/types'
import { BodyAlreadyConsumedError, handleNodeRequest, writeBodyAlreadyConsumed, type NodeBridgeOptions } from './node-bridge'

export { BodyAlreadyConsumedError, type NodeBridgeOptions } from './node-bridge'

/**
 * Turns a gateway into a `node:http` request listener.
 *
 * @example
 * ```ts
 * import http from 'node:http'
 * import { createGateway } from 'modelgate'
 * import { toNodeListener } from 'modelgate/adapters/node'
 *
 * http.createServer(toNodeListener(createGateway())).listen(8787)
 * ```
 */
export const toNodeListener = (gateway: FetchHandler, options: NodeBridgeOptions = {}) => {
  let hasReportedConsumedBody = false
  return (req: IncomingMessage, res: ServerResponse): void => {
    handleNodeRequest(gateway, req, res, options).catch((error: unknown) => {
      // Only a body read by something else ends up here; it is a setup mistake, so say it once, not per request.
      if (error instanceof BodyAlreadyConsumedError) {
        if (!hasReportedConsumedBody) {
          hasReportedConsumedBody = true
          console.error(error.message)
        }
        // The client learns why too, in the gateway's error body.
        return writeBodyAlreadyConsumed(gateway, req, res, options, error)
      }
      if (!res.headersSent) res.statusCode = 500
      if (!res.writableEnded) res.end()
    })
  }
}

export { createEventLoopMonitor, type EventLoopMonitorOptions, type NodeEventLoopMonitor } from './event-loop'
