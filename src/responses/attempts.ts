/**
 * One upstream attempt: resolve the credential (a BYOK key is decrypted in memory, for this call
 * only), build the provider request, send it, and turn every way it can fail into an
 * `UpstreamFailure` so the caller can move on to the next endpoint.
 */

import { GatewayError, isGatewayError } from '../core/errors'
import type { Logger } from '../core/logger'
import type { SecretBox } from '../core/secrets'
import type { UpstreamCall, UpstreamRequest, UpstreamTarget } from '../providers/contract'
import { UpstreamFailure, isUpstreamFailure, redactSecrets } from '../providers/shared/errors'
import { revealByokKey } from '../services/byok'
import type { Attempt } from './routing'
import { UpstreamTimeoutSignal, readCapped, type UpstreamResponse, type UpstreamTimeouts, type UpstreamTransport } from './transport'

export interface AttemptEnvironment {
  transport: UpstreamTransport
  timeouts: UpstreamTimeouts
  secrets: SecretBox
  logger: Logger
  requestId: string
  /** Fires when the client went away. */
  signal: AbortSignal
}

/** The client went away: stop everything, answer nothing. */
export class ClientClosedError extends Error {
  constructor() {
    super('client closed the request')
    this.name = 'ClientClosedError'
  }
}

export interface OpenedAttempt {
  response: UpstreamResponse
  call: UpstreamCall
  request: UpstreamRequest
  target: UpstreamTarget
  /** Aborts this upstream exchange (client gone, or the caller gave up on it). */
  abort(): void
  /**
   * Ends an exchange whose body was read to the end: stops the timer and the client-abort listener.
   * Cheaper than `abort()`, which builds a DOMException with a stack trace for nothing to cancel (issue #5).
   */
  release(): void
  /** Milliseconds spent waiting for the upstream's response headers. */
  upstreamMs: number
}

const targetFor = async (attempt: Attempt, secrets: SecretBox): Promise<UpstreamTarget> =>
  attempt.credential ? attempt.provider.withKey(await revealByokKey(secrets, attempt.credential)) : attempt.provider.shared!

/** Classifies a thrown value from transport or adapter. */
export const toAttemptFailure = (error: unknown, attempt: Attempt, secrets: readonly string[]): GatewayError => {
  if (isUpstreamFailure(error)) {
    // Adapters redact key-like text only; an in-band error can still quote the caller's raw key verbatim.
    const message = redactSecrets(error.message, secrets)
    if (message === error.message) return error
    return new UpstreamFailure(error.errorType, message, {
      upstreamStatus: error.upstreamStatus,
      ...(error.providerCode ? { providerCode: error.providerCode } : {}),
      ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds }),
    })
  }
  if (error instanceof UpstreamTimeoutSignal) {
    return new UpstreamFailure('timeout', `${attempt.provider.descriptor.displayName} did not answer in time (${error.phase.replace('_', ' ')})`, {
      upstreamStatus: 0,
      cause: error,
    })
  }
  if (isGatewayError(error)) return error
  const message = error instanceof Error ? error.message : String(error)
  return new UpstreamFailure('provider_unavailable', `Could not reach ${attempt.provider.descriptor.displayName}`, {
    upstreamStatus: 0,
    cause: new Error(redactSecrets(message, secrets)),
  })
}

/** Sends one attempt and returns the open upstream response, or throws its failure. */
export const openAttempt = async (attempt: Attempt, call: UpstreamCall, environment: AttemptEnvironment): Promise<OpenedAttempt> => {
  if (environment.signal.aborted) throw new ClientClosedError()
  const target = await targetFor(attempt, environment.secrets)
  const request = attempt.provider.adapter.buildRequest(call, target)
  const controller = new AbortController()
  const total = setTimeout(() => controller.abort(new UpstreamTimeoutSignal('total')), environment.timeouts.totalMs)
  const onClientAbort = () => controller.abort(new ClientClosedError())
  environment.signal.addEventListener('abort', onClientAbort, { once: true })
  const release = () => {
    clearTimeout(total)
    environment.signal.removeEventListener('abort', onClientAbort)
  }
  const abort = () => {
    release()
    controller.abort()
  }
  const started = performance.now()
  let response: UpstreamResponse
  try {
    response = await environment.transport(request, { signal: controller.signal, timeouts: environment.timeouts })
  } catch (error) {
    abort()
    if (environment.signal.aborted) throw new ClientClosedError()
    throw toAttemptFailure(controller.signal.reason instanceof UpstreamTimeoutSignal ? controller.signal.reason : error, attempt, [target.apiKey])
  }
  const upstreamMs = performance.now() - started
  if (response.status >= 400) {
    const text = await readCapped(response)
    abort()
    const retryAfter = Number(response.headers.get('retry-after') ?? Number.NaN)
    const failure = attempt.provider.adapter.toError(response.status, redactSecrets(text, [target.apiKey]))
    // The provider's Retry-After header is more precise than any delay read from its message.
    if (isUpstreamFailure(failure) && Number.isFinite(retryAfter) && retryAfter > 0) {
      throw new UpstreamFailure(failure.errorType, failure.message, {
        upstreamStatus: failure.upstreamStatus,
        ...(failure.providerCode ? { providerCode: failure.providerCode } : {}),
        retryAfterSeconds: retryAfter,
      })
    }
    throw failure
  }
  return {
    response,
    call,
    request,
    target,
    upstreamMs,
    abort: () => {
      abort()
      void response.cancel()
    },
    release,
  }
}

const readText = async (body: AsyncIterable<Uint8Array>): Promise<string> => {
  const decoder = new TextDecoder()
  let text = ''
  for await (const chunk of body) text += decoder.decode(chunk, { stream: true })
  return text + decoder.decode()
}

/** Reads a whole (non-streaming) JSON body. */
export const readJsonBody = async (response: UpstreamResponse): Promise<unknown> => {
  const text = response.text ? await response.text() : await readText(response.body)
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new UpstreamFailure('provider_unavailable', 'The provider sent a malformed response', { upstreamStatus: 200, cause: error })
  }
}
