/**
 * The one error hierarchy of modelgate. Every failure a client can see is a `GatewayError`;
 * `renderError` is the only place that turns one into the spec's error body.
 */

import { jsonTextReply, toResponse, type JsonReply } from './reply'

const BRAND = Symbol.for('modelgate.error')

/**
 * Which error body a route speaks: the spec gives intern routes `{reason, retryable}` metadata, and
 * `POST /messages` answers as Anthropic does (`{type: "error", error: {type, message}}`).
 */
export type ErrorFlavor = 'standard' | 'intern' | 'anthropic'

export interface GatewayErrorOptions {
  /** Extra fields for `error.metadata` (standard flavor only). Never put secrets here. */
  metadata?: Record<string, unknown>
  /** Machine-readable reason for intern routes (`invalid_body`, `not_found`, ...). */
  reason?: string
  /** Overrides the spec's default (true only for `timeout` and `internal_error`). */
  retryable?: boolean
  /** Response headers that belong with this error (e.g. `Allow`, `Retry-After`). */
  headers?: Record<string, string>
  /** Extra top-level fields of the standard body (spec: `service_metadata`, `user_id`). */
  extraBody?: Record<string, unknown>
  cause?: unknown
}

/** Base class of every error modelgate renders to a client. */
export class GatewayError extends Error {
  readonly [BRAND] = true
  readonly status: number
  readonly metadata: Record<string, unknown> | undefined
  readonly reason: string | undefined
  readonly retryable: boolean | undefined
  readonly headers: Record<string, string> | undefined
  readonly extraBody: Record<string, unknown> | undefined

  constructor(status: number, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = new.target.name
    this.status = status
    this.metadata = options.metadata
    this.reason = options.reason
    this.retryable = options.retryable
    this.headers = options.headers
    this.extraBody = options.extraBody
  }
}

/** `error` with `metadata` laid over its own, everything else kept: a new error, since a thrown one may be shared. */
export const withMetadata = (error: GatewayError, metadata: Record<string, unknown>): GatewayError =>
  new GatewayError(error.status, error.message, {
    metadata: { ...error.metadata, ...metadata },
    ...(error.reason === undefined ? {} : { reason: error.reason }),
    ...(error.retryable === undefined ? {} : { retryable: error.retryable }),
    ...(error.headers ? { headers: error.headers } : {}),
    ...(error.extraBody ? { extraBody: error.extraBody } : {}),
    cause: error.cause,
  })

/** True for any modelgate error, even one from another copy of the package. */
export const isGatewayError = (value: unknown): value is GatewayError =>
  typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true

const define = (status: number, name: string) => {
  const ErrorClass = class extends GatewayError {
    constructor(message: string, options?: GatewayErrorOptions) {
      super(status, message, options)
    }
  }
  Object.defineProperty(ErrorClass, 'name', { value: name })
  return ErrorClass
}

export const InvalidRequestError = define(400, 'InvalidRequestError')
export const AuthenticationError = define(401, 'AuthenticationError')
export const PaymentRequiredError = define(402, 'PaymentRequiredError')
export const PermissionDeniedError = define(403, 'PermissionDeniedError')
export const NotFoundError = define(404, 'NotFoundError')
export const MethodNotAllowedError = define(405, 'MethodNotAllowedError')
export const RequestTimeoutError = define(408, 'RequestTimeoutError')
export const ConflictError = define(409, 'ConflictError')
export const PayloadTooLargeError = define(413, 'PayloadTooLargeError')
export const UnsupportedMediaTypeError = define(415, 'UnsupportedMediaTypeError')
export const UnprocessableError = define(422, 'UnprocessableError')
export const RateLimitError = define(429, 'RateLimitError')
export const InternalError = define(500, 'InternalError')
export const UpstreamError = define(502, 'UpstreamError')
export const ServiceUnavailableError = define(503, 'ServiceUnavailableError')
export const UpstreamTimeoutError = define(524, 'UpstreamTimeoutError')
export const UpstreamOverloadedError = define(529, 'UpstreamOverloadedError')

/** Thrown by storage drivers when the store cannot be reached; rendered as 503. */
export const StorageUnavailableError = define(503, 'StorageUnavailableError')

