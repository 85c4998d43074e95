/**
 * The Node request half of the bridge: an `IncomingMessage` seen as a web `Request`.
 *
 * Building a full `Request` costs more than the gateway's own work on a small JSON call (a Headers copy,
 * a body stream, an AbortController and undici's Request bookkeeping: about 30 µs). So the bridge hands
 * core a lazy Request instead. It is a real `Request` subclass instance as far as `instanceof` goes;
 * `method`, `url`, `headers` and `signal` are built on first use, `arrayBuffer()`/`text()`/`json()` read
 * the socket directly, and anything else (`body`, `clone()`, `formData()`...) builds the full Request
 * once and answers from it.
 */

import type { IncomingMessage, ServerResponse } from 'node:http'
import type { TLSSocket } from 'node:tls'
import { concatBytes } from '../core/body'
import { ClientGoneError, type ClientSignal } from '../core/client-signal'
import { GatewayError } from '../core/errors'
import { NodeHeaders } from './node-headers'

/** Options shared by the Node-based host adapters (`toNodeListener`, `toExpressHandler`). */
export interface NodeBridgeOptions {
  /**
   * Build the request URL from `X-Forwarded-Proto` and `X-Forwarded-Host` (their last entries: the ones your proxy
   * wrote, not what a client sent before it). Off by default because any client can send them; enable it only behind a proxy you control.
   */
  shouldTrustProxy?: boolean
}

/**
 * Thrown when a host middleware (such as `express.json()`) has already read the request body. A gateway error (500,
 * not retryable): the host adapters answer it in the error body of the route asked for, so a client sees why.
 */
export class BodyAlreadyConsumedError extends GatewayError {
  override readonly name = 'BodyAlreadyConsumedError'

  constructor() {
    super(
      500,
      'modelgate: the request body was already read by another middleware (such as express.json()); ' +
        "mount modelgate before body parsers, or give them only your own routes (app.use('/app', express.json()))",
      { reason: 'internal_error', retryable: false },
    )
  }
}

type RequestInitWithDuplex = RequestInit & { duplex: 'half' }

// Bodies are queued by bytes, so one slow consumer holds at most this much of a request in memory.
const REQUEST_BODY_HIGH_WATER_MARK = 64 * 1024

