/**
 * How core reaches upstreams: a fetch-shaped seam, injected at the edge. On Node the runner uses
 * undici with a pooled keep-alive dispatcher (src/transport/undici.ts); elsewhere the runtime's fetch.
 */

import type { ClientSignal } from '../core/client-signal'
import type { UpstreamRequest } from '../providers/contract'

export interface UpstreamTimeouts {
  /** Time to open the connection. */
  connectMs: number
  /** Time until the response headers arrive (for a non-streaming upstream: the whole answer). */
  firstByteMs: number
  /** Upper bound for the whole exchange. Core enforces it through `cancel`; a transport may also bound idle gaps in the body by it. */
  totalMs: number
}

export interface UpstreamResponse {
  status: number
  headers: Headers
  /** The body, read incrementally. Must be consumed or cancelled. */
  body: AsyncIterable<Uint8Array>
  /**
   * Reads the whole body as UTF-8 text, where the transport does that faster than iterating `body`
   * (collecting the chunks once and decoding them once).
   */
  text?(): Promise<string>
  /** Ends the exchange without reading the rest of the body; reading on fails with `reason`. */
  cancel(reason?: unknown): Promise<void>
}

/**
 * Sends one request and resolves once the response headers are in. Fails with `UpstreamTimeoutSignal` when the
 * connection or the first byte is late, and ends the exchange (before or after the headers) when `signal` aborts.
 */
export type UpstreamTransport = (request: UpstreamRequest, options: { signal: ClientSignal; timeouts: UpstreamTimeouts }) => Promise<UpstreamResponse>

/** Thrown by transports when the connection or the first byte does not come in time. */
export class UpstreamTimeoutSignal extends Error {
  constructor(readonly phase: 'connect' | 'first_byte' | 'total') {
    super(`upstream ${phase} timeout`)
    this.name = 'UpstreamTimeoutSignal'
  }
}

const emptyBody = async function* (): AsyncIterable<Uint8Array> {}

/** A transport over a WHATWG `fetch` (Bun, Deno, browsers' workers, or Node's global fetch). */
export const fetchTransport =
  (fetchImplementation: typeof fetch = globalThis.fetch): UpstreamTransport =>
  async (request, { signal, timeouts }) => {
    // One controller per exchange: the client's signal, the first-byte timer and `cancel` all end it, and an
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
        body: request.body,
        signal: controller.signal,
      })
    } catch (error) {
      signal.removeEventListener('abort', onClientAbort)
      throw controller.signal.reason instanceof UpstreamTimeoutSignal ? controller.signal.reason : error
    } finally {
      clearTimeout(firstByte)
    }
    const body = response.body
    return {
      status: response.status,
      headers: response.headers,
      body: body ? (body as unknown as AsyncIterable<Uint8Array>) : emptyBody(),
      text: () => response.text(),
      cancel: async (reason?: unknown) => {
        controller.abort(reason ?? new Error('upstream exchange cancelled'))
        signal.removeEventListener('abort', onClientAbort)
      },
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
