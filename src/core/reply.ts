/**
 * What a route answers with inside the gateway: JSON text, an event producer, or any web `Response`.
 *
 * A web `Response` built from a string wraps it in a byte stream at once, and a Node host then reads that
 * stream back chunk by chunk: together about a tenth of a small request's CPU. An event stream pays a pull,
 * an enqueue and a read per event. So routes answer with plain data, and each host takes it its own way:
 * `gateway.fetch` turns every reply into a `Response` (`toResponse`), which is what Bun, Deno and any
 * fetch-based host serve; the Node bridge asks `gateway.reply` instead and writes JSON text and events
 * straight to the socket.
 */

import { toReadableStream, type ChunkProducer } from './event-stream'

/** A whole JSON answer, kept as text. */
export interface JsonReply {
  readonly kind: 'json'
  readonly status: number
  /** Owned by the reply: later steps (request id, idempotency) may add to them. */
  readonly headers: Headers
  readonly text: string
}

/** A streamed answer: the producer runs once, into whichever sink the host starts it with. */
export interface EventsReply {
  readonly kind: 'events'
  readonly status: number
  readonly headers: Headers
  readonly produce: ChunkProducer
}

/** Anything else a route answers with, as a web `Response`. */
export interface ResponseReply {
  readonly kind: 'response'
  readonly response: Response
}

export type Reply = JsonReply | EventsReply | ResponseReply

/** A JSON reply from text that already is JSON. */
export const jsonTextReply = (text: string, status: number, headers?: HeadersInit): JsonReply => {
  const replyHeaders = new Headers(headers)
  replyHeaders.set('content-type', 'application/json')
  return { kind: 'json', status, headers: replyHeaders, text }
}

/** A JSON success reply. */
export const json = (data: unknown, status = 200, headers?: HeadersInit): JsonReply => jsonTextReply(JSON.stringify(data), status, headers)

/** A streamed reply; `headers` should name the content type (`text/event-stream`). */
export const eventsReply = (produce: ChunkProducer, headers: HeadersInit, status = 200): EventsReply => ({
  kind: 'events',
  status,
  headers: new Headers(headers),
  produce,
})

/** Wraps a web `Response` (an upstream's, a runtime's) as a reply. */
export const responseReply = (response: Response): ResponseReply => ({ kind: 'response', response })

/** Sets a header on the reply's answer, copying a `Response` whose headers are immutable (one from `fetch`). */
export const setReplyHeader = (reply: Reply, name: string, value: string): Reply => {
  if (reply.kind !== 'response') {
    reply.headers.set(name, value)
    return reply
  }
  try {
    reply.response.headers.set(name, value)
    return reply
  } catch {
    const copy = new Response(reply.response.body, reply.response)
    copy.headers.set(name, value)
    return responseReply(copy)
  }
}

/** The status the reply answers with. */
export const replyStatus = (reply: Reply): number => (reply.kind === 'response' ? reply.response.status : reply.status)

/** The reply as a plain web `Response`, for every host that serves web Responses. */
export const toResponse = (reply: Reply): Response => {
  switch (reply.kind) {
    case 'json':
      return new Response(reply.text, { status: reply.status, headers: reply.headers })
    case 'events':
      return new Response(toReadableStream(reply.produce), { status: reply.status, headers: reply.headers })
    case 'response':
      return reply.response
  }
}
