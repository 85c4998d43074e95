/**
 * `createGateway`: one web-standard `fetch(Request) => Promise<Response>` serving the whole API, and the same
 * as `reply(Request) => Promise<Reply>` for the Node bridge (src/core/reply.ts).
 * Every request takes the same fixed steps: request id, route match (404 / 405), authentication,
 * input parsing, handler, and `renderError` for anything thrown.
 */

import { assertRouteAuth, authenticate, type Caller } from '../pipeline/auth'
import { isClientGone, type ClientSignal } from '../core/client-signal'
import { DEFAULT_REQUEST_BODY_TIMEOUT_MS, hasRequestBody, readJsonBody, readObjectBody } from '../core/body'
import { replyStatus, responseReply, setReplyHeader, toResponse, type Reply } from '../core/reply'
import { MethodNotAllowedError, NotFoundError, isGatewayError, errorReply, type ErrorFlavor } from '../core/errors'
import { createConsoleLogger, isLogLevelEnabled, silentLogger, type Logger } from '../core/logger'
import { GatewayOptionsSchema, type GatewayOptions } from './options'
import { REQUEST_ID_HEADER, resolveRequestId } from '../core/request-id'
import type { AnyRoute, RouteAuditEvent, RouteAuth, RouteContext } from '../pipeline/route'
import type { AuditAction } from '../repositories/audit-log'
import { actorOfKey, createAuditLog, DEFAULT_AUDIT_RETENTION_DAYS, DEFAULT_AUDIT_SWEEP_INTERVAL_MS } from '../services/audit-log'
import { readIdempotencyKey, runIdempotent } from '../pipeline/idempotency'
import { errorFlavorForPath } from '../pipeline/error-flavor'
import { enforceRateLimit } from '../pipeline/rate-limit'
import { createRouter, normalizeBasePath } from '../core/router'
import { createDashboardPage, DEFAULT_DASHBOARD_PATH } from '../dashboard/page'
import { createSecretBox, type SecretBox } from '../core/secrets'
import { createInferenceService, type InferenceService } from '../engine/service'
import { composeRunStages, type RunStage } from '../engine/run-stage'
import { runTurns } from '../engine/run'
import { createFeatureSettings } from '../features/settings'
import { pluginsStage } from '../features/plugins/stage'
import { fusionStage } from '../features/plugins/fusion/stage'
import { guardrailOutputStage } from '../features/guardrails/output-stage'
import { engineStages } from '../engine/stages'
import { pluginsPlanStage } from '../features/plugins/plan-stage'
import { pluginsTurnStage } from '../features/plugins/turn-stage'
import { modelChoicePlanStage } from '../features/plugins/model-choice'
import { guardrailsPlanStage } from '../features/guardrails/plan-stage'
import { serverToolsPlanStage } from '../features/server-tools/plan-stage'
import { serverToolsTurnStage } from '../features/server-tools/turn-stage'
import { responseCacheStage } from '../features/response-cache/stage'
import { createDocumentReaders } from './file-parser'
import { createGatewaySimilarity } from './similarity'
import { withDemoModels } from './demo-models'
import { createInternSettings } from '../interns/settings'
import { accessLogObserver, createAccessLog, type AccessLog } from '../pipeline/access-log'
import { createTelemetry, isObserved, type RequestStarted, type Telemetry, type TelemetryObserver } from '../core/telemetry'
import { observedDriver } from '../storage/observed'
import { createMetricsEndpoint } from './metrics'
import { createTraceObserver, type TraceObserver } from './tracing'
import { context } from '@opentelemetry/api'
import { createLedger, DEFAULT_LEDGER_SWEEP_INTERVAL_MS, DEFAULT_RETENTION_DAYS } from '../ledger/ledger'
import { createSettlementRecovery, DEFAULT_SPEND_BEAT_MS } from '../ledger/settlement-recovery'
import type { GatewayRuntime } from '../pipeline/runtime'
import { ADAPTERS } from '../providers'
import { assertKnownEndpointProviders } from '../engine/providers'
import { DEFAULT_TEXT_MODEL, UnknownPriceTargetError } from '../engine/models'
import { createPriceRefresher, type PriceReloadResult } from '../engine/price-refresh'
import type { ErrorReplier, ReplyHandler, ReplyOptions } from '../core/types'
import { NoBodySchema, NoQuerySchema, parseInput, searchParamsToObject } from '../core/validation'
import { createRepositories, RARELY_CHANGED_COLLECTIONS, type Repositories } from '../repositories'
import { routes } from '../routes'
import { createAdmin, type GatewayAdmin } from '../admin/admin'
import { memoryStorage } from '../storage/memory'
import { checkedDriver } from '../storage/checked'
import { createReadCache, type ReadCache } from '../storage/read-cache'
import { internEnvironment } from '../interns/environment'
import { startProvisioningSweep } from '../interns/sweep'
import { settlementMemoryOf, type StorageDriver } from '../storage/contract'
import { createStoredResponses, DEFAULT_STORED_RESPONSE_RETENTION_DAYS, DEFAULT_STORED_RESPONSE_SWEEP_INTERVAL_MS } from '../services/stored-responses'
import { createBackgroundRuns, DEFAULT_BACKGROUND_FLUSH_INTERVAL_MS } from '../services/background-runs'
import { stopLocalRuns, sweepAbandonedRuns, type BackgroundRunner } from '../routes/background-run'
import { DEFAULT_LEASE_SWEEP_INTERVAL_MS, DEFAULT_LEASE_TTL_MS, heartbeatFor } from '../core/lease'
import { randomId } from '../core/crypto'
import { startPeriodicTask } from '../core/periodic'

