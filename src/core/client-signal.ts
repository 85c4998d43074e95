/**
 * How the gateway learns that a client went away. An `AbortSignal` per request is costly on Node: each one
 * outlives the young-generation GC until the next full one (about 400 bytes of old-generation garbage per
 * request, issue #5's memory bound). So the Node bridge offers a lighter signal under `CLIENT_SIGNAL`, and the
 * request path takes whichever the host gives; any `AbortSignal` fits the interface.
 */

/** What the gateway needs of a client's disconnect signal. */
export interface ClientSignal {
  readonly aborted: boolean
  readonly reason?: unknown
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void
  removeEventListener(type: 'abort', listener: () => void): void
}

/** The key under which a host adapter offers its own disconnect signal on a request (registered, as across bundles). */
export const CLIENT_SIGNAL: unique symbol = Symbol.for('modelgate.clientSignal') as never

/** The request's disconnect signal: the host adapter's own where it offers one, else `request.signal`. */
export const clientSignalOf = (request: Request): ClientSignal =>
  (request as Request & { [CLIENT_SIGNAL]?: ClientSignal })[CLIENT_SIGNAL] ?? request.signal