// Host values that are safe to splice into a URL: a reg-name or IPv4 address, or a bracketed IPv6 address,
// each with an optional port. Anything else (`evil.com/x?`, `user@host`) falls back to the socket address.
const HOST_PATTERN = /^(?:[A-Za-z0-9\-._~%!$&'()*+,;=]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/

// The methods the Request constructor refuses (Fetch "forbidden methods"); Node's parser accepts them.
const FORBIDDEN_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK'])

/**
 * The entry the trusted proxy wrote: the last one, since a proxy that appends puts its own after whatever the
 * client sent (the rule src/core/request-host.ts follows for the same headers).
 */
const lastHeaderValue = (value: string | string[] | undefined): string | undefined => {
  const last = Array.isArray(value) ? value.at(-1) : value
  return last?.split(',').at(-1)?.trim() || undefined
}

const toOrigin = (req: IncomingMessage, options: NodeBridgeOptions): string => {
  const socket = req.socket as Partial<TLSSocket> | undefined
  let protocol = socket?.encrypted ? 'https' : 'http'
  let host = req.headers.host
  if (options.shouldTrustProxy) {
    const forwardedProto = lastHeaderValue(req.headers['x-forwarded-proto'])?.toLowerCase()
    if (forwardedProto === 'http' || forwardedProto === 'https') protocol = forwardedProto
    host = lastHeaderValue(req.headers['x-forwarded-host']) ?? host
  }
  if (!host || !HOST_PATTERN.test(host)) {
    const address = socket?.localAddress ?? '127.0.0.1'
    const hostname = address.includes(':') ? `[${address}]` : address
    host = socket?.localPort ? `${hostname}:${socket.localPort}` : hostname
  }
  return `${protocol}://${host}`
}

// `req.url` is origin-form (`/path?query`) for normal requests. It is concatenated rather than resolved against
// a base, so a path such as `//other.host/x` stays a path instead of becoming a protocol-relative URL.
const toPathAndQuery = (rawUrl: string | undefined): string => {
  if (rawUrl?.startsWith('/')) return rawUrl
  if (rawUrl && URL.canParse(rawUrl)) {
    // absolute-form, as sent to proxies
    const url = new URL(rawUrl)
    return `${url.pathname}${url.search}`
  }
  return '/'
}

/** The request's absolute URL, as its `Request` would carry it. */
export const requestUrlOf = (req: IncomingMessage, options: NodeBridgeOptions): string => new URL(`${toOrigin(req, options)}${toPathAndQuery(req.url)}`).href

const isBodyConsumed = (req: IncomingMessage): boolean => {
  const parsed = req as IncomingMessage & { body?: unknown; _body?: unknown }
  return req.readableEnded || req.readableDidRead || parsed.body !== undefined || parsed._body === true
}

// HTTP/1 messages without Content-Length or Transfer-Encoding have no body (RFC 9112 §6.3).
const hasBody = (req: IncomingMessage): boolean => {
  if (req.httpVersionMajor >= 2) return true
  if (req.headers['transfer-encoding'] !== undefined) return true
  const length = req.headers['content-length']
  return length !== undefined && length !== '0'
}

/** Wraps an incoming message in a byte stream that only reads from the socket while the consumer keeps up. */
const toBodyStream = (req: IncomingMessage, res: ServerResponse): ReadableStream<Uint8Array> => {
  let isSettled = false
  let removeListeners = (): void => {}
  // Unread bytes would stall the next request on a keep-alive connection, so they are read and dropped,
  // as Node does for bodies nobody touched.
  const discardRest = () => {
    removeListeners()
    req.resume()
  }
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const settle = (finish: () => void) => {
          if (isSettled) return
          isSettled = true
          removeListeners()
          finish()
        }
        const onData = (chunk: Buffer) => {
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
          if ((controller.desiredSize ?? 0) <= 0) req.pause()
        }
        const onEnd = () => settle(() => controller.close())
        // A request stream only fails when its connection does ('aborted', ECONNRESET): the client went away.
        const onError = (error: Error) => settle(() => controller.error(new ClientGoneError({ cause: error })))
        const onClose = () => settle(() => controller.error(new ClientGoneError()))
        // e.g. a 401 sent without reading the body
        const onResponseFinish = () =>
          settle(() => {
            controller.error(new Error('modelgate: the response was sent before the request body was read'))
            discardRest()
          })
        // A client that left before the body was read: its 'close' has passed, so no listener below would hear of it.
        if (req.destroyed && !req.complete) return settle(() => controller.error(new ClientGoneError()))
        req.on('data', onData)
        req.on('end', onEnd)
        req.on('error', onError)
        req.on('close', onClose)
        res.on('finish', onResponseFinish)
        removeListeners = () => {
          req.off('data', onData)
          req.off('end', onEnd)
          req.off('error', onError)
          req.off('close', onClose)
          res.off('finish', onResponseFinish)
        }
        // Adding a 'data' listener starts the flow; `pull` decides when it runs.
        req.pause()
      },
      pull() {
        req.resume()
      },
      cancel() {
        isSettled = true
        // Discard the rest instead of destroying the socket, so the response can still be sent.
        discardRest()
      },
    },
    { highWaterMark: REQUEST_BODY_HIGH_WATER_MARK, size: (chunk) => chunk.byteLength },
  )
}


