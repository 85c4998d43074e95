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

// RFC 9110 §5.5: a field value is stored without the whitespace around it (what `Headers` does too).
const isHttpWhitespace = (code: number) => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d
const EDGE_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g

const normalizedValue = (value: string): string =>
  value.length > 0 && (isHttpWhitespace(value.charCodeAt(0)) || isHttpWhitespace(value.charCodeAt(value.length - 1)))
    ? value.replace(EDGE_WHITESPACE, '')
    : value

/**
 * The head of a reply made here. A reply carries three or four fields and most go to a Node socket, which takes
 * them as plain strings: a `Headers` object (each field validated and copied, the list sorted on every
 * iteration) cost about 5 µs per request for nothing. So the fields stay a plain record of lowercase names
 * until something asks for `headers`; from then on that `Headers` is the only copy.
 */
abstract class OwnReply {
  readonly status: number
  // No prototype: a field named like one of Object's own properties is just a field.
  #fields: Record<string, string> | undefined = Object.create(null) as Record<string, string>
  #headers: Headers | undefined

  constructor(status: number, init: HeadersInit | undefined) {
    this.status = status
    if (init === undefined) return
    // Anything but a plain record (a `Headers`, a list of pairs) is taken as it is.
    const prototype = Object.getPrototypeOf(init) as unknown
    if (prototype !== Object.prototype && prototype !== null) {
      this.#fields = undefined
      this.#headers = new Headers(init)
      return
    }
    for (const name in init) this.#append(name, (init as Record<string, string>)[name]!)
  }

  get headers(): Headers {
    if (!this.#headers) {
      this.#headers = new Headers(this.#fields)
      this.#fields = undefined
    }
    return this.#headers
  }

  /** The fields (lowercase names), while no `Headers` was made of them; `undefined` after. */
  get fields(): Readonly<Record<string, string>> | undefined {
    return this.#fields
  }

  setHeader(name: string, value: string): void {
    if (!this.#fields || !isPlainField(name, value)) {
      this.headers.set(name, value)
      return
    }
    this.#fields[name.toLowerCase()] = normalizedValue(value)
  }

  // As `Headers` would: a name given twice in other letter cases is one field, its values joined.
  #append(name: string, value: string): void {
    if (!this.#fields || !isPlainField(name, value)) {
      this.headers.append(name, value)
      return
    }
    const key = name.toLowerCase()
    const normalized = normalizedValue(value)
    const existing = this.#fields[key]
    this.#fields[key] = existing === undefined ? normalized : `${existing}, ${normalized}`
  }
}

// `set-cookie` is kept as separate values by `Headers`, and an invalid name or value must fail where and as
// `Headers` fails: all of them go to a real `Headers`. Every field this gateway sets is a plain one.
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const FORBIDDEN_IN_VALUE = /[\0\r\n]/
const isPlainField = (name: string, value: string) =>
  FIELD_NAME.test(name) && typeof value === 'string' && !FORBIDDEN_IN_VALUE.test(value) && name.toLowerCase() !== 'set-cookie'

class OwnJsonReply extends OwnReply implements JsonReply {
  readonly kind = 'json'
  readonly text: string

  constructor(text: string, status: number, headers: HeadersInit | undefined) {
    super(status, headers)
    this.text = text
  }
}

class OwnEventsReply extends OwnReply implements EventsReply {
  readonly kind = 'events'
  readonly produce: ChunkProducer

  constructor(produce: ChunkProducer, status: number, headers: HeadersInit | undefined) {
    super(status, headers)
    this.produce = produce
  }
}

/**
 * The header fields of a JSON or event reply made by `json`, `jsonTextReply` or `eventsReply`, as a record of
 * lowercase names, while nothing has asked for its `headers`; `undefined` otherwise (read `headers` then).
 */
export const replyFields = (reply: JsonReply | EventsReply): Readonly<Record<string, string>> | undefined =>
  reply instanceof OwnReply ? reply.fields : undefined

/** A JSON reply from text that already is JSON. */
export const jsonTextReply = (text: string, status: number, headers?: HeadersInit): JsonReply => {
  const reply = new OwnJsonReply(text, status, headers)
  reply.setHeader('content-type', 'application/json')
  return reply
}

/** A JSON success reply. */
export const json = (data: unknown, status = 200, headers?: HeadersInit): JsonReply => jsonTextReply(JSON.stringify(data), status, headers)

/** A streamed reply; `headers` should name the content type (`text/event-stream`). */
export const eventsReply = (produce: ChunkProducer, headers: HeadersInit, status = 200): EventsReply => new OwnEventsReply(produce, status, headers)

/** Wraps a web `Response` (an upstream's, a runtime's) as a reply. */
export const responseReply = (response: Response): ResponseReply => ({ kind: 'response', response })

/** Sets a header on the reply's answer, copying a `Response` whose headers are immutable (one from `fetch`). */
export const setReplyHeader = (reply: Reply, name: string, value: string): Reply => {
  if (reply.kind !== 'response') {
    if (reply instanceof OwnReply) reply.setHeader(name, value)
    else reply.headers.set(name, value)
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
