/**
 * The Node upstream transport: undici's dispatcher API over our own pooled keep-alive `Agent` (never the
 * global dispatcher, so the host application's settings are left alone). `undici.request` would wrap every
 * exchange in a Node Readable, an AsyncResource and an abort-signal listener; dispatching directly, the body
 * comes as a small pull queue with backpressure and an exchange is aborted through undici's own controller.
 */

import { createRequire } from 'node:module'
import type { Agent as UndiciAgent, Dispatcher, errors as UndiciErrors } from 'undici'
import type { LookupAddress, LookupOptions } from 'node:dns'
import type { ClientSignal } from '../core/client-signal'
import { assertAllowedAddresses, DestinationRefusedError, type UpstreamGuard } from '../core/upstream-guard'
import { IdleWatch } from './idle-watch'
import {
  UpstreamTimeoutSignal,
  UpstreamTooLargeSignal,
  isDeclaredOver,
  type UpstreamResponse,
  type UpstreamTimeouts,
  type UpstreamTransport,
} from './contract'
import { systemResolver } from './system-resolver'

/**
 * undici's package index loads every API it has (fetch, WebSocket, mocks, caches, interceptors): about 5 MB of
 * memory per process that a gateway never uses (measured with `npm run bench`). The transport needs the Agent and
 * the error classes only, so it loads those two modules, and the index if a later undici moves them.
 */
const loadUndici = (): { Agent: typeof UndiciAgent; errors: typeof UndiciErrors } => {
  const require = createRequire(import.meta.url)
  try {
    return { Agent: require('undici/lib/dispatcher/agent.js'), errors: require('undici/lib/core/errors.js') }
  } catch {
    const undici = require('undici') as typeof import('undici')
    return { Agent: undici.Agent, errors: undici.errors }
  }
}

const { Agent, errors } = loadUndici()

export interface UndiciTransportOptions {
  /** Connections kept per upstream origin (default 256). */
  connectionsPerOrigin?: number
  /** How long an idle connection stays open (default 60 s). */
  keepAliveTimeoutMs?: number
}

// A consumer that falls this far behind pauses the socket until it catches up.
const BODY_HIGH_WATER_MARK = 64 * 1024

const EMPTY = Buffer.alloc(0)

const toHeaders = (raw: Record<string, string | string[] | undefined>): Headers => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue
    if (Array.isArray(value)) for (const item of value) headers.append(name, item)
    else headers.set(name, value)
  }
  return headers
}

const toTransportError = (error: unknown): unknown => {
  if (error instanceof errors.ConnectTimeoutError) return new UpstreamTimeoutSignal('connect')
  return error
}

const done: IteratorReturnResult<undefined> = { done: true, value: undefined }

/**
 * One exchange: the dispatch handler undici calls, and the `UpstreamResponse` (with its body iterator) that
 * core reads. `opened` settles when the response headers arrive or the exchange fails before them.
 */
class Exchange implements Dispatcher.DispatchHandler, UpstreamResponse, AsyncIterator<Uint8Array> {
  status = 0
  readonly opened: Promise<UpstreamResponse>
  #resolveOpened!: (response: UpstreamResponse) => void
  #rejectOpened!: (error: unknown) => void
  #rawHeaders: Record<string, string | string[] | undefined> = {}
  #headers: Headers | undefined
  #controller: Dispatcher.DispatchController | undefined
  readonly #signal: ClientSignal
  #isStarted = false
  #isEnded = false
  #error: unknown = undefined
  #queue: Buffer[] = []
  #queuedBytes = 0
  #isCollecting = false
  #waiting: { resolve: (result: IteratorResult<Uint8Array>) => void; reject: (error: unknown) => void } | undefined

  readonly #firstByteMs: number
  #firstByteTimer: ReturnType<typeof setTimeout> | undefined
  readonly #idle: IdleWatch