/** Reads the whole body off the socket into one fresh buffer, skipping the web stream machinery. */
const readWholeBody = (req: IncomingMessage): Promise<Uint8Array> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let total = 0
    // A small body usually came in with the headers: Node has parsed all of it already, and it can be taken
    // from the stream's buffer now instead of a few event-loop ticks later.
    if (req.complete) {
      for (let chunk: Buffer | null; (chunk = req.read() as Buffer | null) !== null; ) {
        chunks.push(chunk)
        total += chunk.byteLength
      }
      if (req.readableLength === 0) return resolve(concatBytes(chunks, total))
    }
    // A client that left before the body was read: its 'close' has passed, so no listener below would hear of it.
    if (req.destroyed) return reject(new ClientGoneError())
    const onData = (chunk: Buffer) => {
      chunks.push(chunk)
      total += chunk.byteLength
    }
    const onEnd = () => {
      removeListeners()
      // Socket buffers are slices of larger pooled memory; the caller gets bytes of its own.
      resolve(concatBytes(chunks, total))
    }
    // A request stream only fails when its connection does ('aborted', ECONNRESET): the client went away.
    const onError = (error: Error) => {
      removeListeners()
      reject(new ClientGoneError({ cause: error }))
    }
    const onClose = () => {
      removeListeners()
      reject(new ClientGoneError())
    }
    const removeListeners = () => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
      req.off('close', onClose)
    }
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onError)
    req.on('close', onClose)
  })

/** Fires when the client goes away before the response has been fully written. */
const toDisconnectSignal = (req: IncomingMessage, res: ServerResponse): AbortSignal => {
  const controller = new AbortController()
  const abort = () => {
    if (!res.writableFinished) controller.abort()
  }
  if (res.destroyed) abort()
  res.once('close', abort)
  req.once('aborted', abort)
  // `on`, not `once`: a second 'error' with no listener would crash the process.
  req.on('error', abort)
  return controller.signal
}

/**
 * The bridge's light disconnect signal (see core/client-signal.ts): a plain object that watches the response
 * for a close before it finished, and only once someone listens.
 */
class DisconnectSignal implements ClientSignal {
  #isAborted = false
  #reason: unknown = undefined
  #listeners: Array<() => void> = []
  #isWatching = false
  readonly #req: IncomingMessage
  readonly #res: ServerResponse

  constructor(req: IncomingMessage, res: ServerResponse) {
    this.#req = req
    this.#res = res
  }

