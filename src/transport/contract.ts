/**
 * How core reaches upstreams: a fetch-shaped seam, injected at the edge. On Node the runner uses
 * undici with a pooled keep-alive dispatcher (src/transport/undici.ts); elsewhere the runtime's fetch.
 */

import type { ClientSignal } from '../core/client-signal'
import type { UpstreamGuard } from '../core/upstream-guard'
import type { UpstreamRequest } from '../providers/contract'
import { IdleWatch } from './idle-watch'

export interface UpstreamTimeouts {
  /** Time to open the connection. */
  connectMs: number
  /** Time until the response headers arrive (for a non-streaming upstream: the whole answer). */
  firstByteMs: number
  /** Longest silence while the body is being read: a reader waiting this long for the next chunk ends the exchange. */
  idleMs: number
  /** Upper bound for the whole exchange. Core enforces it through `cancel`. */
  totalMs: number
}

/** How much of an upstream answer the gateway holds at most. */
export interface UpstreamLimits {
  /** A whole (non-streaming) answer. */
  maxResponseBytes: number
  /** One event of a streamed answer. */
  maxEventBytes: number
}

export interface UpstreamResponse {
  status: number
  headers: Headers
  /** The body, read incrementally. Must be consumed or cancelled. */
  body: AsyncIterable<Uint8Array>
  /**
   * Reads the whole body as UTF-8 text, where the transport does that faster than iterating `body`
   * (collecting the chunks once and decoding them once). Past `maxBytes`, declared or received, it fails
   * with `UpstreamTooLargeSignal` and holds no more than that.
   */
  text?(maxBytes?: number): Promise<string>
  /** Ends the exchange without reading the rest of the body; reading on fails with `reason`. */
  cancel(reason?: unknown): Promise<void>
}

export interface UpstreamExchangeOptions {
  signal: ClientSignal
  timeouts: UpstreamTimeouts
  /**
   * Present when the destination came from a caller (`UpstreamRequest.callerDestination`): connect only to
   * addresses it allows. Core has already checked the URL itself.
   */
  guard?: UpstreamGuard
}

/**
 * Sends one request and resolves once the response headers are in. Fails with `UpstreamTimeoutSignal` when the
 * connection or the first byte is late, and ends the exchange (before or after the headers) when `signal` aborts.
 * Never follows redirects: a 3xx is handed back as it is.
 */
export type UpstreamTransport = ((request: UpstreamRequest, options: UpstreamExchangeOptions) => Promise<UpstreamResponse>) & {
  /**
   * True when the transport checks `options.guard` as it connects, resolving the name once and connecting only
   * to the addresses it checked. Otherwise core resolves and checks just before the call, which leaves the
   * transport's own later lookup unchecked.
   */
  readonly hasConnectGuard?: boolean
}

/** Thrown by transports when the connection, the first byte or the next chunk does not come in time. */
export class UpstreamTimeoutSignal extends Error {
  constructor(readonly phase: 'connect' | 'first_byte' | 'idle' | 'total') {
    super(`upstream ${phase} timeout`)
    this.name = 'UpstreamTimeoutSignal'
  }
}

/** Thrown when an upstream answer is larger than the gateway accepts. */
export class UpstreamTooLargeSignal extends Error {
  constructor(readonly limit: number) {
    super(`upstream answer over ${limit} bytes`)
    this.name = 'UpstreamTooLargeSignal'
  }
}

/** Whether a `content-length` value already announces more than `maxBytes`. */
export const isDeclaredOver = (contentLength: string | null | undefined, maxBytes: number): boolean =>
  contentLength != null && Number(contentLength) > maxBytes

/** Collects a body as UTF-8 text, failing with `UpstreamTooLargeSignal` as soon as it passes `maxBytes`. */
export const readBodyText = async (body: AsyncIterable<Uint8Array>, maxBytes = Number.POSITIVE_INFINITY): Promise<string> => {
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of body) {
    size += chunk.byteLength
    // Leaving the loop ends the body; the caller cancels the exchange.
    if (size > maxBytes) throw new UpstreamTooLargeSignal(maxBytes)
    chunks.push(chunk)
  }
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return new TextDecoder().decode(bytes)
}

