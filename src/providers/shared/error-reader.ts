/**
 * The one upstream-error reader. Every provider's failures, from an HTTP error body or in-band (a
 * stream's error event, a failed 200 body), go through here: the body is parsed when it is JSON and
 * quoted when it is plain text; empty bodies and proxy pages get the provider's fallback message; the
 * message is redacted and capped; `Retry-After` is read. A provider supplies only an `ErrorProfile`:
 * where its error object sits in a body, what it says, and how it classifies.
 */

import type { UpstreamErrorContext } from '../contract'
import { UpstreamFailure, type ErrorType } from '../../core/upstream-failure'
import { redactSecrets } from './errors'
import { parseRetryAfter } from './retry-after'

// Enough of an upstream message to act on; a provider may echo whole inputs back.
const MAX_MESSAGE = 500

/** What a provider's error object says, in the provider's own terms. */
export interface ProviderErrorFields {
  /** The human message, when there is one. */
  message?: string | undefined
  /** The provider's name for the error (`error.type`, `error.code`, a Google status): the failure's `provider_code`. */
  code?: string | undefined
}

/** A provider's error wire format and classifier; `E` is its error object. */
export interface ErrorProfile<E> {
  /** The error object in a parsed JSON body; `undefined` when the body is not the provider's shape (it is then quoted as text). */
  find(body: unknown): E | undefined
  /** The message and code of an error object. */
  fields(error: E): ProviderErrorFields
  /**
   * The canonical type, from the HTTP status (or the one `inBandStatus` gives), the error object
   * (`undefined` for a plain-text body) and the whole message, before redaction and capping.
   */
  classify(status: number, error: E | undefined, message: string): ErrorType
  /** The status an in-band error stands for; it is recorded as the failure's `upstreamStatus`. */
  inBandStatus(error: E | undefined): number
  /** A delay the error itself asks for, used when the response carries no `Retry-After` header. */
  retryAfterSeconds?(error: E | undefined, message: string): number | undefined
  /** The message when the upstream gave none worth quoting: an empty body, an HTML page, a blank message. */
  fallbackMessage(status: number, isEmptyBody: boolean): string
}

const hasText = (value: string | undefined): value is string => value !== undefined && value.trim() !== ''

/** The provider's error object in a body, when the body is JSON of the provider's shape. */
const findError = <E>(profile: ErrorProfile<E>, text: string): E | undefined => {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return undefined
  }
  return profile.find(body)
}

const toFailure = <E>(
  profile: ErrorProfile<E>,
  failure: { status: number; error: E | undefined; message: string; code: string | undefined; retryAfterSeconds?: number | undefined },
  secrets: readonly string[] = [],
): UpstreamFailure => {
  const { status, error, message, code } = failure
  const retryAfterSeconds = failure.retryAfterSeconds ?? profile.retryAfterSeconds?.(error, message)
  // Redacted before the cut, so a key split by the cut cannot slip through half-hidden.
  return new UpstreamFailure(profile.classify(status, error, message), redactSecrets(message, secrets).slice(0, MAX_MESSAGE), {
    upstreamStatus: status,
    ...(code ? { providerCode: code } : {}),
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  })
}

/** An upstream's HTTP error answer (status ≥ 400, body read up to core's cap) as a classified failure. */
export const readUpstreamError = <E>(profile: ErrorProfile<E>, status: number, bodyText: string, context: UpstreamErrorContext = {}): UpstreamFailure => {
  const text = bodyText.trim()
  const error = text === '' ? undefined : findError(profile, text)
  // A proxy's or load balancer's HTML page carries nothing worth quoting.
  const fields: ProviderErrorFields = error === undefined ? { message: text.startsWith('<') ? undefined : text } : profile.fields(error)
  const message = hasText(fields.message) ? fields.message.trim() : profile.fallbackMessage(status, text === '')
  // The header is more precise than any delay read from the body.
  const retryAfterSeconds = parseRetryAfter(context.headers?.get('retry-after') ?? null, context.nowMs ?? Date.now())
  return toFailure(profile, { status, error, message, code: fields.code, retryAfterSeconds }, context.secrets)
}

/** An error an upstream reported inside a successful (200) answer, as a classified failure. */
export const readInBandError = <E>(profile: ErrorProfile<E>, error: E | null | undefined, fallbackMessage: string): UpstreamFailure => {
  const found = error ?? undefined
  const fields: ProviderErrorFields = found === undefined ? {} : profile.fields(found)
  const message = hasText(fields.message) ? fields.message.trim() : fallbackMessage
  return toFailure(profile, { status: profile.inBandStatus(found), error: found, message, code: fields.code })
}
