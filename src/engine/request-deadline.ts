/**
 * The deadline of one request (docs/decisions.md, "Request deadline"): every upstream attempt, server-tool turn
 * and tool run, and fusion run of the request shares it, and each wait takes only what is left of it. When it
 * passes the request ends with a 524 that names it, whatever per-attempt timeout was still running.
 */

import type { ClientSignal } from '../core/client-signal'
import { Deadline } from '../core/deadline'
import { UpstreamTimeoutError } from '../core/errors'
import type { UpstreamTimeouts } from '../transport/contract'

/** The default `requestTimeoutMs`: ten minutes, the longest answers a reasoning model streams (and OpenAI's own client default). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 600_000

/** `600 s`, `0.3 s`: the deadline as an operator configured it, in the unit messages use. */
const seconds = (ms: number) => `${ms / 1000} s`

/** The request's deadline passed; no upstream's failure, so the message names no provider. */
export class RequestDeadlineError extends UpstreamTimeoutError {
  constructor(ms: number, attempts: number) {
    const when = attempts === 0 ? 'before any upstream attempt' : `after ${attempts} upstream attempt${attempts === 1 ? '' : 's'}`
    super(`The request's deadline of ${seconds(ms)} passed ${when}`, { metadata: { error_type: 'timeout' } })
  }
}

/** What an exchange is cancelled with when the request's deadline passes while its body is being read. */
export class RequestDeadlineSignal extends Error {
  constructor(readonly deadline: RequestDeadline) {
    super('request deadline passed')
    this.name = 'RequestDeadlineSignal'
  }
}

export class RequestDeadline extends Deadline {
  #attempts = 0

  /** Counts an upstream attempt sent for the request (any turn or run of it), for the error's message. */
  countAttempt(): void {
    this.#attempts++
  }

  /** The error the request ends with; build it once the deadline passed. */
  error(): RequestDeadlineError {
    return new RequestDeadlineError(this.ms, this.#attempts)
  }

  /**
   * An attempt's timeouts, each at most what is left: `isCapped(phase)` tells whether a timeout of that phase is the
   * deadline's rather than the operator's per-attempt one.
   */
  bound(timeouts: UpstreamTimeouts): { timeouts: UpstreamTimeouts; isCapped(phase: 'connect' | 'first_byte'): boolean } {
    const left = this.remainingMs()
    if (left >= timeouts.connectMs && left >= timeouts.firstByteMs && left >= timeouts.totalMs) return { timeouts, isCapped: () => false }
    const bounded = {
      connectMs: Math.min(timeouts.connectMs, left),
      firstByteMs: Math.min(timeouts.firstByteMs, left),
      idleMs: timeouts.idleMs,
      totalMs: Math.min(timeouts.totalMs, left),
    }
    return { timeouts: bounded, isCapped: (phase) => (phase === 'connect' ? left < timeouts.connectMs : left < timeouts.firstByteMs) }
  }
}

export const createRequestDeadline = (ms: number): RequestDeadline => new RequestDeadline(ms)

/**
 * An `AbortSignal`, for work that speaks only that (plugins, server tools, their nested calls): it fires with the
 * client's, and when the request's deadline passes (with a `RequestDeadlineSignal`); `release` unhooks both.
 */
export const requestAbortSignal = (client: ClientSignal, deadline: RequestDeadline) => {
  const controller = new AbortController()
  const abort = () => controller.abort(client.reason)
  if (client.aborted) abort()
  else client.addEventListener('abort', abort, { once: true })
  const cancelDeadline = deadline.whenPassed(() => controller.abort(new RequestDeadlineSignal(deadline)))
  return {
    signal: controller.signal,
    release: () => {
      client.removeEventListener('abort', abort)
      cancelDeadline()
    },
  }
}
