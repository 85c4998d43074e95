/**
 * The Node response half of the bridge, and `handleNodeRequest`, which serves one Node request with a
 * fetch handler. The request half lives in `node-request.ts`. A gateway is asked for its `Reply`
 * (src/core/reply.ts) rather than a `Response`, so JSON text and events go straight to the socket.
 */

import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ChunkProducer } from '../core/event-stream'
import { replyFields, type EventsReply, type JsonReply, type Reply } from '../core/reply'
import { errorReply } from '../core/errors'
import type { ErrorReplier, FetchHandler, ReplyHandler } from '../core/types'
import { BodyAlreadyConsumedError, disconnectSignalOf, existingSignalOf, requestUrlOf, toRequest, type NodeBridgeOptions } from './node-request'

export { BodyAlreadyConsumedError, type NodeBridgeOptions } from './node-request'

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

const writeHead = (head: { status: number; statusText?: string; headers: Headers }, res: ServerResponse): void => {
  res.statusCode = head.status
  if (head.statusText) res.statusMessage = head.statusText
  for (const [name, value] of head.headers) {
    if (name === 'set-cookie') continue
    res.setHeader(name, value)
  }
  const cookies = head.headers.getSetCookie()
  if (cookies.length > 0) res.setHeader('set-cookie', cookies)
}