const done: IteratorReturnResult<undefined> = { done: true, value: undefined }

/** A fetch body as an iterator whose waits for the next chunk are bounded by `idle`. */
const watchedBody = (stream: ReadableStream<Uint8Array> | null, idle: IdleWatch): AsyncIterableIterator<Uint8Array> => {
  const reader = stream?.getReader()
  let isFinished = reader === undefined
  const finish = () => {
    isFinished = true
    idle.stop()
  }
  return {
    [Symbol.asyncIterator]() {
      return this
    },
    async next() {
      if (isFinished) return done
      idle.waiting()
      try {
        const result = await reader!.read()
        idle.arrived()
        if (result.done) finish()
        return result.done ? done : { done: false, value: result.value }
      } catch (error) {
        finish()
        throw error
      }
    },
    async return() {
      if (!isFinished) {
        finish()
        await reader!.cancel().catch(() => {})
      }
      return done
    },
  }
}

/**
 * A transport over a WHATWG `fetch` (Bun, Deno, browsers' workers, or Node's global fetch). It cannot choose the
 * address fetch connects to, so a guarded destination is checked by core just before the call.
 */
export const fetchTransport =
  (fetchImplementation: typeof fetch = globalThis.fetch): UpstreamTransport =>
  async (request, { signal, timeouts }) => {
    // One controller per exchange: the client's signal, the deadlines and `cancel` all end it, and an
    // abort reason reaches whoever reads the body.
    const controller = new AbortController()
    const onClientAbort = () => controller.abort(signal.reason)
    if (signal.aborted) onClientAbort()
    else signal.addEventListener('abort', onClientAbort, { once: true })
    const firstByte = setTimeout(() => controller.abort(new UpstreamTimeoutSignal('first_byte')), timeouts.firstByteMs)
    let response: Response
    try {
      response = await fetchImplementation(request.url, {
        method: request.method,
        headers: request.headers,
        body: request.method === 'GET' ? null : request.body,
        signal: controller.signal,
        // A redirect would carry the provider key to wherever the upstream points; core refuses the 3xx instead.
        redirect: 'manual',
      })
    } catch (error) {
      signal.removeEventListener('abort', onClientAbort)
      throw controller.signal.reason instanceof UpstreamTimeoutSignal ? controller.signal.reason : error
    } finally {
      clearTimeout(firstByte)
    }
    const idle = new IdleWatch(timeouts.idleMs, () => controller.abort(new UpstreamTimeoutSignal('idle')))
    const body = watchedBody(response.body, idle)
    const cancel = async (reason?: unknown) => {
      idle.stop()
      controller.abort(reason ?? new Error('upstream exchange cancelled'))
      signal.removeEventListener('abort', onClientAbort)
    }
    return {
      // Browsers hide a manual redirect as an opaque response with status 0; it is still a redirect.
      status: response.type === 'opaqueredirect' ? 0 : response.status,
      headers: response.headers,
      body,
      text: async (maxBytes?: number) => {
        if (maxBytes !== undefined && isDeclaredOver(response.headers.get('content-length'), maxBytes)) {
          throw new UpstreamTooLargeSignal(maxBytes)
        }
        return readBodyText(body, maxBytes)
      },
      cancel,
    }
  }

/** Reads at most `limit` bytes of a body as text (for error bodies), then releases the rest. */
export const readCapped = async (response: UpstreamResponse, limit = 64 * 1024): Promise<string> => {
  const decoder = new TextDecoder()
  let text = ''
  let size = 0
  try {
    for await (const chunk of response.body) {
      size += chunk.byteLength
      text += decoder.decode(chunk, { stream: true })
      if (size >= limit) break
    }
  } catch {
    // An error body that breaks off is still an error; what arrived is enough.
  }
  await response.cancel()
  return text + decoder.decode()
}
