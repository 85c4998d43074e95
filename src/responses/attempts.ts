/**
 * One upstream attempt: resolve the credential (a BYOK key is decrypted in memory, for this call
 * only), build the provider request, send it, and turn every way it can fail into an
 * `UpstreamFailure` so the caller can move on to the next endpoint.
 */

import type { ClientSignal } from '../core/client-signal'
import { GatewayError, UnprocessableError, isGatewayError } from '../core/errors'
import type { Logger } from '../core/logger'
import { SecretUnreadableError, type SecretBox } from '../core/secrets'
import type { UpstreamCall, UpstreamRequest, UpstreamTarget } from '../providers/contract'
import { UpstreamFailure, isUpstreamFailure, redactSecrets } from '../providers/shared/errors'
import type { ByokRecord } from '../repositories/byok-credentials'
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
  signal: ClientSignal
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
  /** Ends an exchange whose body was read to the end: stops its total-time timer. */
  release(): void
}

/**
 * The target for a BYOK attempt, its key decrypted. A key this gateway cannot open is the operator's to fix (a
 * master key missing from the configuration) or the caller's (store the key again): the log names the key id, the
 * caller's error names only their credential, and the next attempt is tried.
 */
const byokTargetFor = async (attempt: Attempt, credential: ByokRecord, environment: AttemptEnvironment): Promise<UpstreamTarget> => {
  try {
    return attempt.provider.withKey(await revealByokKey(environment.secrets, credential))
  } catch (error) {
    if (!(error instanceof SecretUnreadableError)) throw error
    environment.logger.error('a stored BYOK key cannot be opened', {
      requestId: environment.requestId,
      credentialId: credential.id,
      keyId: error.keyId,
      reason: error.message,
    })
    const { id } = credential
    throw new UnprocessableError(
      `BYOK credential ${id} (${attempt.provider.descriptor.displayName}) cannot be decrypted by this gateway; ` +
        `store the key again with PATCH /byok/${id}, or ask the operator to configure the encryption key it was sealed with`,
    )
  }
}

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
    return new UpstreamFailure('timeout', `No answer in time (${error.phase.replace('_', ' ')})`, {
      upstreamStatus: 0,
      cause: error,
    })
  }
  if (isGatewayError(error)) return error
  const message = error instanceof Error ? error.message : String(error)
  return new UpstreamFailure('provider_unavailable', 'Could not reach the provider', {
    upstreamStatus: 0,
    cause: new Error(redactSecrets(message, secrets)),
  })
}

/** Sends one attempt and returns the open upstream response, or throws its failure. */
export const openAttempt = async (attempt: Attempt, call: UpstreamCall, environment: AttemptEnvironment): Promise<OpenedAttempt> => {
  if (environment.signal.aborted) throw new ClientClosedError()
  // Only a BYOK key needs a decryption; the shared credential is at hand.
  const target = attempt.credential ? await byokTargetFor(attempt, attempt.credential, environment) : attempt.provider.shared!
  const request = attempt.provider.adapter.buildRequest(call, target)
  const started = performance.now()
  let response: UpstreamResponse
  try {
    // The transport ends the exchange when the client goes away (the signal) or the first byte is late.
    response = await environment.transport(request, { signal: environment.signal, timeouts: environment.timeouts })
  } catch (error) {
    if (environment.signal.aborted) throw new ClientClosedError()
    throw toAttemptFailure(error, attempt, [target.apiKey])
  }
  const upstreamMs = performance.now() - started
  // The rest of the exchange (the body) gets what is left of the total time.
  const total = setTimeout(() => void response.cancel(new UpstreamTimeoutSignal('total')), Math.max(0, environment.timeouts.totalMs - upstreamMs))
  const release = () => clearTimeout(total)
  const abort = () => {
    clearTimeout(total)
    void response.cancel()
  }
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
  return { response, call, request, target, abort, release }
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