export interface Gateway extends ReplyHandler, ErrorReplier {
  /** Programmatic administration: accounts, keys, workspaces. */
  admin: GatewayAdmin
  /** The storage driver in use. */
  storage: StorageDriver
  /**
   * Stops the provisioning and ledger sweeps, lets this process's intern work, usage records and spend
   * settlements finish their writes, and closes the storage driver.
   */
  close(): Promise<void>
  /**
   * Resolves once what every request that has ended so far spent is written to the store (a request's
   * spend is settled just after its answer ends, off the answer's path).
   * @example
   * await gateway.flushSpend()   // then GET /key shows the request just answered
   */
  flushSpend(): Promise<void>
  /**
   * Ends every Responses stream in flight (intern chats included) in-band: `response.failed` with
   * `error.code: "server_error"`, then `data: [DONE]`, and aborts its upstream exchange. For hosts that
   * shut down: call it at the end of the grace period, before closing the remaining connections.
   * @example
   * gateway.endStreams()   // "The gateway is shutting down; retry the request"
   */
  endStreams(message?: string): void
  /**
   * The metrics of `options.metrics` in their exposition format, for a host that serves them itself (on another port,
   * at another path). Management keys only unless `metrics.isPublic`; 404 when no exporter is configured.
   * @example
   * app.get('/metrics', (req) => gateway.metrics(req))
   */
  metrics(request: Request): Promise<Response>
  /**
   * Refreshed prices (`priceSource`). `ready` is the first load, started by `createGateway`; until it settles the
   * catalog's own prices apply. `reload()` reads the source again; a failed load keeps the previous prices.
   * @example
   * const result = await gateway.prices.reload()   // { ok: true, overrides: 12, revision: 2 }
   */
  prices: {
    readonly ready: Promise<PriceReloadResult>
    reload(): Promise<PriceReloadResult>
  }
}

const isStoring = (options: GatewayOptions['storedResponses']) => options !== undefined && options.enabled !== false

type BackgroundOptions = NonNullable<NonNullable<GatewayOptions['storedResponses']>['background']>

const backgroundSettings = (options: BackgroundOptions = {}) => {
  const leaseTtlMs = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS
  return {
    leaseTtlMs,
    heartbeatIntervalMs: heartbeatFor(leaseTtlMs),
    sweepIntervalMs: options.sweepIntervalMs ?? DEFAULT_LEASE_SWEEP_INTERVAL_MS,
    flushIntervalMs: options.flushIntervalMs ?? DEFAULT_BACKGROUND_FLUSH_INTERVAL_MS,
    holder: `gateway-${randomId()}`,
  }
}

const NO_PRICE_SOURCE: PriceReloadResult = { ok: false, error: 'no priceSource is configured' }

/** What every request of one gateway hands its route the same: built once. */
type GatewayScope = Pick<RouteContext<unknown, unknown, unknown, RouteAuth>, 'repositories' | 'secrets' | 'logger' | 'now' | 'runtime'>

/** What one request hands its route: the request, its input as the route's schemas read it, its caller and the route's audit action. */
type RequestScope = Omit<RouteContext<unknown, unknown, unknown, RouteAuth>, keyof GatewayScope | 'signal' | 'audit'> & { auditAction: AuditAction | undefined }

