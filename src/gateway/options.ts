/** `createGateway` options, validated once at start-up. */

import * as v from 'valibot'
import type { StorageDriver } from '../storage/contract'
import type { Logger } from '../core/logger'
import { MODEL_SLUG_PATTERN } from '../core/patterns'
import { DEFAULT_BODY_LIMIT } from '../core/body'
import type { ModelEntry } from '../engine/models'
import { PriceOverridesSchema } from '../engine/prices.schemas'
import { isPriceSourceUrl } from '../engine/price-refresh'
import { SEARCH_ENGINE_IDS } from '../features/server-tools/search-engines'
import type { UpstreamTransport } from '../transport/contract'
import { EXECUTABLE_TOOL_TYPES, type ExecutableToolType, type ToolExecutor } from '../features/server-tools/executor-types'
import type { PdfOcrBackend } from '../features/plugins/settings'
import type { PdfTextExtractor } from '../features/plugins/pdf-text'
import type { EventLoopMonitor } from '../core/event-loop'
import type { MetricsExporter, TelemetryObserver } from '../core/telemetry'
import type { TracerProvider } from '@opentelemetry/api'
import type { InternRuntime } from '../interns/runtime'
import type { HostResolver } from '../core/upstream-guard'
import { PROVIDER_APIS } from '../providers/catalog'
import type { ProviderAdapter } from '../providers/contract'
import { DEFAULT_LEASE_TTL_MS } from '../core/lease'

const isStorageDriver = (value: unknown): value is StorageDriver =>
  typeof value === 'object' &&
  value !== null &&
  ['create', 'createMany', 'get', 'findByUnique', 'update', 'delete', 'list', 'increment', 'hold', 'settle', 'renewHolds', 'releaseExpiredHolds', 'readTallies', 'close'].every(
    (method) => typeof (value as Record<string, unknown>)[method] === 'function',
  )

const isLogger = (value: unknown): value is Logger =>
  typeof value === 'object' &&
  value !== null &&
  ['debug', 'info', 'warn', 'error'].every((method) => typeof (value as Record<string, unknown>)[method] === 'function')

const isProviderAdapter = (value: unknown): value is ProviderAdapter =>
  typeof value === 'object' &&
  value !== null &&
  (value as Record<string, unknown>).contractVersion === 1 &&
  typeof (value as Record<string, unknown>).api === 'string' &&
  ['buildRequest', 'readResult', 'readStream', 'toError'].every((method) => typeof (value as Record<string, unknown>)[method] === 'function')

const ModelSlugSchema = v.pipe(v.string(), v.regex(MODEL_SLUG_PATTERN, 'must be a model slug <author>/<name>'))

const PositiveMsSchema = v.pipe(v.number(), v.integer(), v.minValue(1))
const ByteLimitSchema = v.pipe(v.number(), v.integer(), v.minValue(1024))
// A CIDR range as written (`10.0.0.0/8`, `fd00::/8`); createUpstreamGuard parses it.
const CidrSchema = v.pipe(v.string(), v.regex(/^[0-9A-Fa-f:.]+\/\d{1,3}$/, 'must be a CIDR range such as 10.0.0.0/8'))
const HostSuffixSchema = v.pipe(v.string(), v.regex(/^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/, 'must be a lowercase DNS suffix such as openai.azure.us'))

/** Upstream deadlines (ms) and how much of an answer the gateway holds (bytes). */
export const UpstreamOptionsSchema = v.strictObject({
  connectTimeoutMs: v.optional(PositiveMsSchema),
  firstByteTimeoutMs: v.optional(PositiveMsSchema),
  /** Longest silence between two chunks of an upstream body (default 60 s). */
  idleTimeoutMs: v.optional(PositiveMsSchema),
  totalTimeoutMs: v.optional(PositiveMsSchema),
  /** Largest whole (non-streaming) upstream answer (default 32 MiB). */
  maxResponseBytes: v.optional(ByteLimitSchema),
  /** Largest single event of a streamed upstream answer (default 8 MiB). */
  maxEventBytes: v.optional(ByteLimitSchema),
})