  constructor(signal: ClientSignal, timeouts: UpstreamTimeouts) {
    this.#signal = signal
    this.#firstByteMs = timeouts.firstByteMs
    this.#idle = new IdleWatch(timeouts.idleMs, () => this.#abort(new UpstreamTimeoutSignal('idle')))
    this.opened = new Promise((resolve, reject) => {
      this.#resolveOpened = resolve
      this.#rejectOpened = reject
    })
    signal.addEventListener('abort', this.#onAbort, { once: true })
  }

  readonly #onAbort = (): void => this.#abort(this.#signal.reason)

  #abort(reason: unknown): void {
    if (this.#isEnded) return
    const error = reason instanceof Error ? reason : new Error('upstream exchange aborted')
    if (this.#controller) this.#controller.abort(error)
    else this.#fail(error)
  }

  #fail(error: unknown): void {
    if (this.#isEnded) return
    this.#isEnded = true
    clearTimeout(this.#firstByteTimer)
    this.#idle.stop()
    this.#error = error
    this.#signal.removeEventListener('abort', this.#onAbort)
    if (!this.#isStarted) this.#rejectOpened(error)
    const waiting = this.#waiting
    this.#waiting = undefined
    waiting?.reject(error)
  }

  // --- undici's side -------------------------------------------------------------------------------------

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    // Given up on while it waited for a connection (a deadline, the client): it must not go out now.
    if (this.#isEnded) return controller.abort(this.#error instanceof Error ? this.#error : new Error('upstream exchange abandoned'))
    // From here (connected, request on its way) the first byte is due. A plain timer, cleared the moment the
    // headers arrive: undici's own headers and body timeouts run on its coarse shared clock (up to a second
    // late) and keep each request's timer objects alive until its next tick, long enough for the young
    // generation GC to promote them (the memory bound in bench/README.md).
    clearTimeout(this.#firstByteTimer)
    this.#firstByteTimer = setTimeout(() => this.#abort(new UpstreamTimeoutSignal('first_byte')), this.#firstByteMs)
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    // 1xx informational answers come before the real one.
    if (statusCode < 200) return
    clearTimeout(this.#firstByteTimer)
    this.status = statusCode
    this.#rawHeaders = headers
    this.#isStarted = true
    this.#resolveOpened(this)
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const waiting = this.#waiting
    if (waiting && this.#queue.length === 0) {
      this.#waiting = undefined
      this.#idle.arrived()
      waiting.resolve({ done: false, value: chunk })
      return
    }
    this.#queue.push(chunk)
    this.#queuedBytes += chunk.byteLength
    if (!this.#isCollecting && this.#queuedBytes >= BODY_HIGH_WATER_MARK) controller.pause()
  }

  onResponseEnd(): void {
    if (this.#isEnded) return
    this.#isEnded = true
    this.#idle.stop()
    this.#signal.removeEventListener('abort', this.#onAbort)
    const waiting = this.#waiting
    this.#waiting = undefined
    waiting?.resolve(done)
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#fail(toTransportError(error))
  }

  // --- core's side ---------------------------------------------------------------------------------------

  get headers(): Headers {
    // Built on first use: a successful answer is read without looking at its headers.
    return (this.#headers ??= toHeaders(this.#rawHeaders))
  }

  get body(): AsyncIterable<Uint8Array> {
    return this
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return this
  }

  next(): Promise<IteratorResult<Uint8Array>> {
    const chunk = this.#queue.shift()
    if (chunk) {
      this.#queuedBytes -= chunk.byteLength
      if (this.#controller?.paused && this.#queuedBytes < BODY_HIGH_WATER_MARK / 2) this.#controller.resume()
      return Promise.resolve({ done: false, value: chunk })
    }
    if (this.#error !== undefined) return Promise.reject(this.#error)
    if (this.#isEnded) return Promise.resolve(done)
    this.#idle.waiting()
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject }
    })
  }

  /** A consumer that stops early (`break`, `return`) gives up the rest: the exchange is aborted. */
  async return(): Promise<IteratorResult<Uint8Array>> {
    this.#abort(new Error('upstream body abandoned'))
    return done
  }

  async text(maxBytes = Number.POSITIVE_INFINITY): Promise<string> {
    const declared = this.#rawHeaders['content-length']
    if (typeof declared === 'string' && isDeclaredOver(declared, maxBytes)) throw this.#tooLarge(maxBytes)
    this.#isCollecting = true
    this.#controller?.resume()
    const chunks: Buffer[] = []
    let size = 0
    for (let result = await this.next(); !result.done; result = await this.next()) {
      size += result.value.byteLength
      if (size > maxBytes) throw this.#tooLarge(maxBytes)
      chunks.push(result.value as Buffer)
    }
    if (chunks.length === 1) return chunks[0]!.toString('utf8')
    return (chunks.length === 0 ? EMPTY : Buffer.concat(chunks)).toString('utf8')
  }

  /** Drops the connection at once: the rest of an oversized answer is never read. */
  #tooLarge(maxBytes: number): UpstreamTooLargeSignal {
    const error = new UpstreamTooLargeSignal(maxBytes)
    this.#queue = []
    this.#queuedBytes = 0
    this.#abort(error)
    return error
  }

  async cancel(reason?: unknown): Promise<void> {
    this.#queue = []
    this.#queuedBytes = 0
    this.#abort(reason ?? new Error('upstream exchange cancelled'))
  }
}

type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void

/**
 * A `lookup` for sockets to caller-chosen hosts: resolves once, refuses unless every address is allowed, and hands
 * the socket exactly the addresses it checked, so a second answer (DNS rebinding) is never asked for. Node skips
 * `lookup` for IP-literal hosts, which the guard refuses before any request is made.
 */
const guardedLookup = (guard: UpstreamGuard) => {
  const resolve = guard.resolve ?? systemResolver
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    const checked = async () => {
      const addresses = await resolve(hostname)
      assertAllowedAddresses(guard, addresses)
      const usable = options.family === 4 || options.family === 6 ? addresses.filter((entry) => entry.family === options.family) : addresses
      if (usable.length === 0) throw new DestinationRefusedError('the host must resolve')
      return usable
    }
    checked().then(
      (usable) => (options.all ? callback(null, usable) : callback(null, usable[0]!.address, usable[0]!.family)),
      (error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), ''),
    )
  }
}

/**
 * Creates a pooled upstream transport for Node.
 * @example createGateway({ transport: undiciTransport() })
 */
export interface UndiciTransport extends UpstreamTransport {
  /** Connection-pool figures per upstream origin (connected, free, pending, queued, running, size), for metrics. */
  stats(): Record<string, { connected: number; free?: number; pending: number; running: number; size: number }>
  close(): Promise<void>
}

export const undiciTransport = (options: UndiciTransportOptions = {}): UndiciTransport => {
  // One agent per connect timeout (the timeout is an agent setting in undici), and separate agents for each guard
  // policy, so a connection opened for a caller's destination is never lent to a request with another policy.
  const pools = new Map<UpstreamGuard | null, Map<number, UndiciAgent>>()
  const agentFor = (connectMs: number, guard: UpstreamGuard | undefined) => {
    let agents = pools.get(guard ?? null)
    if (!agents) pools.set(guard ?? null, (agents = new Map()))
    let agent = agents.get(connectMs)
    if (!agent) {
      agent = new Agent({
        connections: options.connectionsPerOrigin ?? 256,
        keepAliveTimeout: options.keepAliveTimeoutMs ?? 60_000,
        keepAliveMaxTimeout: 600_000,
        connect: { timeout: connectMs, ...(guard ? { lookup: guardedLookup(guard) } : {}) },
        pipelining: 1,
      })
      agents.set(connectMs, agent)
    }
    return agent
  }
  const allAgents = () => [...pools.values()].flatMap((agents) => [...agents.values()])

  const send: UpstreamTransport = (request, { signal, timeouts, guard }) => {
    if (signal.aborted) return Promise.reject(signal.reason)
    const url = new URL(request.url)
    const exchange = new Exchange(signal, timeouts)
    agentFor(timeouts.connectMs, guard).dispatch(
      {
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: request.method,
        headers: request.headers,
        body: request.method === 'GET' ? null : request.body,
        // Every bound is ours: the first byte and idle gaps above, the whole exchange in core.
        headersTimeout: 0,
        bodyTimeout: 0,
      },
      exchange,
    )
    return exchange.opened
  }
  return Object.assign(send, {
    hasConnectGuard: true,
    stats: (): ReturnType<UndiciTransport['stats']> => Object.assign({}, ...allAgents().map((agent) => agent.stats)),
    close: async () => {
      await Promise.all(allAgents().map((agent) => agent.close()))
      pools.clear()
    },
  })
}
