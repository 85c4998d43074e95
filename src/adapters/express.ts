import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FetchHandler } from '../core/types'
import { BodyAlreadyConsumedError, handleNodeRequest, writeBodyAlreadyConsumed, type NodeBridgeOptions } from './node-bridge'

export { BodyAlreadyConsumedError, type NodeBridgeOptions } from './node-bridge'

/**
 * Turns a gateway into Express middleware. Mount it before any body parser; its paths are relative to the
 * mount point, because Express rewrites `req.url` for mounted middleware.
 *
 * @example
 * ```ts
 * import express from 'express'
 * import { createGateway } from 'modelgate'
 * import { toExpressHandler } from 'modelgate/adapters/express'
 *
 * const app = express()
 * app.use('/ai', toExpressHandler(createGateway())) // serves /ai/api/v1/...
 * app.use(express.json())
 * ```
 */
export const toExpressHandler = (gateway: FetchHandler, options: NodeBridgeOptions = {}) => {
  let hasReportedConsumedBody = false
  return (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void => {
    handleNodeRequest(gateway, req, res, options).catch((error: unknown) => {
      if (!(error instanceof BodyAlreadyConsumedError)) return next(error)
      // A body that `express.json()` already read is a set-up mistake: the client gets the gateway's JSON error saying
      // how to fix it (not Express's HTML page), and the log hears it once, not per request.
      if (!hasReportedConsumedBody) {
        hasReportedConsumedBody = true
        console.error(error.message)
      }
      return writeBodyAlreadyConsumed(gateway, req, res, options, error)
    })
  }
}
