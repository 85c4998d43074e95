/** How a server tool says it did not run a call, or failed it in a way the model may read (contract.ts). */

/**
 * A call the tool will not run (its `max_uses` spent, arguments the model got wrong): the model reads the
 * message as the result and may try again; the call does not count as executed.
 */
export class ServerToolRefusal extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ServerToolRefusal'
  }
}

/** A run that failed for a reason the model may read (a page that answered 404): the message goes back as the result. */
export class ServerToolFailure extends Error {
  /** Fields the client's failed item carries besides the message (the page's URL and HTTP status). */
  readonly details: Record<string, unknown>

  constructor(message: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ServerToolFailure'
    this.details = options.details ?? {}
  }
}
