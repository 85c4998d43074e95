/**
 * The gateway's own Response kinds (`JsonResponse`, `EventStreamResponse`) skip web-stream work a Node socket
 * does not need. Host runtimes with native servers read a Response's internals, so everyone but the Node
 * bridge gets them as plain Responses.
 */

import { EventStreamResponse } from './event-stream-response'
import { JsonResponse } from './json-response'

/**
 * The key under which a gateway offers its fetch handler without the final conversion to plain Responses.
 * A registered symbol, so two bundled copies of modelgate still find each other.
 */
export const FETCH_UNMATERIALIZED: unique symbol = Symbol.for('modelgate.fetchUnmaterialized') as never

/** What a gateway offers under `FETCH_UNMATERIALIZED`: like `fetch`, but its own Response kinds stay as they are. */
export type UnmaterializedFetch = (request: Request) => Promise<Response>

/** Turns the gateway's own Response kinds into plain Responses; any other response passes through. */
export const materialize = (response: Response): Response =>
  response instanceof JsonResponse || response instanceof EventStreamResponse ? response.toResponse() : response