/** Why a storage write was refused: a unique key (or id) is taken, or the record changed under us. */
export type StorageConflictKind = 'unique' | 'version'

/** A storage write lost a race or hit a unique key. Routes catch it and say what it means to them. */
export class StorageConflictError extends GatewayError {
  readonly kind: StorageConflictKind
  constructor(kind: StorageConflictKind, message = kind === 'unique' ? 'Record already exists' : 'Record was modified concurrently') {
    super(409, message)
    this.kind = kind
  }
}

// spec Errors: intern `retryable` is false for every reason except timeout and internal_error. Our
// addition (docs/decisions.md, Errors and routing): passing upstream and store outages are retryable too.
const RETRYABLE_REASONS = new Set(['timeout', 'internal_error', 'upstream_unavailable', 'service_unavailable'])

const DEFAULT_INTERN_REASONS: Record<number, string> = {
  400: 'invalid_body',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'timeout',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  500: 'internal_error',
  502: 'upstream_unavailable',
  503: 'service_unavailable',
  524: 'upstream_unavailable',
  529: 'upstream_unavailable',
}

const GENERIC_500 = 'Internal server error'

// The statuses Anthropic's SDKs turn into typed errors, with the `error.type` Anthropic sends beside each.
const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  409: 'conflict_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  524: 'timeout_error',
  529: 'overloaded_error',
}

/** Anthropic's `error.type` for an HTTP status: the error body's, and the stream's `error` event's. */
export const anthropicErrorType = (status: number): string => ANTHROPIC_ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error')

export type StandardErrorBody = { error: { code: number; message: string; metadata?: Record<string, unknown> }; [field: string]: unknown }

export type AnthropicErrorBody = { type: 'error'; error: { type: string; message: string } }

export interface RenderedError {
  status: number
  headers: Record<string, string>
  body: StandardErrorBody | AnthropicErrorBody
}

/**
 * Turns anything thrown into the spec's error body. Unknown exceptions become a generic 500
 * whose message never carries the original text (it may hold secrets or SQL).
 */
export const toRenderedError = (thrown: unknown, flavor: ErrorFlavor): RenderedError => {
  const error = isGatewayError(thrown) ? thrown : new InternalError(GENERIC_500, { cause: thrown })
  const status = error.status
  // docs/decisions.md, Errors and routing: a 500 never carries upstream or internal detail.
  const message = status === 500 && !isGatewayError(thrown) ? GENERIC_500 : error.message
  const headers = { ...error.headers }
  // A 503 is a passing state (a store restarting, an overload): tell clients when to come back.
  if (status === 503 && !headers['retry-after']) headers['retry-after'] = '1'
  // Anthropic's body has no room for metadata or extra fields: its clients read only the type and the message.
  if (flavor === 'anthropic') return { status, headers, body: { type: 'error', error: { type: anthropicErrorType(status), message } } }

  const body: StandardErrorBody = { error: { code: status, message } }
  if (flavor === 'intern') {
    // spec Errors: intern 401/403 carry no metadata.
    if (status !== 401 && status !== 403) {
      const reason = error.reason ?? DEFAULT_INTERN_REASONS[status] ?? (status >= 500 ? 'internal_error' : 'invalid_body')
      body.error.metadata = { reason, retryable: error.retryable ?? RETRYABLE_REASONS.has(reason) }
    }
  } else if (status !== 500) {
    if (error.metadata) body.error.metadata = error.metadata
    if (error.extraBody) Object.assign(body, error.extraBody)
  }
  return { status, headers, body }
}

/** Builds the JSON reply for an error; the only producer of error JSON. */
export const errorReply = (thrown: unknown, flavor: ErrorFlavor, headers?: HeadersInit): JsonReply => {
  const rendered = toRenderedError(thrown, flavor)
  const reply = jsonTextReply(JSON.stringify(rendered.body), rendered.status, headers)
  for (const [name, value] of Object.entries(rendered.headers)) reply.headers.set(name, value)
  return reply
}

/** The error as a web `Response` (`errorReply`, for hosts and tests that want one). */
export const renderError = (thrown: unknown, flavor: ErrorFlavor, headers?: HeadersInit): Response => toResponse(errorReply(thrown, flavor, headers))