/** The head of a reply made by the gateway: its fields in the order a `Headers` would list them (by name). */
const writeOwnHead = (reply: JsonReply | EventsReply, res: ServerResponse): void => {
  const fields = replyFields(reply)
  if (!fields) return writeHead(reply, res)
  res.statusCode = reply.status
  for (const name of Object.keys(fields).sort()) res.setHeader(name, fields[name]!)
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

const uncork = (res: ServerResponse) => res.uncork()

/**
 * Copies an event stream to the socket, each chunk the moment it is read: holding one back would delay a token.
 * Chunks that are ready in the same turn of the event loop still leave in one write.
 */
const pipeEventStream = async (reader: ReadableStreamDefaultReader<Uint8Array>, res: ServerResponse): Promise<void> => {
  for (;;) {
    if (res.destroyed) return
    const result = await reader.read()
    if (res.destroyed) return
    if (result.done) {
      res.end()
      return
    }
    if (!res.writableCorked) {
      res.cork()
      process.nextTick(uncork, res)
    }
    if (!res.write(result.value)) await waitForDrainOrClose(res)
  }
}

/**
 * Lets a gateway event stream write straight to the socket: the headers go with the first events, and a full
 * socket makes the producer wait for 'drain'. Everything produced from the data at hand (the start-up events;
 * all the events of one upstream chunk) is joined and written once the event loop is about to wait for I/O
 * again: no event is held back for the next one, and a stream of many small events costs one `res.write` (with
 * its chunk framing and its syscall) per batch rather than per event.
 */
const writeEventStream = (produce: ChunkProducer, res: ServerResponse): Promise<void> =>
  new Promise((resolve) => {
    let pending = ''
    let isFlushScheduled = false
    const flush = () => {
      isFlushScheduled = false
      const text = pending
      pending = ''
      if (text !== '' && !res.destroyed) res.write(text)
    }
    const onClose = () => {
      pending = ''
      if (!res.writableFinished) stop()
      resolve()
    }
    res.once('close', onClose)
    // Started even for a client that is already gone: stopping the producer is what releases its upstream.
    const stop = produce({
      write: (chunk) => {
        if (res.destroyed) return false
        pending += chunk
        // A batch never outgrows the socket's own buffer: past that it goes now, and the socket's backpressure applies.
        if (pending.length >= res.writableHighWaterMark) flush()
        else if (!isFlushScheduled) {
          isFlushScheduled = true
          setImmediate(flush)
        }
        return !res.writableNeedDrain
      },
      ready: () => (res.destroyed || !res.writableNeedDrain ? Promise.resolve() : waitForDrainOrClose(res)),
      close: () => {
        const text = pending
        pending = ''
        if (!res.destroyed) res.end(text)
      },
      fail: () => {
        // What was produced goes out before the cut (the status with it, when nothing went yet): the client sees the
        // answer broke off after it, as it would had the batch been flushed a moment earlier.
        const text = pending
        pending = ''
        if (text === '' || res.destroyed) return failResponse(res)
        res.write(text, () => res.destroy())
      },
    })
    if (res.destroyed) onClose()
  })

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
    if (isEventStream(response)) {
      // Flushed so the client sees the stream start even if nothing comes for a while; corked so that, when
      // the first events are ready now, they leave in the same packet as the headers.
      res.cork()
      process.nextTick(uncork, res)
      res.flushHeaders()
      await pipeEventStream(reader, res)
    } else await pipeBody(reader, res)
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

// Started and stopped at once for a HEAD request: stopping the producer is what releases its upstream.
const IDLE_SINK = { write: () => false, ready: () => Promise.resolve(), close: () => {}, fail: () => {} }

/** Writes a gateway's JSON or event reply, with the same guarantees as `writeResponse`. Never rejects. */
const writeOwnReply = async (reply: JsonReply | EventsReply, res: ServerResponse): Promise<void> => {
  const isHead = res.req?.method === 'HEAD'
  try {
    writeOwnHead(reply, res)
  } catch (error) {
    if (reply.kind === 'events') reply.produce(IDLE_SINK)()
    logFailure('the response has an invalid status or header', error)
    failResponse(res)
    return
  }
  if (reply.kind === 'json') {
    // Node adds the Content-Length of a body written in one piece; a HEAD answer sends none.
    // As bytes: a string body would first be joined to the header string (a second copy of the answer).
    if (!res.destroyed) res.end(isHead ? undefined : Buffer.from(reply.text))
    return
  }
  if (isHead) {
    reply.produce(IDLE_SINK)()
    if (!res.destroyed) res.end()
    return
  }
  await writeEventStream(reply.produce, res)
}

/** Writes a gateway `Reply` to a Node `ServerResponse`. Never rejects. */
export const writeReply = (reply: Reply, res: ServerResponse, signal?: AbortSignal): Promise<void> =>
  reply.kind === 'response' ? writeResponse(reply.response, res, signal) : writeOwnReply(reply, res)

const isReplyHandler = (handler: FetchHandler): handler is ReplyHandler => typeof (handler as Partial<ReplyHandler>).reply === 'function'

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
  let reply: Reply
  try {
    reply = isReplyHandler(handler)
      ? await handler.reply(request, { signal: disconnectSignalOf(request) })
      : { kind: 'response', response: await handler.fetch(request) }
  } catch (error) {
    logFailure('the fetch handler threw instead of returning a response', error)
    failResponse(res)
    return
  }
  // The bridge watches the socket itself; the request's signal only matters if the handler made one.
  await writeReply(reply, res, existingSignalOf(request))
}

const isErrorReplier = (handler: FetchHandler): handler is FetchHandler & ErrorReplier =>
  typeof (handler as Partial<ErrorReplier>).replyError === 'function'

/**
 * Answers a request whose body a host middleware already read: a JSON error that says so and how to fix the set-up,
 * in the error body of the route asked for (a gateway knows it; any other handler gets the standard body), rather than
 * the host's own error page. Never rejects.
 */
export const writeBodyAlreadyConsumed = async (
  handler: FetchHandler,
  req: IncomingMessage,
  res: ServerResponse,
  options: NodeBridgeOptions,
  error: BodyAlreadyConsumedError,
): Promise<void> => {
  if (res.headersSent) {
    if (!res.writableEnded) res.end()
    return
  }
  let reply: Reply
  try {
    reply = isErrorReplier(handler) ? handler.replyError(new Request(requestUrlOf(req, options), { method: req.method ?? 'POST' }), error) : errorReply(error, 'standard')
  } catch {
    reply = errorReply(error, 'standard')
  }
  await writeReply(reply, res)
}
