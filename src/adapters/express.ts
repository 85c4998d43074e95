import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FetchHandler } from '../core/types'
import { handleNodeRequest, type NodeBridgeOptions } from './node-bridge'

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
export const toExpressHandler =
  (gateway: FetchHandler, options: NodeBridgeOptions = {}) =>
  (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void => {
    // A body that `express.json()` already read reaches Express's error handling as a BodyAlreadyConsumedError.
    handleNodeRequest(gateway, req, res, options).catch(next)
  }