/**
 * Where the gateway may connect for a caller who chose the upstream location (an Azure BYOK endpoint or
 * resource). Default: https on the default port, hosts under the provider's own domains, public addresses only.
 */
/** Where refreshed prices come from (`PriceSourceOptions` in src/engine/price-refresh.ts): a URL or a loader, not both. */
export const PriceSourceOptionsSchema = v.pipe(
  v.strictObject({
    url: v.optional(v.pipe(v.string(), v.check(isPriceSourceUrl, 'must be an https:// URL (http:// only on a loopback host)'))),
    load: v.optional(v.custom<() => Promise<unknown>>((value) => typeof value === 'function', 'must be a function returning a promise of the document')),
    label: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(200))),
    refreshSeconds: v.optional(v.union([v.literal(false), v.pipe(v.number(), v.integer(), v.minValue(10), v.maxValue(604_800))], 'must be false or a whole number of seconds from 10 to 604800')),
    timeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(120_000))),
    maxBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024), v.maxValue(64 * 1024 * 1024))),
  }),
  v.check((source) => (source.url === undefined) !== (source.load === undefined), 'must have either url or load'),
)

export const UpstreamGuardOptionsSchema = v.strictObject({
  /** `true` allows loopback, private, link-local (cloud metadata too) and other non-public addresses; a list of CIDR ranges allows those only. */
  allowPrivateNetworks: v.optional(v.union([v.boolean(), v.array(CidrSchema)])),
  /** Accept `http://` as well as `https://`. */
  allowHttp: v.optional(v.boolean()),
  /** Ports accepted besides the scheme's default. */
  allowedPorts: v.optional(v.array(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65_535)))),
  /** More DNS suffixes per family, e.g. `{ azure: ['openai.azure.us'] }`. */
  extraHostSuffixes: v.optional(v.record(v.string(), v.array(HostSuffixSchema))),
  /** Name resolution for the address checks (default: the system's, `node:dns` lookup). */
  resolve: v.optional(v.custom<HostResolver>((value) => typeof value === 'function', 'must be a function (hostname) => Promise<{address, family}[]>')),
})

/** `service:web_fetch`: how much of a page, how long, how many redirects, and where it may go. */
export const WebFetchOptionsSchema = v.strictObject({
  maxBytes: v.optional(ByteLimitSchema),
  timeoutMs: v.optional(PositiveMsSchema),
  maxRedirects: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(20))),
  userAgent: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** The guard's options for fetched pages (default: https or http, default ports, public addresses only). */
  guard: v.optional(UpstreamGuardOptionsSchema),
})

const PriceSchema = v.pipe(v.number(), v.minValue(0), v.maxValue(100))

/** A search engine's API reached with a key: the key, the base URL (default the engine's), the price per search. */
const KeyedSearchEngineSchema = v.strictObject({
  apiKey: v.pipe(v.string(), v.minLength(1)),
  baseURL: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
  pricePerRequest: v.optional(PriceSchema),
})

/** `service:web_search`: the engines the operator runs or pays for, each with its base URL, key and price per search. */
export const WebSearchOptionsSchema = v.strictObject({
  default: v.optional(v.picklist(SEARCH_ENGINE_IDS)),
  searxng: v.optional(
    v.strictObject({
      baseURL: v.pipe(v.string(), v.url('must be a URL')),
      headers: v.optional(v.record(v.string(), v.string())),
      pricePerRequest: v.optional(PriceSchema),
    }),
  ),
  exa: v.optional(KeyedSearchEngineSchema),
  firecrawl: v.optional(KeyedSearchEngineSchema),
  parallel: v.optional(KeyedSearchEngineSchema),
  perplexity: v.optional(KeyedSearchEngineSchema),
})

const ToolExecutorSchema = v.custom<ToolExecutor>(
  (value) => typeof value === 'object' && value !== null && typeof (value as { run?: unknown }).run === 'function',
  'must have a run(call, context) function',
)

/** The operator's runners of sandbox and file tools, by tool type. */
export const ToolExecutorsSchema = v.strictObject(
  Object.fromEntries(EXECUTABLE_TOOL_TYPES.map((type) => [type, v.optional(ToolExecutorSchema)])) as Record<ExecutableToolType, v.OptionalSchema<typeof ToolExecutorSchema, undefined>>,
)

