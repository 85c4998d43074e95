/**
 * One upstream attempt: resolve the credential (a BYOK key is decrypted in memory, for this call
 * only), build the provider request, send it, and turn every way it can fail into an
 * `UpstreamFailure` so the caller can move on to the next endpoint.
 */

import { formatByteSize } from '../core/byte-size'
import type { ClientSignal } from '../core/client-signal'
import { GatewayError, UnprocessableError, isGatewayError } from '../core/errors'
import { SecretUnreadableError } from '../core/secrets'
import { DestinationRefusedError } from '../core/upstream-guard'
import type { UpstreamCall, UpstreamRequest, UpstreamTarget } from '../providers/contract'
import { redactSecrets } from '../providers/shared/errors'
import { UpstreamFailure, isUpstreamFailure } from '../core/upstream-failure'
import type { ByokRecord } from '../repositories/byok-credentials'
import { revealByokKey } from '../services/byok'
import { checkCallerDestination } from './destination'
import { RequestDeadlineSignal, type RequestDeadline } from './request-deadline'
import type { Attempt } from './routing'
import type { InferenceService } from './service'
import { credentialSecrets, sentSecrets } from './sent-secrets'
import {
  UpstreamTimeoutSignal,
  UpstreamTooLargeSignal,
  isDeclaredOver,
  readBodyText,
  readCapped,
  type UpstreamResponse,
} from '../transport/contract'