/**
 * What a route's handler gets: the gateway's scope and the request's. A class rather than a literal so that `signal`
 * can be a getter on the prototype: a route that never reads it never builds an AbortSignal, which on Node is not free
 * per request (client-signal.ts), and no per-request getter closure is made either; the gateway's scope is read
 * through getters too, so a request copies none of it.
 */
class HandlerContext implements RouteContext<unknown, unknown, unknown, RouteAuth> {
  readonly request: Request
  readonly requestId: string
  readonly params: unknown
  readonly query: unknown
  readonly body: unknown
  readonly caller: Caller | null
  readonly clientSignal: ClientSignal
  readonly access: AccessLog | undefined
  private readonly auditAction: AuditAction | undefined

  constructor(
    private readonly scope: GatewayScope,
    fields: RequestScope,
  ) {
    this.request = fields.request
    this.requestId = fields.requestId
    this.params = fields.params
    this.query = fields.query
    this.body = fields.body
    this.caller = fields.caller
    this.clientSignal = fields.clientSignal
    this.access = fields.access
    this.auditAction = fields.auditAction
  }

  // A getter, like `signal`: handlers destructure it, and only the routes that read it make the closure.
  get audit(): (event: RouteAuditEvent) => Promise<void> {
    return (event) => {
      // A route that changes something without declaring what is a bug, caught by the route table's test; not the caller's fault.
      if (!this.auditAction || !this.caller) throw new TypeError('modelgate: a route without an audit action or a caller recorded a change')
      return this.scope.runtime.auditLog.record({
        ...event,
        action: this.auditAction,
        actor: actorOfKey(this.caller.key),
        accountId: this.caller.account.id,
        requestId: this.requestId,
      })
    }
  }

  get repositories(): Repositories {
    return this.scope.repositories
  }

  get secrets(): SecretBox {
    return this.scope.secrets
  }

  get logger(): Logger {
    return this.scope.logger
  }

  get now(): () => Date {
    return this.scope.now
  }

  get runtime(): GatewayRuntime {
    return this.scope.runtime
  }

  get signal(): AbortSignal {
    return this.request.signal
  }
}

// A price override naming a model or endpoint the catalog lacks is a configuration mistake, reported as one.
const createService = (options: Parameters<typeof createInferenceService>[0]) => {
  try {
    return createInferenceService(options)
  } catch (error) {
    if (error instanceof UnknownPriceTargetError) throw new TypeError(`modelgate: ${error.message}`)
    throw error
  }
}

/**
 * The features' stages around every request's run, outermost first (src/engine/run-stage.ts): the response cache
 * answers a repeated request before anything else runs, and keeps what the others made of a new one; the plugins hold and
 * run what they do before the attempts; a whole answer's output passes the guardrails; fusion answers with its
 * panel instead of one run.
 */
const runStagesFor = (service: InferenceService, repositories: Repositories): RunStage[] => [
  responseCacheStage(service, repositories.responseCache),
  pluginsStage(service),
  guardrailOutputStage,
  fusionStage(service),
]

/** Each stage's time (the stages inside it included) reported as `stageEnded`. */
const timedStage = (stage: RunStage, report: NonNullable<Telemetry['stageEnded']>): RunStage => ({
  name: stage.name,
  async run(request, next) {
    const startedAt = performance.now()
    let isError = true
    try {
      const outcome = await stage.run(request, next)
      isError = false
      return outcome
    } finally {
      report({ requestId: request.requestId, stage: stage.name, isError, durationMs: Math.round(performance.now() - startedAt) })
    }
  },
})

/** The telemetry's observers: the access log where its lines are kept, the metrics exporter, the host's own. */
const observersOf = (config: GatewayOptions, logger: Logger, isAccessLogKept: boolean, tracer: TraceObserver | undefined) => {
  const others: TelemetryObserver[] = [...(config.metrics ? [config.metrics.exporter.observer] : []), ...(tracer ? [tracer] : []), ...(config.observers ?? [])]
  return { all: isAccessLogKept ? [accessLogObserver(logger), ...others] : others, others }
}

/**
 * The features' stages while a request is prepared and while its turns are answered, in the order they run
 * (src/engine/plan-stage.ts, turn-stage.ts): the plugins are checked before anything is read; the guardrails read
 * with the caller's scope and scan the input; the routers and fusion choose the models; the server tools shape every
 * planned request. A request's turns are the server-tool loop's when it has server tools, inside the plugins' hooks.
 */