/** Server tools the gateway runs (`service:*` tools of `POST /responses`). */
export const ServerToolOptionsSchema = v.strictObject({
  webFetch: v.optional(WebFetchOptionsSchema),
  webSearch: v.optional(WebSearchOptionsSchema),
  executors: v.optional(ToolExecutorsSchema),
})

const OcrBackendSchema = v.custom<PdfOcrBackend>((value) => typeof value === 'function', 'must be a function (pdf, context) => Promise<{pages}>')

/** Plugins' settings: the moderation API, and how the file parser reads PDFs (docs/decisions.md, Plugins). */
export const PluginOptionsSchema = v.strictObject({
  moderation: v.optional(
    v.strictObject({
      baseURL: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
      apiKey: v.pipe(v.string(), v.minLength(1)),
      model: v.optional(v.pipe(v.string(), v.minLength(1))),
      providerName: v.optional(v.pipe(v.string(), v.minLength(1))),
    }),
  ),
  fileParser: v.optional(
    v.strictObject({
      maxBytes: v.optional(ByteLimitSchema),
      maxPages: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000))),
      maxCharacters: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100_000_000))),
      maxDecompressedBytes: v.optional(ByteLimitSchema),
      timeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(600_000))),
      workers: v.optional(
        v.union([
          v.literal(false),
          v.strictObject({
            threads: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(64))),
            heapMb: v.optional(v.pipe(v.number(), v.integer(), v.minValue(16), v.maxValue(16_384))),
            maxQueued: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10_000))),
            queueTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(600_000))),
          }),
        ]),
      ),
      extractor: v.optional(v.custom<PdfTextExtractor>((value) => typeof value === 'function', 'must be a function (pdf, limits, signal) => Promise<outcome>')),
      ocr: v.optional(v.strictObject({ 'mistral-ocr': v.optional(OcrBackendSchema), 'cloudflare-ai': v.optional(OcrBackendSchema) })),
    }),
  ),
})

/** Upstream attempts per request, the retry budget per gateway, the longest `Retry-After` passed on. */
export const RetryOptionsSchema = v.strictObject({
  maxAttempts: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000))),
  budget: v.optional(
    v.union([
      v.literal(false),
      v.strictObject({
        ratio: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(100))),
        minRetries: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
        windowSeconds: v.optional(v.pipe(v.number(), v.minValue(1), v.maxValue(3600))),
      }),
    ]),
  ),
  maxRetryAfterSeconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(86_400))),
})

/** Skipping endpoints and BYOK keys that keep failing; `false` turns it off. */
/** The router models' settings (docs/decisions.md, "Plugins: routers and fusion"). */
export const RouterOptionsSchema = v.strictObject({
  codingScores: v.optional(v.record(ModelSlugSchema, v.pipe(v.number(), v.minValue(0), v.maxValue(1)))),
  stickySessions: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
})

export const OutlierDetectionOptionsSchema = v.union([
  v.literal(false),
  v.strictObject({
    consecutiveFailures: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
    baseEjectionSeconds: v.optional(v.pipe(v.number(), v.minValue(0.001))),
    maxEjectionSeconds: v.optional(v.pipe(v.number(), v.minValue(0.001))),
  }),
])

/** How a model's endpoints are ordered when the caller orders none (docs/decisions.md, "Load balancing"). */
export const RoutingOptionsSchema = v.strictObject({
  balancing: v.optional(v.picklist(['weighted', 'cheapest'], 'must be weighted or cheapest')),
  random: v.optional(v.custom<() => number>((value) => typeof value === 'function', 'must be a function returning a number in [0, 1)')),
})

/** Endpoint speed measurement for the speed sorts and preferences (docs/decisions.md, "Routing by measured speed"). */
export const EndpointPerformanceOptionsSchema = v.union([
  v.literal(false),
  v.strictObject({
    halfLifeSeconds: v.optional(v.pipe(v.number(), v.minValue(1), v.maxValue(86_400))),
    mergeIntervalMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(10), v.maxValue(3_600_000))),
  }),
])

