/** Routes are data: method, path, who may call, input schemas and a handler over validated input. */

import type * as v from 'valibot'
import type { Logger } from '../core/logger'
import type { ErrorFlavor } from '../core/errors'
import type { HttpMethod } from '../core/router'
import type { Repositories } from '../repositories'
import type { AccessLog } from './access-log'
import type { Caller, KeyHeaders, RouteAuth } from './auth'

export type { RouteAuth }
import type { ClientSignal } from '../core/client-signal'
import type { Reply } from '../core/reply'
import type { SecretBox } from '../core/secrets'
import type { GatewayRuntime } from './runtime'
import type { AuditAction } from '../repositories/audit-log'
import type { AuditEvent } from '../services/audit-log'

/** What a route says of its change; the action, actor, account and request id come from the route and the request. */
export type RouteAuditEvent = Pick<AuditEvent, 'target' | 'workspaceId' | 'changes'>

type AnySchema = v.GenericSchema<unknown, unknown>
type Infer<S> = S extends AnySchema ? v.InferOutput<S> : undefined

/** The caller a route sees: nobody on routes without authentication. */
export type CallerOf<Auth extends RouteAuth> = Auth extends 'none' ? null : Caller

export interface RouteContext<Params, Query, Body, Auth extends RouteAuth = Exclude<RouteAuth, 'none'>> {
  request: Request
  requestId: string
  params: Params
  query: Query
  body: Body
  caller: CallerOf<Auth>
  repositories: Repositories
  /** Seals and opens secrets at rest (BYOK keys). */
  secrets: SecretBox
  logger: Logger
  /** The gateway's clock. */
  now: () => Date
  /** Upstream machinery (providers, models, transport) for inference routes. */
  runtime: GatewayRuntime
  /** Fires when the client goes away; pass it to anything slow that needs an `AbortSignal`. */
  signal: AbortSignal
  /** The same disconnect, as cheap as the host can offer it (no AbortSignal on Node): for the engine. */
  clientSignal: ClientSignal
  /** The request's access log line, on routes that run models (`isAccessLogged`). */
  access: AccessLog | undefined
  /**
   * Records the change this request made under the route's `audit` action, acted by the caller's key: call it after
   * the change, once it is done. Never rejects (docs/decisions.md, Audit log).
   */
  audit(event: RouteAuditEvent): Promise<void>
}

export interface RouteDefinition<
  ParamsSchema extends AnySchema | undefined = undefined,
  QuerySchema extends AnySchema | undefined = undefined,
  BodySchema extends AnySchema | undefined = undefined,
  Auth extends RouteAuth = RouteAuth,
> {
  method: HttpMethod
  /** Relative to the gateway's base path, with `:param` segments. */
  path: string
  auth: Auth
  /** Where the key may come from; `Authorization: Bearer` only when omitted. */
  keyHeaders?: KeyHeaders
  /** Intern routes answer errors with `{reason, retryable}` metadata. */
  errorFlavor?: ErrorFlavor
  /** Checks run right after authentication, before any input is read (e.g. programme membership). */
  authorize?: (context: { caller: Caller; request: Request; runtime: GatewayRuntime }) => void
  /** Writes an access log line per request (pipeline/access-log.ts): the routes that run models. */
  isAccessLogged?: boolean
  /**
   * The audit log's action for the change this route makes (`context.audit` records it). Every route that changes
   * something, but those that run models, declares one (test/unit/routes/audit-coverage.test.ts checks).
   */
  audit?: AuditAction
  /** Honours `Idempotency-Key`: retries replay the first response (JSON routes only). */
  isIdempotent?: boolean
  /**
   * Body size limit in bytes; `'inference'` for the gateway's `inferenceBodyLimit` (model requests), the gateway's
   * `bodyLimit` when omitted.
   */
  bodyLimit?: number | 'inference'
  params?: ParamsSchema
  query?: QuerySchema
  body?: BodySchema
  handle(context: RouteContext<Infer<ParamsSchema>, Infer<QuerySchema>, Infer<BodySchema>, Auth>): Promise<Reply>
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteDefinition<any, any, any, any>

/** Declares a route with its input types inferred from its schemas. */
export const defineRoute = <
  ParamsSchema extends AnySchema | undefined = undefined,
  QuerySchema extends AnySchema | undefined = undefined,
  BodySchema extends AnySchema | undefined = undefined,
  Auth extends RouteAuth = RouteAuth,
>(
  route: RouteDefinition<ParamsSchema, QuerySchema, BodySchema, Auth>,
): RouteDefinition<ParamsSchema, QuerySchema, BodySchema, Auth> => route

/** Headers of an answer that carries a secret (a raw API key): never kept by any cache. */
export const NO_STORE = { 'cache-control': 'no-store' } as const

export { json } from '../core/reply'
