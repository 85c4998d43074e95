/**
 * How the gateway learns that a client went away. An `AbortSignal` per request is costly on Node: each one
 * outlives the young-generation GC until the next full one (about 400 bytes of old-generation garbage per
 * request, the memory bound in bench/README.md). So the Node bridge hands `gateway.reply` a lighter signal of its own, and the
 * request path takes whichever the host gives; any `AbortSignal` fits the interface.
 */

/** What the gateway needs of a client's disconnect signal. */
export interface ClientSignal {
  readonly aborted: boolean
  readonly reason?: unknown
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void
  removeEventListener(type: 'abort', listener: () => void): void
}

const CLIENT_GONE = Symbol.for('modelgate.clientGone')

/**
 * What a host adapter fails a body read with when the client went away before sending all of it. That is
 * ordinary traffic (a cancelled upload, a closed tab), so the gateway notes it at debug level, not as a fault.
 */
export class ClientGoneError extends Error {
  readonly [CLIENT_GONE] = true

  constructor(options?: { cause?: unknown }) {
    super('modelgate: the client disconnected', options)
    this.name = 'ClientGoneError'
  }
}

/** True for a `ClientGoneError`, even one from another bundled copy of modelgate. */
export const isClientGone = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[CLIENT_GONE] === true