/** How much of each intern's conversation is kept. */
export const InternHistoryOptionsSchema = v.strictObject({
  maxItems: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  maxBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024))),
})

/** Provisioning leases and the sweep that takes abandoned runs over. */
export const InternProvisioningOptionsSchema = v.pipe(
  v.strictObject({
    leaseTtlMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100))),
    heartbeatIntervalMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(10))),
    sweepIntervalMs: v.optional(v.union([v.literal(false), v.pipe(v.number(), v.integer(), v.minValue(10))])),
  }),
  v.check(
    (settings) => settings.heartbeatIntervalMs === undefined || settings.heartbeatIntervalMs < (settings.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS),
    'heartbeatIntervalMs must be shorter than leaseTtlMs',
  ),
)

/** Said of a retention setting given beside `enabled: false`: with no records there is nothing to keep or sweep. */
const LEDGER_OFF_CONFLICT = 'has no effect with enabled: false (the usage ledger keeps no records)'

/** The response cache's bounds and what a hit is charged (docs/decisions.md, Response cache). */
export const ResponseCacheOptionsSchema = v.strictObject({
  maxEntryBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  maxWorkspaceBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  maxWorkspaceEntries: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  hitCharge: v.optional(v.pipe(v.number(), v.minValue(0))),
  /**
   * The semantic cache, which workspaces opt in to (`cache.semantic`): a request is answered from a stored answer of the
   * same shape whose prompt's embedding by `model` (an embedding model of the catalog) is at least `threshold` similar
   * (cosine, default 0.95), among the workspace's `compareLast` most recent (default 100, at most 1 000).
   */
  semantic: v.optional(
    v.strictObject({
      model: ModelSlugSchema,
      threshold: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1))),
      compareLast: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000))),
    }),
  ),
})

/** The usage ledger: on or off, and its retention (docs/decisions.md, Usage ledger). */
export const LedgerOptionsSchema = v.pipe(
  v.strictObject({
    /**
     * `false` turns the ledger off: no records are written or swept, `GET /generation` answers 404 and
     * `GET /activity` an empty list. Spend limits and credits keep working (they are counters of their own).
     */
    enabled: v.optional(v.boolean()),
    /** Days a generation record is kept after its request (default 30). */
    retentionDays: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(3650))),
    /** How often this process deletes expired records (ms, default 10 minutes); `false` when another process sweeps. */
    sweepIntervalMs: v.optional(v.union([v.literal(false), v.pipe(v.number(), v.integer(), v.minValue(1000))])),
  }),
  v.forward(v.check((ledger) => ledger.enabled !== false || ledger.retentionDays === undefined, LEDGER_OFF_CONFLICT), ['retentionDays']),
  v.forward(v.check((ledger) => ledger.enabled !== false || ledger.sweepIntervalMs === undefined, LEDGER_OFF_CONFLICT), ['sweepIntervalMs']),
)

/** The audit log of administrative changes: how long entries are kept (docs/decisions.md, Audit log). */
export const AuditLogOptionsSchema = v.strictObject({
  /** Days an audit entry is kept after the change (default 90). */
  retentionDays: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(3650))),
  /** How often this process deletes expired entries (ms, default 10 minutes); `false` when another process sweeps. */
  sweepIntervalMs: v.optional(v.union([v.literal(false), v.pipe(v.number(), v.integer(), v.minValue(1000))])),
})

export const StoredResponsesOptionsSchema = v.strictObject({
  /** Whether `/responses` answers may be stored (`store`, `previous_response_id`, `GET /responses/{id}`); default true. */
  enabled: v.optional(v.boolean()),
  /** Days a stored response is kept (default 30). */
  retentionDays: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(3650))),
  /** How often this process deletes expired responses (ms, default 10 minutes); `false` when another process sweeps. */
  sweepIntervalMs: v.optional(v.union([v.literal(false), v.pipe(v.number(), v.integer(), v.minValue(1000))])),
  /**
   * Background runs (`background: true`, docs/decisions.md, Background runs): how long a run counts as alive after its
   * process last renewed its lease (ms, default 30 s; renewed three times per lease), how often this process looks for
   * runs whose process died to take them over (ms, default 15 s; `false` never), and how often a run's new events are
   * written to the store (ms, default 250).
   */
  background: v.optional(
    v.strictObject({
      leaseTtlMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(3))),
      sweepIntervalMs: v.optional(v.union([v.literal(false), v.pipe(v.number(), v.integer(), v.minValue(1))])),
      flushIntervalMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
    }),
  ),
})