const ENGINE_STAGES = engineStages({
  plan: [pluginsPlanStage, guardrailsPlanStage, modelChoicePlanStage, serverToolsPlanStage],
  turns: [pluginsTurnStage, serverToolsTurnStage],
})

/** Stores in this process's memory: their reads cost what a cache hit would. */
const IN_PROCESS_STORES = new Set(['memory', 'file'])

/** The store the repositories read through: behind the read cache unless it is off or the store is in memory. */
const readCacheFor = (storage: StorageDriver, isOn: boolean | undefined): ReadCache =>
  isOn === false || IN_PROCESS_STORES.has(storage.name)
    ? { storage, revalidate: () => Promise.resolve() }
    : createReadCache(storage, { collections: RARELY_CHANGED_COLLECTIONS })

/** The dashboard's page when it is on, at its path outside the API's base path (docs/dashboard.md). */
const dashboardFor = (option: GatewayOptions['dashboard'], basePath: string) => {
  if (option === undefined || option === false) return undefined
  const path = (option === true ? undefined : option.path) ?? DEFAULT_DASHBOARD_PATH
  if (basePath !== '' && (path === basePath || path.startsWith(`${basePath}/`))) {
    throw new TypeError(`modelgate: options.dashboard.path: must be outside the API's base path ${basePath}`)
  }
  return createDashboardPage(path, basePath)
}

/**
 * Creates a gateway.
 * @example
 * const gateway = createGateway({ storage: memoryStorage() })
 * Bun.serve({ fetch: gateway.fetch })
 */
