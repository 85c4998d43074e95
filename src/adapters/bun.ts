import type { FetchHandler } from '../core/types'

/** Options passed through to `Bun.serve` (everything except `fetch`). */
export interface BunServeOptions {
  port?: number | string
  hostname?: string
  /** Seconds a connection may stay silent; Bun's default is 10. */
  idleTimeout?: number
  unix?: string
  reusePort?: boolean
  development?: boolean
  tls?: unknown
  error?: (error: Error) => Response | Promise<Response>
  [option: string]: unknown
}

/** The part of Bun's `Server` that callers of `serveBun` commonly need. */
export interface BunServer {
  readonly port: number
  readonly hostname: string
  readonly url: URL
  stop(closeActiveConnections?: boolean): Promise<void>
}

// A local declaration rather than @types/bun, so this module type-checks without Bun's typings.
declare const Bun: {
  serve(options: BunServeOptions & { fetch: (request: Request) => Promise<Response> }): BunServer
}

/**
 * Serves a gateway with `Bun.serve`. Bun aborts `request.signal` itself when the client disconnects.
 * `idleTimeout` defaults to Bun's maximum (255 s) instead of its 10 s, because a model may think
 * longer than that before the first token of a stream.
 *
 * @example
 * ```ts
 * import { createGateway } from 'modelgate'
 * import { serveBun } from 'modelgate/adapters/bun'
 *
 * const server = serveBun(createGateway(), { port: 8787 })
 * ```
 */
export const serveBun = (gateway: FetchHandler, options: BunServeOptions = {}): BunServer =>
  Bun.serve({ idleTimeout: 255, ...options, fetch: gateway.fetch })
