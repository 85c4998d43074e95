import type { ClientSignal } from './client-signal'
import type { Reply } from './reply'

/** The shape every host adapter mounts: a web-standard fetch handler. */
export interface FetchHandler {
  /** Serves one request. Never rejects: every failure becomes an error `Response`. */
  fetch: (request: Request) => Promise<Response>
}

/** How a host adapter may hand the gateway what it knows beyond the `Request`. */
export interface ReplyOptions {
  /** The client's disconnect signal, where the host has one cheaper than `request.signal`. */
  signal?: ClientSignal
}

/**
 * A fetch handler that also answers with a `Reply` (reply.ts), for hosts that write JSON text and event
 * producers out themselves (the Node bridge). `fetch` is `reply` followed by `toResponse`.
 */
export interface ReplyHandler extends FetchHandler {
  reply: (request: Request, options?: ReplyOptions) => Promise<Reply>
}

/**
 * A handler that answers an error its host raised before the handler could read the request (a body a host
 * middleware already consumed) in the error body of the route the request was for (the gateway's `replyError`).
 */
export interface ErrorReplier {
  replyError: (request: Request, error: unknown) => Reply
}
