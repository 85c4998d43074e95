/**
 * An `IncomingMessage`'s headers seen as web `Headers`, without copying them first.
 *
 * The gateway reads a handful of headers per request (authorization, content type and length, request id), while
 * a full `Headers` copy validates, stores and sorts every header the client sent: a measurable share of a small
 * call's CPU. So `get` and `has` read Node's parsed headers directly when the answer is certainly the one the copy
 * would give, and everything else (iteration, mutation, repeated or unusual values) builds the copy once and
 * answers from it from then on.
 */

import type { IncomingMessage } from 'node:http'

// Names as callers spell them in code; anything else (upper case, invalid names) goes to the copy's own rules.
const PLAIN_NAME = /^[a-z0-9-]+$/
// Values the copy would store unchanged: no surrounding whitespace to strip, no character it refuses.
const ALTERED_VALUE = /^[\t ]|[\t ]$|[\0\r\n]/

/** The full copy, as the bridge built it before this view existed. */
export const copyNodeHeaders = (req: IncomingMessage): Headers => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    // HTTP/2 pseudo-headers (`:path`, `:authority`) are not headers.
    if (value === undefined || name.startsWith(':')) continue
    try {
      if (typeof value === 'string') headers.set(name, value)
      // Node already joins repeated `cookie` lines with '; ' and everything else with ', '; only
      // `set-cookie` stays an array, and its values must not be comma-joined.
      else for (const item of value) headers.append(name, item)
    } catch {
      // A value the Headers class refuses (Node's parser lets a few through) is dropped, not fatal.
    }
  }
  return headers
}

export class NodeHeaders implements Headers {
  readonly #req: IncomingMessage
  #copy: Headers | undefined

  constructor(req: IncomingMessage) {
    this.#req = req
  }

  /** The real `Headers` behind the view, built on first need; later reads and writes all go to it. */
  get copy(): Headers {
    return (this.#copy ??= copyNodeHeaders(this.#req))
  }

  get(name: string): string | null {
    if (this.#copy === undefined && PLAIN_NAME.test(name)) {
      const value = this.#req.headers[name]
      if (value === undefined) return null
      if (typeof value === 'string' && !ALTERED_VALUE.test(value)) return value
    }
    return this.copy.get(name)
  }

  has(name: string): boolean {
    return this.get(name) !== null
  }

  getSetCookie(): string[] {
    return this.copy.getSetCookie()
  }

  set(name: string, value: string): void {
    this.copy.set(name, value)
  }

  append(name: string, value: string): void {
    this.copy.append(name, value)
  }

  delete(name: string): void {
    this.copy.delete(name)
  }

  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    this.copy.forEach((value, key) => callback.call(thisArg, value, key, this))
  }

  entries(): ReturnType<Headers['entries']> {
    return this.copy.entries()
  }

  keys(): ReturnType<Headers['keys']> {
    return this.copy.keys()
  }

  values(): ReturnType<Headers['values']> {
    return this.copy.values()
  }

  [Symbol.iterator](): ReturnType<Headers['entries']> {
    return this.copy.entries()
  }
}