/** A header name, lower-cased. */
export const TrustedHostHeaderSchema = v.pipe(v.string(), v.regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'must be a header name'), v.toLowerCase())

export const GatewayOptionsSchema = v.strictObject({
  /** Where all state lives. Defaults to a fresh in-memory store (lost on exit). */
  storage: v.optional(v.custom<StorageDriver>(isStorageDriver, 'must implement the StorageDriver contract')),
  /**
   * The read cache of keys, accounts, workspaces, provider credentials, credit grants, guardrails and presets
   * (docs/decisions.md, "Read cache"): a request reads one shared generation from the store instead of these records,
   * and still sees every change that returned before it arrived, from any process. `false` reads the store every
   * time. Stores in this process's memory (memory, file) are read directly whatever this says.
   */
  readCache: v.optional(v.boolean()),
  /** Path prefix of every route. */
  basePath: v.optional(
    v.pipe(v.string(), v.regex(/^(\/[A-Za-z0-9._~-]+)*\/?$/, 'must be a path such as /api/v1, or empty')),
    '/api/v1',
  ),
  /**
   * The operator's dashboard (docs/dashboard.md): a page that reads this gateway's API with a management key the
   * operator types in. Off unless `true` or `{ path }`; served at `path` (default `/dashboard`), outside `basePath`.
   */
  dashboard: v.optional(
    v.union(
      [v.boolean(), v.strictObject({ path: v.optional(v.pipe(v.string(), v.regex(/^(\/[A-Za-z0-9._~-]+)+$/, 'must be a path such as /dashboard, without a trailing slash'))) })],
      'must be true, false or { path }',
    ),
  ),
  /**
   * Observers of the gateway's telemetry (src/core/telemetry.ts; docs/operations.md): typed events for each request,
   * upstream attempt, ejection, spend refusal, server-tool call, stage, store call. None by default, and then no event
   * is built.
   */
  observers: v.optional(v.array(v.custom<TelemetryObserver>((value) => typeof value === 'object' && value !== null, 'must be an object of event handlers'))),
  /**
   * Traces (docs/operations.md): `true` turns the telemetry into OpenTelemetry spans through `@opentelemetry/api`, sent
   * to the SDK the host registered (nothing is recorded without one), or to `{ tracerProvider }`. Off by default, and
   * then no span and no event is made.
   */
  tracing: v.optional(
    v.union(
      [
        v.boolean(),
        v.strictObject({
          tracerProvider: v.custom<TracerProvider>((value) => typeof (value as TracerProvider | null)?.getTracer === 'function', 'must be an OpenTelemetry TracerProvider'),
        }),
      ],
      'must be true, false or { tracerProvider }',
    ),
  ),
  /**
   * Metrics (docs/operations.md): `exporter` observes the telemetry (`createPrometheusMetrics()` from `modelgate/metrics`)
   * and is served at `path` (default `/metrics`, outside `basePath`; `false` to serve it only through `gateway.metrics`),
   * to management keys unless `isPublic`.
   */
  metrics: v.optional(
    v.strictObject({
      exporter: v.custom<MetricsExporter>(
        (value) => typeof value === 'object' && value !== null && typeof (value as MetricsExporter).render === 'function' && typeof (value as MetricsExporter).observer === 'object',
        'must be a metrics exporter (createPrometheusMetrics() from modelgate/metrics)',
      ),
      path: v.optional(v.union([v.literal(false), v.pipe(v.string(), v.regex(/^(\/[A-Za-z0-9._~-]+)+$/, 'must be a path such as /metrics, without a trailing slash'))])),
      isPublic: v.optional(v.boolean()),
    }),
  ),
  /** Default request body limit in bytes (intern routes always use the spec's 1 MiB). */
  bodyLimit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024), v.maxValue(1024 * 1024 * 1024)), DEFAULT_BODY_LIMIT),
  /**
   * Body limit of model requests (`/responses`, `/chat/completions`, `/messages`, `/embeddings` and presets' routes),
   * in bytes (default 20 MiB): they carry whole conversations, inline images and files. Other routes take `bodyLimit`.
   */
  inferenceBodyLimit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024), v.maxValue(1024 * 1024 * 1024)), 20 * 1024 * 1024),
  /**
   * How long a whole request body may take to arrive, in ms; a client that stalls mid-body gets 408
   * and its connection is closed. Raise it for large uploads over slow links.
   */
  requestBodyTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(86_400_000))),
  /**
   * The deadline of a whole request, in ms (default 600000, ten minutes): its fallback attempts, server-tool turns
   * and tool runs, and fusion runs share it, each waiting only for what is left; then 524 naming it (an in-band
   * failure once a stream has started). `upstream.*TimeoutMs` still bound each single exchange.
   */
  requestTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(86_400_000))),
  /** Where diagnostics go; `false` for none. Defaults to JSON lines on stderr at `info`. */
  logger: v.optional(v.union([v.literal(false), v.custom<Logger>(isLogger, 'must have debug, info, warn and error methods')])),
  /** Defaults for workspaces created from now on. */
  workspaceDefaults: v.optional(
    v.strictObject({
      textModel: v.optional(ModelSlugSchema),
      imageModel: v.optional(ModelSlugSchema),
      providerSort: v.optional(v.picklist(['price', 'throughput', 'latency'])),
    }),
  ),
  /**
   * Master keys for secrets at rest (BYOK), each 32 bytes as 64 hex characters or base64. The first
   * seals new secrets; all of them open existing ones, so a rotation lists the new key first.
   */
  encryptionKeys: v.optional(v.array(v.string())),
  /** Per-API-key request limit on every authenticated route; none when omitted. */
  rateLimit: v.optional(
    v.strictObject({
      requests: v.pipe(v.number(), v.integer(), v.minValue(1)),
      windowSeconds: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(86_400)),
    }),
  ),
  /**
   * Upstream providers: built-in ones take a shared `apiKey`, `baseURL`, `headers`, `options`;
   * others (self-hosted vLLM/Ollama, proxies) also need `api` (their wire format) and `baseURL`. A provider
   * with a wire format of its own brings its `adapter` (the contract in src/providers/contract.ts) instead of `api`.
   */
  providers: v.optional(
    v.record(
      v.pipe(v.string(), v.regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'provider ids are lowercase slugs')),
      v.strictObject({
        api: v.optional(v.picklist(PROVIDER_APIS)),
        adapter: v.optional(
          v.custom<ProviderAdapter>(isProviderAdapter, 'must implement the provider contract: contractVersion 1, api, buildRequest, readResult, readStream and toError'),
        ),
        displayName: v.optional(v.string()),
        baseURL: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
        apiKey: v.optional(v.pipe(v.string(), v.minLength(1))),
        isKeyless: v.optional(v.boolean()),
        headers: v.optional(v.record(v.string(), v.string())),
        options: v.optional(v.record(v.string(), v.string())),
      }),
    ),
  ),
  /**
   * Serve the free demo models `demo/chat`, `demo/tools` and `demo/reasoning` (src/gateway/demo-models.ts): scripted
   * answers at price 0 that need no provider key, for a first request and for trying clients. Off by default; the
   * runner turns them on in development mode (`--dev`) or with `MODELGATE_DEMO_MODELS=1`.
   */
  demoModels: v.optional(v.boolean()),
  /** Models added to, or replacing by slug, the built-in catalog. */
  models: v.optional(v.array(v.custom<ModelEntry>((value) => typeof value === 'object' && value !== null && 'slug' in value && 'endpoints' in value, 'must be a model entry with slug and endpoints'))),
  /**
   * Price overrides over the catalog (built-ins and `models`): each names a `model`, optionally one `provider`'s
   * endpoint of it, and only the `pricing` fields that change (USD per token; `null` clears an optional price).
   */
  prices: v.optional(PriceOverridesSchema),
  /** A price document reloaded without a restart (`{ prices: [...] }`), applied over `prices`. */
  priceSource: v.optional(PriceSourceOptionsSchema),
  /** Upstream HTTP: `undiciTransport()` on Node (pooled); the runtime's fetch otherwise. */
  transport: v.optional(v.custom<UpstreamTransport>((value) => typeof value === 'function', 'must be a transport function')),
  upstream: v.optional(UpstreamOptionsSchema),
  upstreamGuard: v.optional(UpstreamGuardOptionsSchema),
  /** Server tools: `webFetch` limits and guard, `webSearch` engines (docs/decisions.md, Server tools). */
  serverTools: v.optional(ServerToolOptionsSchema),
  /** Plugins: `moderation` (the moderation API; the `openai` provider's key when absent) and `fileParser` (PDF caps, OCR backends). */
  plugins: v.optional(PluginOptionsSchema),
  /**
   * The router models (docs/decisions.md, "Plugins: routers and fusion"): `codingScores` (0–1 by model slug) add to or
   * replace the pareto-router's built-in table; `stickySessions` bounds how many sessions' choices are remembered
   * (default 10 000; 0 for none).
   */
  routers: v.optional(RouterOptionsSchema),
  /**
   * How many upstream attempts a request may make: `maxAttempts` per request (default 3), a retry `budget` per
   * gateway (`false` for none), and the most `Retry-After` seconds passed on to callers.
   */
  retry: v.optional(RetryOptionsSchema),
  /** Skipping endpoints and BYOK keys that keep failing (`false` turns it off). */
  outlierDetection: v.optional(OutlierDetectionOptionsSchema),
  /**
   * The order of a model's endpoints when the request names none (no `provider.sort` or `order`): `balancing:
   * 'weighted'` (default), OpenRouter's load balancing (a random pick among the cheapest stable endpoints, weighted by
   * the inverse square of the price; endpoints that failed in the last 30 s last), or `'cheapest'`, the cheapest
   * endpoint first every time (the testing kit's default, so tests see one order). `random` replaces `Math.random`
   * for the pick, in tests.
   */
  routing: v.optional(RoutingOptionsSchema),
  /**
   * Latency and throughput measured per endpoint from the gateway's own traffic, decayed with a half-life of
   * `halfLifeSeconds` (default 150) and merged across processes through the store every `mergeIntervalMs`
   * (default 15 s); `provider.sort` `latency`/`throughput`, `preferred_*` and `:nitro` route on them. `false` turns
   * measuring off: those sorts then keep catalog order.
   */
  endpointPerformance: v.optional(EndpointPerformanceOptionsSchema),
  /**
   * Refuse (402) requests of accounts whose granted credits are used up (`gateway.admin.grantCredits`,
   * `modelgate credits grant`). Off by default: credits and usage are counted, and only key limits and
   * workspace budgets refuse requests.
   */
  enforceCredits: v.optional(v.boolean()),
  /**
   * Spend holds (docs/decisions.md, "Books that balance"): a request's reservation is leased for `leaseMs`
   * (default 60 s, 1 s to 1 h) and renewed every third of it while the request runs; once a process dies its holds
   * run out and any gateway on the store releases them, within about one and a half leases.
   */
  spend: v.optional(v.strictObject({ leaseMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1_000), v.maxValue(3_600_000))) })),
  /**
   * The host's event-loop monitor (`createEventLoopMonitor()` of `modelgate/adapters/node`; the runner passes one):
   * `/health/ready` reports its delay figures, and it is told which route each request runs.
   */
  eventLoop: v.optional(
    v.custom<EventLoopMonitor>(
      (value) => typeof value === 'object' && value !== null && typeof (value as { read?: unknown }).read === 'function',
      'must be an event-loop monitor with read()',
    ),
  ),
  /**
   * The response cache (docs/decisions.md, Response cache), used by requests that ask for it: the largest answer kept
   * (`maxEntryBytes`, default 1 MiB), what a workspace's entries may hold together (`maxWorkspaceBytes`, default
   * 64 MiB; `maxWorkspaceEntries`, default 1 000), and what a hit is charged in USD (`hitCharge`, default 0).
   */
  responseCache: v.optional(ResponseCacheOptionsSchema),
  /** Share of the list price charged on BYOK requests (default 0.05). */
  byokFeeRate: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1))),
  /** Reported as `service_metadata.region`. */
  region: v.optional(v.string()),
  /** How long a stream waits for content before committing the HTTP response with keep-alives (ms). */
  streamCommitAfterMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  /** Interval of `: PROCESSING` keep-alive comments while a committed stream waits (ms). */
  keepAliveMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(10))),
  /** Where interns run (provision, suspend, destroy, chat); the built-in in-process runtime by default. */
  internRuntime: v.optional(
    v.custom<InternRuntime>(
      (value) => typeof value === 'object' && value !== null && ['provision', 'suspend', 'destroy', 'chat'].every((name) => typeof (value as Record<string, unknown>)[name] === 'function'),
      'must implement provision, suspend, destroy and chat',
    ),
  ),
  /**
   * How much of each intern's conversation is kept, and so sent upstream with every chat turn: at
   * most `maxItems` items (default 400) and `maxBytes` serialized bytes (default 2 MiB); the oldest
   * go first. A single turn larger than that is kept whole until the next turn.
   */
  internHistory: v.optional(InternHistoryOptionsSchema),
  /**
   * Provisioning leases: a run renews its lease every `heartbeatIntervalMs` (default a third of
   * `leaseTtlMs`, 30 s); once a lease expires (its gateway died) a provision call or any gateway's
   * sweep (every `sweepIntervalMs`, default 15 s; `false` for none) takes the run over.
   */
  internProvisioning: v.optional(InternProvisioningOptionsSchema),
  /** Hostnames of regional deployments: intern routes answer 403 there (spec Authentication 3). */
  regionalHostnames: v.optional(v.array(v.pipe(v.string(), v.minLength(1)))),
  /** This whole deployment is regional: intern routes answer 403 whatever the hostname. */
  isRegionalDeployment: v.optional(v.boolean()),
  /**
   * A header your reverse proxy sets to the hostname clients asked for (`x-forwarded-host`, or
   * `forwarded` for RFC 7239), read for host-based decisions such as `regionalHostnames`. Without it,
   * the host the server was reached on decides and forwarded headers are ignored: any client can send them.
   */
  trustedHostHeader: v.optional(TrustedHostHeaderSchema),
  /**
   * The usage ledger: one record per served request, behind `GET /generation` and `GET /activity`, kept
   * `retentionDays` (default 30) and swept every `sweepIntervalMs` (default 10 minutes; `false` for none);
   * `enabled: false` records nothing (spend limits and credits still count).
   */
  ledger: v.optional(LedgerOptionsSchema),
  /**
   * The audit log: one entry per administrative change (keys, BYOK credentials, workspaces, budgets, guardrails,
   * credit grants, presets, interns), behind `GET /audit-log`, kept `retentionDays` (default 90) and swept every
   * `sweepIntervalMs` (default 10 minutes; `false` for none). Always on.
   */
  auditLog: v.optional(AuditLogOptionsSchema),
  /**
   * Stored responses (docs/decisions.md, Stored responses): absent or `enabled: false`, nothing is stored and `store:
   * true` or `previous_response_id` is a 400; set, a `/responses` answer is stored unless the request says `store: false`
   * or its workspace turned storing off, kept `retentionDays` (default 30) and swept every `sweepIntervalMs` (default
   * 10 minutes; `false` for none).
   */
  storedResponses: v.optional(StoredResponsesOptionsSchema),
  /**
   * Which worker process of a cluster this gateway serves in (`cluster.worker.id`, a process manager's instance
   * number): `GET /health` and `GET /health/ready` report it as `worker`, so a probe can tell apart the processes
   * behind one port. Absent: they report none.
   */
  worker: v.optional(v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(0, 'must be 0 or more'), v.maxValue(Number.MAX_SAFE_INTEGER, 'must be a safe integer'))),
  /** Clock, for tests. */
  now: v.optional(v.custom<() => Date>((value) => typeof value === 'function', 'must be a function returning a Date')),
})

export type GatewayOptions = v.InferInput<typeof GatewayOptionsSchema>
