import type { IncomingMessage, ServerResponse } from 'node:http'
import type { TLSSocket } from 'node:tls'
import type { FetchHandler } from '../core/types'

/** Options shared by the Node-based host adapters (`toNodeListener`, `toExpressHandler`). */
export interface NodeBridgeOptions {
  /**
   * Build the request URL from `X-Forwarded-Proto` and `X-Forwarded-Host`.
   * Off by default because any client can send them; enable it only behind a proxy you control.
   */
  shouldTrustProxy?: boolean
}

/** Thrown when a host middleware (such as `express.json()`) has already read the request body. */
export class BodyAlreadyConsumedError extends Error {
  override readonly name = 'BodyAlreadyConsumedError'

  constructor() {
    super(
      'modelgate: the request body was already read by another middleware (such as express.json()); ' +
        'mount modelgate before body parsers',
    )
  }
}

type RequestInitWithDuplex = RequestInit & { duplex: 'half' }

// Bodies are queued by bytes, so one slow consumer holds at most this much of a request in memory.
const REQUEST_BODY_HIGH_WATER_MARK = 64 * 1024

// Host values that are safe to splice into a URL: a reg-name or IPv4 address, or a bracketed IPv6 address,
// each with an optional port. Anything else (`evil.com/x?`, `user@host`) falls back to the socket address.
const HOST_PATTERN = /^(?:[A-Za-z0-9\-._~%!$&'()*+,;=]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/

const firstHeaderValue = (value: string | string[] | undefined): string | undefined => {
  const first = Array.isArray(value) ? value[0] : value
  return first?.split(',')[0]?.trim() || undefined
}

const toOrigin = (req: IncomingMessage, options: NodeBridgeOptions): string => {
  const socket = req.socket as Partial<TLSSocket> | undefined
  let protocol = socket?.encrypted ? 'https' : 'http'
  let host = req.headers.host
  if (options.shouldTrustProxy) {
    const forwardedProto = firstHeaderValue(req.headers['x-forwarded-proto'])?.toLowerCase()
    if (forwardedProto === 'http' || forwardedProto === 'https') protocol = forwardedProto
    host = firstHeaderValue(req.headers['x-forwarded-host']) ?? host
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

const toHeaders = (req: IncomingMessage): Headers => {
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
        const onError = (error: Error) => settle(() => controller.error(error))
        const onClose = () => settle(() => controller.error(new Error('modelgate: the client disconnected')))
        // e.g. a 401 sent without reading the body
        const onResponseFinish = () =>
          settle(() => {
            controller.error(new Error('modelgate: the response was sent before the request body was read'))
            discardRest()
          })
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
 * Turns a Node `IncomingMessage` into a web `Request` whose body streams from the socket and whose
 * `signal` aborts when the client disconnects.
 *
 * @throws {BodyAlreadyConsumedError} when a body parser has already read the body.
 * @throws {TypeError} when the message cannot be a `Request` (for example the method `TRACE`).
 */
export const toRequest = (req: IncomingMessage, res: ServerResponse, options: NodeBridgeOptions = {}): Request => {
  const method = req.method ?? 'GET'
  const isBodyless = method === 'GET' || method === 'HEAD'
  if (!isBodyless && isBodyConsumed(req)) throw new BodyAlreadyConsumedError()
  const body = isBodyless || !hasBody(req) ? null : toBodyStream(req, res)
  const init: RequestInitWithDuplex = {
    method,
    headers: toHeaders(req),
    body,
    duplex: 'half',
    signal: toDisconnectSignal(req, res),
  }
  try {
    return new Request(`${toOrigin(req, options)}${toPathAndQuery(req.url)}`, init)
  } catch (error) {
    // e.g. `TRACE`, which the Request constructor refuses
    body?.cancel().catch(() => {})
    throw error
  }
}

const waitForDrainOrClose = (res: ServerResponse): Promise<void> =>
  new Promise((resolve) => {
    const done = () => {
      res.off('drain', done)
      res.off('close', done)
      resolve()
    }
    res.on('drain', done)
    res.on('close', done)
  })

/** Resolves `true` if `promise` settles before the event loop gets to I/O, `false` if it is still waiting. */
const isSettledPromptly = (promise: Promise<unknown>): Promise<boolean> =>
  new Promise((resolve) => {
    const immediate = setImmediate(resolve, false)
    const settled = () => {
      clearImmediate(immediate)
      resolve(true)
    }
    promise.then(settled, settled)
  })

const isEventStream = (response: Response): boolean =>
  response.headers.get('content-type')?.toLowerCase().startsWith('text/event-stream') ?? false

const writeHead = (response: Response, res: ServerResponse): void => {
  res.statusCode = response.status
  if (response.statusText) res.statusMessage = response.statusText
  for (const [name, value] of response.headers) {
    if (name === 'set-cookie') continue
    res.setHeader(name, value)
  }
  const cookies = response.headers.getSetCookie()
  if (cookies.length > 0) res.setHeader('set-cookie', cookies)
}

const writeChunk = async (res: ServerResponse, chunk: Uint8Array): Promise<void> => {
  if (!res.write(chunk)) await waitForDrainOrClose(res)
}

/**
 * Copies the body to the socket. A chunk is held back only while the next one is already available, so a
 * body that arrives in one piece is sent with a Content-Length, while a slow stream (SSE) goes out chunk by chunk
 * with its headers flushed as soon as the producer pauses.
 */
const pipeBody = async (reader: ReadableStreamDefaultReader<Uint8Array>, res: ServerResponse): Promise<void> => {
  let held: Uint8Array | undefined
  for (;;) {
    if (res.destroyed) return
    const next = reader.read()
    if (!(await isSettledPromptly(next))) {
      if (held) await writeChunk(res, held)
      held = undefined
      if (!res.headersSent) res.flushHeaders()
    }
    const result = await next
    if (res.destroyed) return
    if (result.done) {
      if (held) res.end(held)
      else res.end()
      return
    }
    if (held) await writeChunk(res, held)
    held = result.value
  }
}

const failResponse = (res: ServerResponse): void => {
  if (res.headersSent) {
    // The status is already out; cutting the connection is the only way to tell the client the body is incomplete.
    res.destroy()
    return
  }
  for (const name of res.getHeaderNames()) res.removeHeader(name)
  res.statusCode = 500
  res.statusMessage = 'Internal Server Error'
  res.end()
}

const logFailure = (what: string, error: unknown): void => {
  // Only the error's class name: messages from drivers or upstreams may carry connection strings or keys.
  const name = error instanceof Error ? error.name : typeof error
  console.error(`modelgate: ${what} (${name})`)
}

/**
 * Writes a web `Response` to a Node `ServerResponse`: status, headers (each `Set-Cookie` separately) and a
 * streamed body with backpressure. The body is cancelled when the client disconnects or `signal` aborts.
 * Never rejects.
 */
export const writeResponse = async (response: Response, res: ServerResponse, signal?: AbortSignal): Promise<void> => {
  try {
    writeHead(response, res)
  } catch (error) {
    response.body?.cancel().catch(() => {})
    logFailure('the response has an invalid status or header', error)
    failResponse(res)
    return
  }
  if (!response.body || res.req?.method === 'HEAD' || res.destroyed) {
    response.body?.cancel().catch(() => {})
    if (!res.destroyed) res.end()
    return
  }
  let reader: ReadableStreamDefaultReader<Uint8Array>
  try {
    reader = response.body.getReader()
  } catch (error) {
    logFailure('the response body was already used', error)
    failResponse(res)
    return
  }
  const cancel = () => {
    reader.cancel().catch(() => {})
  }
  const onClose = () => {
    if (!res.writableFinished) cancel()
  }
  res.once('close', onClose)
  signal?.addEventListener('abort', cancel, { once: true })
  try {
    if (isEventStream(response)) res.flushHeaders()
    await pipeBody(reader, res)
  } catch (error) {
    if (!res.destroyed) {
      logFailure('the response body stream failed', error)
      failResponse(res)
    }
    cancel()
  } finally {
    res.off('close', onClose)
    signal?.removeEventListener('abort', cancel)
  }
}

/**
 * Serves one Node request with a fetch handler. Resolves once the response is written.
 *
 * @throws {BodyAlreadyConsumedError} (as a rejection, before anything is written) when a body parser already
 *   read the body; the caller decides how to report it.
 */
export const handleNodeRequest = async (
  handler: FetchHandler,
  req: IncomingMessage,
  res: ServerResponse,
  options: NodeBridgeOptions = {},
): Promise<void> => {
  let request: Request
  try {
    request = toRequest(req, res, options)
  } catch (error) {
    if (error instanceof BodyAlreadyConsumedError) throw error
    res.statusCode = 400
    res.end()
    return
  }
  let response: Response
  try {
    response = await handler.fetch(request)
  } catch (error) {
    logFailure('the fetch handler threw instead of returning a response', error)
    failResponse(res)
    return
  }
  await writeResponse(response, res, request.signal)
}
