import type { FetchHandler } from '../core/types'

/** The address `Deno.serve` reports once it is listening. */
export interface DenoNetAddress {
  transport: 'tcp' | 'udp'
  hostname: string
  port: number
}

/** Options passed through to `Deno.serve`. */
export interface DenoServeOptions {
  port?: number
  hostname?: string
  /** Stops the server when aborted. */
  signal?: AbortSignal
  reusePort?: boolean
  /** Called once listening; Deno prints its own "Listening on" line unless this is set. */
  onListen?: (address: DenoNetAddress) => void
  onError?: (error: unknown) => Response | Promise<Response>
  [option: string]: unknown
}

/** The part of Deno's `HttpServer` that callers of `serveDeno` commonly need. */
export interface DenoHttpServer {
  readonly addr: DenoNetAddress
  readonly finished: Promise<void>
  shutdown(): Promise<void>
  ref(): void
  unref(): void
}

// A local declaration rather than Deno's lib typings, so this module type-checks under Node's tsconfig.
declare const Deno: {
  serve(options: DenoServeOptions, handler: (request: Request) => Promise<Response>): DenoHttpServer
}

/**
 * Serves a gateway with `Deno.serve`. Deno aborts `request.signal` itself when the client disconnects.
 *
 * @example
 * ```ts
 * import { createGateway } from 'modelgate'
 * import { serveDeno } from 'modelgate/adapters/deno'
 *
 * const server = serveDeno(createGateway(), { port: 8787 })
 * ```
 */
export const serveDeno = (gateway: FetchHandler, options: DenoServeOptions = {}): DenoHttpServer =>
  Deno.serve(options, gateway.fetch)