/** What one attempt needs of its request. */
export interface AttemptRequest {
  requestId: string
  /** Fires when the client went away. */
  signal: ClientSignal
  /** Bounds every wait of the attempt: it gets only what is left. */
  deadline: RequestDeadline
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
  /** Every secret the request carried (never logged): redacted from whatever the upstream sends back. */
  readonly secrets: readonly string[]
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
const byokTargetFor = async (attempt: Attempt, credential: ByokRecord, service: InferenceService, requestId: string): Promise<UpstreamTarget> => {
  try {
    return attempt.provider.withKey(await revealByokKey(service.secrets, credential))
  } catch (error) {
    if (!(error instanceof SecretUnreadableError)) throw error
    service.logger.error('a stored BYOK key cannot be opened', {
      requestId,
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

const TIMEOUT_PHASES: Record<UpstreamTimeoutSignal['phase'], string> = {
  connect: 'connect',
  first_byte: 'first byte',
  idle: 'idle between chunks',
  total: 'total',
}

// Cause chains are short; a cycle must not loop for ever.
const MAX_CAUSE_DEPTH = 5

/** An error whose message and causes no longer quote a secret; the same error when none did. */
const redactedError = (error: Error, secrets: readonly string[], depth = 0): Error => {
  const cause = error.cause instanceof Error && depth < MAX_CAUSE_DEPTH ? redactedError(error.cause, secrets, depth + 1) : error.cause
  const message = redactSecrets(error.message, secrets)
  if (message === error.message && cause === error.cause && !secrets.some((secret) => error.stack?.includes(secret))) return error
  const copy = new Error(message, cause === undefined ? undefined : { cause })
  copy.name = error.name
  return copy
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`

/** What the timeouts were, for a message about a stream they cut after content. */
export interface AfterContent {
  timeouts: { idleMs: number; totalMs: number }
}

/**
 * Classifies a thrown value from transport or adapter, with every secret sent removed from its text and its cause.
 * `afterContent`: the failure broke off a stream that had sent content, so it says what happened to the stream (it
 * broke off, went silent past the idle timeout, ran past the total timeout) rather than that the provider was not reached.
 */
export const toAttemptFailure = (error: unknown, attempt: Attempt, secrets: readonly string[], afterContent?: AfterContent): GatewayError => {
  if (isUpstreamFailure(error)) {
    // Adapters redact key-like text only; an upstream can quote the exact key it was sent, whatever it looks like.
    const message = redactSecrets(error.message, secrets)
    const cause = error.cause instanceof Error ? redactedError(error.cause, secrets) : error.cause
    if (message === error.message && cause === error.cause) return error
    return new UpstreamFailure(error.errorType, message, {
      upstreamStatus: error.upstreamStatus,
      ...(error.providerCode ? { providerCode: error.providerCode } : {}),
      ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds }),
      ...(cause === undefined ? {} : { cause }),
    })
  }
  if (error instanceof UpstreamTimeoutSignal && afterContent && (error.phase === 'idle' || error.phase === 'total')) {
    const message =
      error.phase === 'idle'
        ? `The provider's stream sent nothing for longer than the idle timeout (${seconds(afterContent.timeouts.idleMs)}) after part of the answer`
        : `The provider's answer ran past the total timeout (${seconds(afterContent.timeouts.totalMs)}) after part of it was sent`
    return new UpstreamFailure('timeout', message, { upstreamStatus: 0, cause: error })
  }
  if (error instanceof UpstreamTimeoutSignal) {
    return new UpstreamFailure('timeout', `No answer in time (${TIMEOUT_PHASES[error.phase]})`, {
      upstreamStatus: 0,
      cause: error,
    })
  }
  if (error instanceof UpstreamTooLargeSignal) {
    return new UpstreamFailure('provider_unavailable', `The provider's answer is larger than the gateway accepts (${formatByteSize(error.limit)})`, {
      upstreamStatus: 0,
      cause: error,
    })
  }
  // A caller's credential points somewhere the operator's policy forbids: the same answer every time, so not a 5xx.
  if (error instanceof DestinationRefusedError) {
    return new UpstreamFailure('permission_denied', `The credential's upstream location is not allowed: ${error.reason}`, { upstreamStatus: 0, cause: error })
  }
  // The request's deadline passed while the body was read: the deadline's error, naming no provider.
  if (error instanceof RequestDeadlineSignal) return error.deadline.error()
  if (isGatewayError(error)) return error
  const message = error instanceof Error ? error.message : String(error)
  // A transport error after content (the connection closed or reset mid-body) is no failure to reach the provider.
  return new UpstreamFailure('provider_unavailable', afterContent ? "The provider's stream ended early, after part of the answer was sent" : 'Could not reach the provider', {
    upstreamStatus: 0,
    cause: new Error(redactSecrets(message, secrets)),
  })
}

/** Builds an attempt's upstream request for an operation other than a generation (embeddings). */
export type AttemptBuilder = (attempt: Attempt, target: UpstreamTarget) => UpstreamRequest

/**
 * Sends one attempt and returns the open upstream response, or throws its failure. `build` replaces the
 * adapter's generation request (`buildRequest(call, …)`) for another operation of the same provider.
 */
export const openAttempt = async (
  attempt: Attempt,
  call: UpstreamCall,
  service: InferenceService,
  request: AttemptRequest,
  build?: AttemptBuilder,
  /** Sees the upstream request's headers just before it is sent (a trace adds its `traceparent`). */
  beforeSend?: (headers: Record<string, string>) => void,
): Promise<OpenedAttempt> => {
  const { signal } = request
  if (signal.aborted) throw new ClientClosedError()
  // Only a BYOK key needs a decryption; the shared credential is at hand.
  const target = attempt.credential ? await byokTargetFor(attempt, attempt.credential, service, request.requestId) : attempt.provider.shared!
  let upstreamRequest: UpstreamRequest
  try {
    upstreamRequest = build ? build(attempt, target) : attempt.provider.adapter.buildRequest(call, target)
  } catch (error) {
    throw toAttemptFailure(error, attempt, credentialSecrets(target.apiKey, attempt.provider.adapter))
  }
  // Collected only when something is to be redacted: most attempts succeed and need none.
  let sent: string[] | undefined
  const secrets = () => (sent ??= sentSecrets(upstreamRequest, target.apiKey, attempt.provider.adapter))
  beforeSend?.(upstreamRequest.headers)
  const { callerDestination } = upstreamRequest
  const { deadline } = request
  const started = performance.now()
  let response: UpstreamResponse
  // Each wait is the operator's per-attempt timeout, or what is left of the request's deadline when that is less.
  const bounded = deadline.bound(service.timeouts)
  try {
    if (callerDestination) await checkCallerDestination(upstreamRequest.url, callerDestination, service.guard, service.transport)
    // The transport ends the exchange when the client goes away (the signal) or the first byte is late.
    response = await service.transport(upstreamRequest, {
      signal,
      timeouts: bounded.timeouts,
      ...(callerDestination ? { guard: service.guard } : {}),
    })
  } catch (error) {
    if (signal.aborted) throw new ClientClosedError()
    if (error instanceof UpstreamTimeoutSignal && error.phase !== 'idle' && error.phase !== 'total' && bounded.isCapped(error.phase)) {
      deadline.markPassed()
      throw deadline.error()
    }
    throw toAttemptFailure(error, attempt, secrets())
  }
  const upstreamMs = performance.now() - started
  // The rest of the exchange (the body) gets what is left of the total time, and no more than the request's deadline.
  const totalLeft = Math.max(0, service.timeouts.totalMs - upstreamMs)
  const deadlineLeft = deadline.remainingMs()
  const total =
    deadlineLeft < totalLeft
      ? setTimeout(() => {
          deadline.markPassed()
          void response.cancel(new RequestDeadlineSignal(deadline))
        }, deadlineLeft)
      : setTimeout(() => void response.cancel(new UpstreamTimeoutSignal('total')), totalLeft)
  const release = () => clearTimeout(total)
  const abort = () => {
    clearTimeout(total)
    void response.cancel()
  }
  // Following a redirect would hand the provider key to wherever it points; no transport follows one, and core
  // does not take the 3xx (or a browser's opaque status 0) for an answer either.
  if (response.status < 200 || (response.status >= 300 && response.status < 400)) {
    abort()
    const status = response.status === 0 ? '' : ` (${response.status})`
    throw new UpstreamFailure('provider_unavailable', `The provider answered with a redirect${status}, which the gateway does not follow`, {
      upstreamStatus: response.status,
    })
  }
  if (response.status >= 400) {
    const text = await readCapped(response)
    abort()
    const context = { headers: response.headers, nowMs: service.now(), secrets: secrets() }
    throw toAttemptFailure(attempt.provider.adapter.toError(response.status, redactSecrets(text, secrets()), context), attempt, secrets())
  }
  return {
    response,
    call,
    request: upstreamRequest,
    target,
    get secrets() {
      return secrets()
    },
    abort,
    release,
  }
}

const readBoundedText = (response: UpstreamResponse, maxBytes: number): Promise<string> => {
  if (response.text) return response.text(maxBytes)
  // An announced length over the bound is refused before a byte of the body is read.
  if (isDeclaredOver(response.headers.get('content-length'), maxBytes)) return Promise.reject(new UpstreamTooLargeSignal(maxBytes))
  return readBodyText(response.body, maxBytes)
}

/** Reads a whole (non-streaming) JSON body of at most `maxBytes`; past that the caller aborts the exchange. */
export const readJsonBody = async (response: UpstreamResponse, maxBytes: number): Promise<unknown> => {
  const text = await readBoundedText(response, maxBytes)
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new UpstreamFailure('provider_unavailable', 'The provider sent a malformed response', { upstreamStatus: 200, cause: error })
  }
}