export const createGateway = (options: GatewayOptions = {}): Gateway => {
  const parsed = parseInput(GatewayOptionsSchema, options, 'options')
  const config = parsed.demoModels ? withDemoModels(parsed) : parsed
  const logger: Logger = config.logger === false ? silentLogger : (config.logger ?? createConsoleLogger())
  // The default store warns through the gateway's logger when it first drops old usage records.
  // A host's own driver goes behind the same front door as ours: the contract's argument checks, once.
  const storage = config.storage ? checkedDriver(config.storage) : memoryStorage({ logger })
  // Access lines are written at info: a logger that drops them costs no line and no session observer.
  const isAccessLogKept = isLogLevelEnabled(logger, 'info')
  const tracer = config.tracing === true ? createTraceObserver() : config.tracing ? createTraceObserver(config.tracing.tracerProvider) : undefined
  const observers = observersOf(config, logger, isAccessLogKept, tracer)
  const telemetry = createTelemetry(observers.all, (error, event) => logger.warn('a telemetry observer failed', { event, error }))
  // Requests that run no model are reported only to observers beside the access log, which writes no line for them.
  const isEveryRequestReported = isObserved(observers.others, 'requestEnded')
  const now = config.now ?? (() => new Date())
  const requestBodyTimeoutMs = config.requestBodyTimeoutMs ?? DEFAULT_REQUEST_BODY_TIMEOUT_MS
  const defaultTextModel = config.workspaceDefaults?.textModel ?? DEFAULT_TEXT_MODEL
  const readCache = readCacheFor(telemetry.storeCalled ? observedDriver(storage, telemetry.storeCalled) : storage, config.readCache)
  const repositories = createRepositories(
    readCache.storage,
    {
      textModel: defaultTextModel,
      imageModel: config.workspaceDefaults?.imageModel ?? 'google/gemini-2.5-flash-image',
      providerSort: config.workspaceDefaults?.providerSort ?? 'price',
    },
    now,
  )
  const router = createRouter<AnyRoute>(config.basePath, routes)
  const dashboard = dashboardFor(config.dashboard, normalizeBasePath(config.basePath))
  const secrets = createSecretBox(config.encryptionKeys ?? [])
  const documents = createDocumentReaders(config.plugins?.fileParser, logger)
  const similarity = createGatewaySimilarity(logger)
  const inference = createService({
      ...config,
      features: (providers) =>
        createFeatureSettings(
          {
            plugins: { ...config.plugins, fileParser: { ...config.plugins?.fileParser, extractor: documents.extract } },
            serverTools: { ...config.serverTools, webFetch: { ...config.serverTools?.webFetch, readPageText: documents.readPageText } },
            ...(config.routers ? { routers: config.routers } : {}),
            ...(config.upstreamGuard ? { upstreamGuard: config.upstreamGuard } : {}),
            ...(config.responseCache ? { responseCache: { ...config.responseCache, findNearest: similarity.findNearest } } : {}),
          },
          providers,
        ),
      stages: ENGINE_STAGES,
      logger,
      telemetry,
      secrets,
      adapters: ADAPTERS,
      spendRepository: repositories.spend,
      performanceRepository: repositories.endpointPerformance,
      ...(config.spend?.leaseMs === undefined ? {} : { spendLeaseMs: config.spend.leaseMs }),
      // End-user hashes are keyed by the primary master key where there is one, so they are stable across restarts.
      endUserSecret: config.encryptionKeys?.[0] ?? 'modelgate-end-user',
    })
  // Settlements a killed process never sent go out again from their usage records (docs/decisions.md, "Books that
  // balance"); the processes' beats run on the real clock, whatever clock the gateway reads for its records.
  const settlementRecovery =
    config.ledger?.enabled === false
      ? undefined
      : createSettlementRecovery({
          generations: repositories.generations,
          owners: repositories.spendOwners,
          book: inference.spend.book,
          logger,
          now: Date.now,
          settlementMemoryMs: settlementMemoryOf(storage.name),
          // A process is taken for dead three beats after its last: within a lease when leases are short (tests).
          beatMs: Math.min(DEFAULT_SPEND_BEAT_MS, Math.floor(inference.spend.book.leaseMs / 3)),
        })
  const runtime: GatewayRuntime = {
    inference,
    runRequest: composeRunStages(
      telemetry.stageEnded ? runStagesFor(inference, repositories).map((stage) => timedStage(stage, telemetry.stageEnded!)) : runStagesFor(inference, repositories),
      (request) => runTurns(inference, request),
    ),
    interns: createInternSettings(config),
    ledger:
      config.ledger?.enabled === false
        ? null
        : createLedger(
            repositories.generations,
            {
              retentionDays: config.ledger?.retentionDays ?? DEFAULT_RETENTION_DAYS,
              sweepIntervalMs: config.ledger?.sweepIntervalMs ?? DEFAULT_LEDGER_SWEEP_INTERVAL_MS,
            },
            now,
            logger,
            { recovery: settlementRecovery },
          ),
    storedResponses:
      !isStoring(config.storedResponses)
        ? null
        : createStoredResponses(
            repositories.storedResponses,
            secrets,
            {
              retentionDays: config.storedResponses!.retentionDays ?? DEFAULT_STORED_RESPONSE_RETENTION_DAYS,
              sweepIntervalMs: config.storedResponses!.sweepIntervalMs ?? DEFAULT_STORED_RESPONSE_SWEEP_INTERVAL_MS,
            },
            now,
            logger,
          ),
    backgroundRuns: isStoring(config.storedResponses)
      ? createBackgroundRuns(repositories.backgroundRuns, secrets, backgroundSettings(config.storedResponses?.background), now, {
          retentionDays: config.storedResponses!.retentionDays ?? DEFAULT_STORED_RESPONSE_RETENTION_DAYS,
          sweepIntervalMs: config.storedResponses!.sweepIntervalMs ?? DEFAULT_STORED_RESPONSE_SWEEP_INTERVAL_MS,
          logger,
        })
      : null,
    auditLog: createAuditLog(
      repositories.auditLog,
      {
        retentionDays: config.auditLog?.retentionDays ?? DEFAULT_AUDIT_RETENTION_DAYS,
        sweepIntervalMs: config.auditLog?.sweepIntervalMs ?? DEFAULT_AUDIT_SWEEP_INTERVAL_MS,
      },
      now,
      logger,
    ),
    trustedHostHeader: config.trustedHostHeader,
    rateLimit: config.rateLimit,
    eventLoop: config.eventLoop,
    worker: config.worker,
    revalidateReads: readCache.revalidate,
  }
  assertKnownEndpointProviders(config.models ?? [], runtime.inference.providers)
  const priceRefresher = config.priceSource ? createPriceRefresher(runtime.inference.models, config.priceSource, logger) : undefined

  const { sweepIntervalMs } = runtime.interns.provisioning
  const sweep = sweepIntervalMs === false ? undefined : startProvisioningSweep(internEnvironment({ repositories, runtime, logger, now }), sweepIntervalMs)

  // Background runs whose process died are taken over by every gateway on the store (docs/decisions.md, Background runs).
  const backgroundRunner: BackgroundRunner | undefined = runtime.backgroundRuns ? { runtime, background: runtime.backgroundRuns, repositories, logger, now } : undefined
  const backgroundSweep = backgroundRunner
    ? startPeriodicTask(backgroundRunner.background.settings.sweepIntervalMs, () => sweepAbandonedRuns(backgroundRunner), (error) => logger.warn('background run sweep failed; retrying at the next', { error }))
    : undefined

  const metrics = createMetricsEndpoint(config.metrics, normalizeBasePath(config.basePath), async (request) => {
    await readCache.revalidate()
    assertRouteAuth(await authenticate(request, repositories, 'bearer', now), 'management')
  })

  const gatewayScope: GatewayScope = { repositories, secrets, logger, now, runtime }
  const serve = async (request: Request, requestId: string, url: URL, route: AnyRoute, params: Record<string, string>, clientSignal: ClientSignal, access: AccessLog | undefined) => {
    // Routes without authentication (health checks) have no key to check, authorize or rate-limit. The others read
    // past every change that returned before they arrived, whichever gateway on the store made it.
    if (route.auth !== 'none') await readCache.revalidate()
    const caller = route.auth === 'none' ? null : await authenticate(request, repositories, route.keyHeaders, now)
    if (caller) {
      access?.identify(caller)
      // The route's own check first: outside the interns programme every intern route is 404, whatever the key.
      route.authorize?.({ caller, request, runtime })
      assertRouteAuth(caller, route.auth)
      if (config.rateLimit) await enforceRateLimit(storage, config.rateLimit, caller.key.hash, now().getTime())
    }
    const parsedParams = route.params ? parseInput(route.params, params, 'params') : undefined
    // A route without a query schema takes no parameters: any is a 400 naming it (docs/decisions.md, Errors and routing).
    if (!route.query && url.search !== '') parseInput(NoQuerySchema, searchParamsToObject(url.searchParams), 'query')
    const query = route.query ? parseInput(route.query, searchParamsToObject(url.searchParams), 'query') : undefined
    const limit = route.bodyLimit === 'inference' ? config.inferenceBodyLimit : (route.bodyLimit ?? config.bodyLimit)
    const bodyBounds = { limit, timeoutMs: requestBodyTimeoutMs }
    const body = route.body ? parseInput(route.body, await readObjectBody(request, bodyBounds), 'body') : undefined
    // A route without a body schema reads no body: one that says something is a 400 naming it (docs/decisions.md,
    // Errors and routing), so an option sent where the route never looks does not seem applied.
    if (!route.body && hasRequestBody(request)) {
      const unread = await readJsonBody(request, bodyBounds)
      if (unread !== undefined) parseInput(NoBodySchema, unread, 'body')
    }
    const handle = () => route.handle(new HandlerContext(gatewayScope, { request, requestId, params: parsedParams, query, body, caller, clientSignal, access, auditAction: route.audit }))
    const idempotencyKey = route.isIdempotent ? readIdempotencyKey(request) : null
    if (idempotencyKey === null || !caller) return handle()
    return runIdempotent(
      repositories.idempotency,
      {
        key: idempotencyKey,
        accountId: caller.account.id,
        scope: `${route.method} ${url.pathname}`,
        request: { params: parsedParams, query, body },
        now: () => now().getTime(),
      },
      handle,
    )
  }

  const reply = async (request: Request, options?: ReplyOptions): Promise<Reply> => {
    // Read lazily: on Node, `request.signal` is an AbortSignal made on first use.
    const clientSignalOf = () => options?.signal ?? request.signal
    const requestId = resolveRequestId(request)
    let access: AccessLog | undefined
    let started: RequestStarted | undefined
    let flavor: ErrorFlavor = 'standard'
    try {
      const url = new URL(request.url)
      flavor = errorFlavorForPath(router.relativePath(url.pathname))
      const page = dashboard?.replyFor(request.method, url.pathname)
      if (page) return setReplyHeader(page, REQUEST_ID_HEADER, requestId)
      if (metrics.isAt(url.pathname)) return setReplyHeader(responseReply(await metrics.reply(request)), REQUEST_ID_HEADER, requestId)
      const match = router.match(request.method, url.pathname)
      if (match.kind !== 'found' && isEveryRequestReported) {
        access = createAccessLog(telemetry, { requestId, method: request.method, path: url.pathname, route: 'unmatched', isModelRequest: false, headers: request.headers })
      }
      if (match.kind === 'not-found') throw new NotFoundError(`No route for ${request.method} ${url.pathname}`)
      if (match.kind === 'method-not-allowed') {
        throw new MethodNotAllowedError(`Method ${request.method} is not allowed here; use ${match.allow.join(', ')}`, {
          headers: { allow: match.allow.join(', ') },
        })
      }
      flavor = match.route.errorFlavor ?? flavor
      // With nobody observing there is no report to build: the access log and its stream observer are skipped.
      const isModelRequest = match.route.isAccessLogged === true
      if (isModelRequest ? telemetry.requestEnded : isEveryRequestReported) {
        const route = `${match.route.method} ${match.route.path}`
        started = { requestId, method: request.method, path: url.pathname, route, isModelRequest, headers: request.headers }
        access = createAccessLog(telemetry, started)
      }
      // The event-loop monitor names the routes that ran during a stall.
      const untrack = config.eventLoop?.track?.(`${match.route.method} ${match.route.path}`)
      try {
        const serving = () => serve(request, requestId, url, match.route, match.params, clientSignalOf(), access)
        // Traced, the request's work runs in its span's context: the store calls it makes become its children.
        const answer = await (tracer && started ? context.with(tracer.contextOf(started), serving) : serving())
        access?.responded(replyStatus(answer))
        return setReplyHeader(answer, REQUEST_ID_HEADER, requestId)
      } finally {
        untrack?.()
      }
    } catch (error) {
      access?.failed(error)
      if (!isGatewayError(error) && (isClientGone(error) || clientSignalOf().aborted)) {
        // A client that leaves mid-request is ordinary traffic: one line, no stack. Nobody reads the answer.
        logger.debug('client disconnected', { requestId, method: request.method })
      } else if (!isGatewayError(error) || error.status >= 500) {
        // A store outage's 503 says only "Storage is unavailable" to callers; its cause (refused, timed out) is for the log.
        const cause = isGatewayError(error) && error.status === 503 && error.cause !== undefined ? { cause: error.cause } : {}
        logger.error('request failed', { requestId, method: request.method, error, ...cause })
      }
      return errorReply(error, flavor, { [REQUEST_ID_HEADER]: requestId })
    }
  }

  const flushSpend = () => runtime.inference.spend.book.flush()

  // An error the host raised before the gateway could read the request, in the body the route at its path answers with.
  const replyError = (request: Request, error: unknown): Reply => {
    const url = new URL(request.url)
    const match = router.match(request.method, url.pathname)
    const flavor = (match.kind === 'found' ? match.route.errorFlavor : undefined) ?? errorFlavorForPath(router.relativePath(url.pathname))
    return errorReply(error, flavor, { [REQUEST_ID_HEADER]: resolveRequestId(request) })
  }

  return {
    fetch: async (request) => toResponse(await reply(request)),
    reply,
    replyError,
    admin: createAdmin(repositories, secrets, now, runtime.auditLog, runtime.inference.responseCache.semantic !== undefined),
    storage,
    endStreams: (message) => runtime.inference.streams.endAll(message),
    metrics: (request) => metrics.reply(request),
    flushSpend,
    prices: {
      ready: priceRefresher?.ready ?? Promise.resolve(NO_PRICE_SOURCE),
      reload: () => priceRefresher?.reload() ?? Promise.resolve(NO_PRICE_SOURCE),
    },
    close: async () => {
      priceRefresher?.stop()
      await sweep?.stop()
      await backgroundSweep?.stop()
      // Detached runs are stopped, not awaited to their end: each is failed and billed for what it used (routes/background-run.ts).
      if (backgroundRunner) await stopLocalRuns(backgroundRunner)
      // Let provisioning and destruction started by this process finish their writes first.
      await Promise.allSettled([...runtime.interns.tasks])
      // Records of answers already sent are written before the store goes.
      await runtime.ledger?.close()
      await runtime.auditLog.close()
      await runtime.storedResponses?.close()
      await runtime.backgroundRuns?.close()
      await runtime.inference.spend.book.close()
      await runtime.inference.performance.close()
      await settlementRecovery?.close()
      await documents.close()
      await similarity.close()
      config.metrics?.exporter.close?.()
      await storage.close()
    },
  }
}