  get aborted(): boolean {
    if (!this.#isAborted && this.#res.destroyed && !this.#res.writableFinished) this.#abort()
    return this.#isAborted
  }

  get reason(): unknown {
    return this.#reason
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return
    this.#listeners.push(listener)
    this.#watch()
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const index = this.#listeners.indexOf(listener)
    if (index >= 0) this.#listeners.splice(index, 1)
  }

  #watch(): void {
    if (this.#isWatching) return
    this.#isWatching = true
    const onClose = () => {
      if (!this.#res.writableFinished) this.#abort()
    }
    this.#res.once('close', onClose)
    // `on`, not `once`: a second 'error' with no listener would crash the process.
    this.#req.on('error', onClose)
  }

  #abort(): void {
    if (this.#isAborted) return
    this.#isAborted = true
    this.#reason = new Error('modelgate: the client disconnected')
    const listeners = this.#listeners
    this.#listeners = []
    for (const listener of listeners) listener()
  }
}

const kFullRequest = Symbol('modelgate.fullRequest')
const kSignalIfCreated = Symbol('modelgate.signalIfCreated')
const kClientSignal = Symbol('modelgate.clientSignal')
const utf8 = new TextDecoder()

class NodeRequest {
  readonly method: string
  readonly url: string
  readonly #req: IncomingMessage
  readonly #res: ServerResponse
  readonly #hasBody: boolean
  #headers: NodeHeaders | undefined
  #signal: AbortSignal | undefined
  #clientSignal: ClientSignal | undefined
  #fullRequest: Request | undefined
  #isBodyRead = false

  constructor(req: IncomingMessage, res: ServerResponse, method: string, url: string, isBodyPresent: boolean) {
    this.#req = req
    this.#res = res
    this.method = method
    this.url = url
    this.#hasBody = isBodyPresent
  }

  get headers(): Headers {
    return (this.#headers ??= new NodeHeaders(this.#req))
  }

  get signal(): AbortSignal {
    return (this.#signal ??= toDisconnectSignal(this.#req, this.#res))
  }

  /** What the gateway itself listens on: the same disconnect, without an AbortSignal. */
  get [kClientSignal](): ClientSignal {
    return (this.#clientSignal ??= new DisconnectSignal(this.#req, this.#res))
  }

  /** The disconnect signal if anyone asked for it; `undefined` rather than creating one. */
  get [kSignalIfCreated](): AbortSignal | undefined {
    return this.#signal
  }

  get body(): ReadableStream<Uint8Array> | null {
    return this[kFullRequest]().body
  }

  get bodyUsed(): boolean {
    return this.#isBodyRead || (this.#fullRequest?.bodyUsed ?? false)
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return (await this.#readBody()).buffer as ArrayBuffer
  }

  async text(): Promise<string> {
    return utf8.decode(await this.#readBody())
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text())
  }

  async #readBody(): Promise<Uint8Array> {
    if (this.#fullRequest) return new Uint8Array(await this.#fullRequest.arrayBuffer())
    if (this.#isBodyRead) throw new TypeError('Body is unusable: Body has already been read')
    this.#isBodyRead = true
    return this.#hasBody ? readWholeBody(this.#req) : new Uint8Array(0)
  }

  /** The full web Request, built once for anything the fast paths do not cover. */
  [kFullRequest](): Request {
    if (this.#fullRequest) return this.#fullRequest
    const init: RequestInitWithDuplex = {
      method: this.method,
      headers: (this.#headers ??= new NodeHeaders(this.#req)).copy,
      // After a fast read the socket is drained; the full Request then has no body left to give.
      body: this.#hasBody && !this.#isBodyRead ? toBodyStream(this.#req, this.#res) : null,
      duplex: 'half',
      signal: this.signal,
    }
    this.#fullRequest = new Request(this.url, init)
    return this.#fullRequest
  }
}

// Everything else a Request has (`cache`, `mode`, `clone()`, `formData()`...) answers from the full Request.
for (const name of Object.getOwnPropertyNames(Request.prototype)) {
  if (name === 'constructor' || Object.hasOwn(NodeRequest.prototype, name)) continue
  const descriptor = Object.getOwnPropertyDescriptor(Request.prototype, name)!
  if (descriptor.get) {
    Object.defineProperty(NodeRequest.prototype, name, {
      configurable: true,
      enumerable: descriptor.enumerable ?? false,
      get(this: NodeRequest) {
        return this[kFullRequest]()[name as keyof Request]
      },
    })
  } else if (typeof descriptor.value === 'function') {
    Object.defineProperty(NodeRequest.prototype, name, {
      configurable: true,
      writable: true,
      value(this: NodeRequest, ...args: unknown[]) {
        return (this[kFullRequest]()[name as keyof Request] as (...args: unknown[]) => unknown)(...args)
      },
    })
  }
}
Object.setPrototypeOf(NodeRequest.prototype, Request.prototype)

/** The client's disconnect signal, without an AbortSignal for a request made by `toRequest`. */
export const disconnectSignalOf = (request: Request): ClientSignal => (request instanceof NodeRequest ? request[kClientSignal] : request.signal)

/** The client-disconnect signal of a request made by `toRequest`, if something already asked for it. */
export const existingSignalOf = (request: Request): AbortSignal | undefined =>
  request instanceof NodeRequest ? request[kSignalIfCreated] : request.signal

/**
 * Turns a Node `IncomingMessage` into a web `Request` whose body streams from the socket and whose
 * `signal` aborts when the client disconnects.
 *
 * @throws {BodyAlreadyConsumedError} when a body parser has already read the body.
 * @throws {TypeError} when the message cannot be a `Request` (for example the method `TRACE`).
 */
export const toRequest = (req: IncomingMessage, res: ServerResponse, options: NodeBridgeOptions = {}): Request => {
  const method = req.method ?? 'GET'
  if (FORBIDDEN_METHODS.has(method.toUpperCase())) throw new TypeError(`'${method}' HTTP method is unsupported.`)
  const isBodyless = method === 'GET' || method === 'HEAD'
  if (!isBodyless && isBodyConsumed(req)) throw new BodyAlreadyConsumedError()
  // Parsed once here, so a URL the Request constructor would refuse fails now, as it would have.
  const url = requestUrlOf(req, options)
  return new NodeRequest(req, res, method, url, !isBodyless && hasBody(req)) as unknown as Request
}
