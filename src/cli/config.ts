/**
 * Runner configuration: command-line flags win over environment variables, which win over a
 * JSON config file, which wins over defaults. Validated once; errors name the setting.
 */

import { readFile } from 'node:fs/promises'
import * as v from 'valibot'
import { parseInput } from '../core/validation'
import { MODEL_SLUG_PATTERN } from '../core/patterns'
import { CONVENTIONAL_KEY_VARIABLES } from '../providers/catalog'
import { PriceOverridesSchema } from '../engine/prices.schemas'
import { isPriceSourceUrl } from '../engine/price-refresh'
import {
  InternHistoryOptionsSchema,
  InternProvisioningOptionsSchema,
  OutlierDetectionOptionsSchema,
  EndpointPerformanceOptionsSchema,
  RouterOptionsSchema,
  PluginOptionsSchema,
  ResponseCacheOptionsSchema,
  RetryOptionsSchema,
  TrustedHostHeaderSchema,
  UpstreamGuardOptionsSchema,
  UpstreamOptionsSchema,
  WebFetchOptionsSchema,
  WebSearchOptionsSchema,
} from '../gateway/options'

export const STORAGE_URL = /^(rediss?|postgres(ql)?|mysql|mariadb):\/\/\S+$/
/** `sqlite`, or `sqlite:<path>` for a file elsewhere than the data directory. */
export const SQLITE_STORAGE = /^sqlite(:.+)?$/

/** More worker processes than this is a typo, not a machine. */
export const MAX_WORKERS = 256
const WORKERS_RULE = `must be a whole number from 1 to ${MAX_WORKERS}, or auto (one per core)`

const PortSchema = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(65535))

/** Each setting on its own; `RunnerConfigSchema` adds the checks between settings. */
export const RunnerSettingsSchema = v.strictObject({
  port: v.optional(PortSchema, 8787),
  host: v.optional(v.pipe(v.string(), v.minLength(1)), '127.0.0.1'),
  basePath: v.optional(v.string(), '/api/v1'),
  /**
   * `sqlite` (a SQLite file, `<dataDir>/modelgate.db`, default), `sqlite:<path>` (one elsewhere), `memory` (lost on
   * exit), `file` (the embedded store of earlier versions, kept for now), or a server URL: `redis://…`, `rediss://…`,
   * `postgres://…`, `postgresql://…`, `mysql://…`, `mariadb://…`.
   */
  storage: v.optional(
    v.pipe(
      v.string(),
      // Worded without the submitted text, which a message may not repeat (src/core/validation.ts).
      v.check((value) => !/^sqlite:\/*$/.test(value), 'a SQLite store needs the path of its file after the colon'),
      v.check(
        (value) => SQLITE_STORAGE.test(value) || value === 'memory' || value === 'file' || STORAGE_URL.test(value),
        'must be "sqlite", "sqlite:<path>", "memory", "file", or a redis://, postgres:// or mysql:// URL',
      ),
    ),
    'sqlite',
  ),
  /** Key prefix on Redis (default `modelgate:`). */
  redisPrefix: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** PostgreSQL schema, or MySQL/MariaDB database, for modelgate's tables. */
  sqlSchema: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'must be a plain SQL identifier'))),
  rateLimitRequests: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  rateLimitWindowSeconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(86_400)), 60),
  /** Refuse (402) requests of accounts whose granted credits are used up (see `createGateway`'s `enforceCredits`). */
  enforceCredits: v.optional(v.boolean()),
  /** The SQLite store's file (`modelgate.db`), the development key, and the embedded store of earlier versions. */
  dataDir: v.optional(v.pipe(v.string(), v.minLength(1)), '.modelgate'),
  /** `off` records no generations (see `createGateway`'s `ledger.enabled`); default `on`. */
  ledger: v.optional(v.picklist(['on', 'off'])),
  /** Days the usage ledger keeps each generation record (see `createGateway`'s `ledger`; default 30). */
  ledgerRetentionDays: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(3650))),
  /** `on` stores `/responses` answers (see `createGateway`'s `storedResponses`); default `off`. */
  storedResponses: v.optional(v.picklist(['on', 'off'])),
  /** Days a stored response is kept (see `createGateway`'s `storedResponses`; default 30). */
  storedResponseRetentionDays: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(3650))),
  /** Days the audit log keeps each entry (see `createGateway`'s `auditLog`; default 90). */
  auditLogRetentionDays: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(3650))),
  bodyLimit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024))),
  /** Body limit of model requests, in bytes (see `createGateway`'s `inferenceBodyLimit`; default 20 MiB). */
  inferenceBodyLimit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024))),
  /** How long a whole request body may take to arrive, in ms (408 after that). */
  requestBodyTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(86_400_000))),
  /** The deadline of a whole request, every attempt, turn and run of it, in ms (see `createGateway`'s `requestTimeoutMs`). */
  requestTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(86_400_000))),
  /** A spend hold's lease in ms (see `createGateway`'s `spend.leaseMs`; default 60000). */
  spendLeaseMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1_000), v.maxValue(3_600_000))),
  /** `off` reads keys, accounts, workspaces and the like from the store on every request (see `createGateway`'s `readCache`). */
  readCache: v.optional(v.picklist(['on', 'off'])),
  /** How a model's endpoints are ordered when a request orders none (see `createGateway`'s `routing.balancing`). */
  routingBalancing: v.optional(v.picklist(['weighted', 'cheapest'], 'must be weighted or cheapest')),
  logLevel: v.optional(v.picklist(['debug', 'info', 'warn', 'error']), 'info'),
  /** Master keys for BYOK secrets, primary first, comma-separated in the environment (never logged). */
  encryptionKeys: v.optional(v.array(v.string())),
  /** Development mode: generates and keeps an encryption key in `dataDir` when none is configured, and serves the demo models. */
  dev: v.optional(v.boolean(), false),
  /** Serve the free demo models (`demo/chat`, `demo/tools`, `demo/reasoning`; see `createGateway`'s `demoModels`). Unset: on in development mode only. */
  demoModels: v.optional(v.boolean()),
  /** Raw management key ensured at start (never logged). */
  managementKey: v.optional(v.string()),
  /**
   * Shut down when the parent process goes away (its pid no longer exists). Unset: on when started by npm or
   * npx, whose wrappers can die on SIGTERM and leave the gateway orphaned, holding the store.
   */
  watchParent: v.optional(v.boolean()),
  /**
   * Worker processes serving one port (`node:cluster`): a whole number, or `auto` for one per core
   * (`os.availableParallelism()`). Default 1: the runner serves in its own process. More than one needs a store
   * several processes can share (src/cli/storage.ts, `storeSharing`).
   */
  workers: v.optional(
    v.union(
      [v.literal('auto'), v.pipe(v.number(), v.integer(WORKERS_RULE), v.minValue(1, WORKERS_RULE), v.maxValue(MAX_WORKERS, WORKERS_RULE))],
      WORKERS_RULE,
    ),
  ),
  /** Seconds to let in-flight requests finish on shutdown. */
  shutdownGraceSeconds: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(600)), 10),
  /** Upstream providers (see `createGateway`'s `providers`); keys also come from the environment. */
  providers: v.optional(v.record(v.string(), v.record(v.string(), v.unknown()))),
  /** Extra or replaced model catalog entries (see `createGateway`'s `models`). */
  models: v.optional(v.array(v.record(v.string(), v.unknown()))),
  /** Price overrides over the catalog (see `createGateway`'s `prices`); config file only. */
  prices: v.optional(PriceOverridesSchema),
  /**
   * A price document reloaded without a restart: a file path (reloaded when it changes) or an `https://` URL
   * (reloaded every `priceRefreshSeconds`). Both reload on SIGHUP.
   */
  priceSource: v.optional(
    v.pipe(
      v.string(),
      v.minLength(1),
      v.check((value) => !/^[a-z][a-z0-9+.-]*:\/\//i.test(value) || isPriceSourceUrl(value), 'must be a file path, or an https:// URL (http:// only on a loopback host)'),
    ),
  ),
  /** Seconds between reloads of a URL price source (default 3600). */
  priceRefreshSeconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(10), v.maxValue(604_800))),
  workspaceDefaults: v.optional(
    v.strictObject({
      textModel: v.optional(v.pipe(v.string(), v.regex(MODEL_SLUG_PATTERN, 'must be a model slug <author>/<name>'))),
      imageModel: v.optional(v.pipe(v.string(), v.regex(MODEL_SLUG_PATTERN, 'must be a model slug <author>/<name>'))),
      providerSort: v.optional(v.picklist(['price', 'throughput', 'latency'])),
    }),
  ),
  /** Upstream deadlines and size bounds (see `createGateway`'s `upstream`); also `MODELGATE_UPSTREAM_*`. */
  upstream: v.optional(UpstreamOptionsSchema),
  /** Where caller-chosen upstreams may go (see `createGateway`'s `upstreamGuard`); config file only. */
  upstreamGuard: v.optional(v.omit(UpstreamGuardOptionsSchema, ['resolve'])),
  /** Server tools' settings (see `createGateway`'s `serverTools`); the fetch guard without `resolve`; config file only. */
  serverTools: v.optional(
    v.strictObject({
      webFetch: v.optional(v.strictObject({ ...WebFetchOptionsSchema.entries, guard: v.optional(v.omit(UpstreamGuardOptionsSchema, ['resolve'])) })),
      webSearch: v.optional(WebSearchOptionsSchema),
    }),
  ),
  /** Plugins' settings (see `createGateway`'s `plugins`); OCR backends are functions, so not here; config file only. */
  plugins: v.optional(
    v.strictObject({
      moderation: PluginOptionsSchema.entries.moderation,
      fileParser: v.optional(v.omit(v.unwrap(PluginOptionsSchema.entries.fileParser), ['ocr', 'extractor'])),
    }),
  ),
  // Config file only, each as `createGateway`'s option of the same name.
  retry: v.optional(RetryOptionsSchema),
  outlierDetection: v.optional(OutlierDetectionOptionsSchema),
  endpointPerformance: v.optional(EndpointPerformanceOptionsSchema),
  routers: v.optional(RouterOptionsSchema),
  responseCache: v.optional(ResponseCacheOptionsSchema),
  internHistory: v.optional(InternHistoryOptionsSchema),
  internProvisioning: v.optional(InternProvisioningOptionsSchema),
  regionalHostnames: v.optional(v.array(v.pipe(v.string(), v.minLength(1)))),
  isRegionalDeployment: v.optional(v.boolean()),
  trustedHostHeader: v.optional(TrustedHostHeaderSchema),
  /** Serve the operator's dashboard (see `createGateway`'s `dashboard`; docs/dashboard.md); default off. */
  dashboard: v.optional(v.boolean()),
  /** Where the dashboard is served (default `/dashboard`), outside `basePath`. */
  dashboardPath: v.optional(v.pipe(v.string(), v.regex(/^(\/[A-Za-z0-9._~-]+)+$/, 'must be a path such as /dashboard, without a trailing slash'))),
  /**
   * Prometheus metrics (docs/operations.md): `on` (default) serves them at `metricsPath` to management keys, `public` to
   * anyone, `off` counts nothing.
   */
  metrics: v.optional(v.picklist(['on', 'off', 'public'])),
  /** Where the metrics are served (default `/metrics`), outside `basePath`. */
  metricsPath: v.optional(v.pipe(v.string(), v.regex(/^(\/[A-Za-z0-9._~-]+)+$/, 'must be a path such as /metrics, without a trailing slash'))),
  /** Serve the metrics on this port of `host` instead, without a key (firewall it as the operator's own). */
  metricsPort: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(65535))),
  /** The embedded file store (`storage: "file"`) compacts its journal past this many bytes (see `openFileStorage`). */
  compactAfterBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024))),
})

/** The runner's whole configuration, validated once; a setting that another turns into a no-op is refused by name. */
export const RunnerConfigSchema = v.pipe(
  RunnerSettingsSchema,
  v.forward(
    v.check((config) => config.ledger !== 'off' || config.ledgerRetentionDays === undefined, 'has no effect with ledger off (no records are kept)'),
    ['ledgerRetentionDays'],
  ),
  v.forward(
    v.check((config) => config.storedResponses === 'on' || config.storedResponseRetentionDays === undefined, 'has no effect unless stored responses are on (MODELGATE_STORED_RESPONSES=on)'),
    ['storedResponseRetentionDays'],
  ),
  v.forward(v.check((config) => config.dashboard === true || config.dashboardPath === undefined, 'has no effect unless dashboard is on (MODELGATE_DASHBOARD=1)'), ['dashboardPath']),
  v.forward(v.check((config) => config.metrics !== 'off' || config.metricsPath === undefined, 'has no effect with metrics off'), ['metricsPath']),
  v.forward(v.check((config) => config.metrics !== 'off' || config.metricsPort === undefined, 'has no effect with metrics off'), ['metricsPort']),
  v.forward(v.check((config) => config.metrics !== 'public' || config.metricsPort === undefined, 'is public already: the metrics port asks for no key'), ['metricsPort']),
)

/** Settings the runner hands to `createGateway` as they are. */
export const GATEWAY_PASS_THROUGH = [
  'upstream',
  'upstreamGuard',
  'serverTools',
  'plugins',
  'retry',
  'outlierDetection',
  'endpointPerformance',
  'routers',
  'responseCache',
  'internHistory',
  'internProvisioning',
  'regionalHostnames',
  'isRegionalDeployment',
  'trustedHostHeader',
  'enforceCredits',
  'prices',
  'requestTimeoutMs',
] as const satisfies ReadonlyArray<keyof v.InferOutput<typeof RunnerConfigSchema>>

export type RunnerConfig = v.InferOutput<typeof RunnerConfigSchema>
export type RunnerConfigInput = v.InferInput<typeof RunnerConfigSchema>

const NUMERIC = new Set<keyof RunnerConfigInput>([
  'port',
  'bodyLimit',
  'inferenceBodyLimit',
  'requestBodyTimeoutMs',
  'requestTimeoutMs',
  'shutdownGraceSeconds',
  'rateLimitRequests',
  'rateLimitWindowSeconds',
  'priceRefreshSeconds',
  'ledgerRetentionDays',
  'auditLogRetentionDays',
  'storedResponseRetentionDays',
  'spendLeaseMs',
  'workers',
  'metricsPort',
])
const BOOLEAN = new Set<keyof RunnerConfigInput>(['dev', 'demoModels', 'watchParent', 'enforceCredits', 'dashboard'])

/** Settings from strings (the environment's, the flags'): numbers, booleans and comma-separated lists parsed. */
export const fromStrings = (entries: Array<[keyof RunnerConfigInput, string | undefined]>): Partial<RunnerConfigInput> => {
  const config: Record<string, unknown> = {}
  for (const [setting, raw] of entries) {
    if (raw === undefined || raw === '') continue
    if (setting === 'encryptionKeys') config[setting] = raw.split(',').map((key) => key.trim()).filter(Boolean)
    else if (BOOLEAN.has(setting)) config[setting] = raw === '1' || raw.toLowerCase() === 'true'
    else config[setting] = NUMERIC.has(setting) && /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw
  }
  return config as Partial<RunnerConfigInput>
}

export const readConfigFile = async (path: string): Promise<Partial<RunnerConfigInput>> => {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    throw new Error(`modelgate: cannot read config file ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
  }
  try {
    return JSON.parse(text) as Partial<RunnerConfigInput>
  } catch {
    throw new Error(`modelgate: config file ${path} is not valid JSON`)
  }
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Merges the sources (later wins) and validates the result. */
export const resolveConfig = (...sources: Array<Partial<RunnerConfigInput>>): RunnerConfig => {
  const merged = Object.assign({}, ...sources)
  // `upstream` is filled field by field from the file and the environment alike: a later source wins per field.
  const upstreams = sources.map((source) => source.upstream).filter((upstream) => upstream !== undefined)
  if (upstreams.length > 1 && upstreams.every(isPlainObject)) merged.upstream = Object.assign({}, ...upstreams)
  try {
    return parseInput(RunnerConfigSchema, merged, 'options')
  } catch (error) {
    const message = (error as Error).message.replace(/^options\./, '')
    throw new Error(`modelgate: invalid configuration: ${message}`)
  }
}

export const flagsToConfig = (flags: Record<string, string | boolean | undefined>): Partial<RunnerConfigInput> => ({
  ...fromStrings([
    ['port', flags.port as string | undefined],
    ['host', flags.host as string | undefined],
    ['basePath', flags['base-path'] as string | undefined],
    ['dataDir', flags['data-dir'] as string | undefined],
    ['logLevel', flags['log-level'] as string | undefined],
    ['workers', flags.workers as string | undefined],
  ]),
  ...(flags.memory ? { storage: 'memory' as const } : {}),
  ...(flags.dev ? { dev: true } : {}),
})

/**
 * Provider settings from the environment: `MODELGATE_PROVIDER_<ID>_API_KEY`, `_BASE_URL`, `_API` and
 * `_KEYLESS=1` (ID upper-cased, `-` as `_`), plus the conventional names of the provider catalog. They fill in
 * the config file's.
 */
export const providersFromEnvironment = (
  environment: Record<string, string | undefined>,
  fromFile: Record<string, Record<string, unknown>> = {},
): Record<string, Record<string, unknown>> => {
  const providers: Record<string, Record<string, unknown>> = structuredClone(fromFile)
  const set = (id: string, field: string, value: string | undefined) => {
    if (!value) return
    providers[id] = { ...providers[id], [field]: value }
  }
  for (const [id, names] of Object.entries(CONVENTIONAL_KEY_VARIABLES)) set(id, 'apiKey', names.map((name) => environment[name]).find(Boolean))
  for (const [name, value] of Object.entries(environment)) {
    const match = /^MODELGATE_PROVIDER_([A-Z0-9_]+)_(API_KEY|BASE_URL|API|KEYLESS)$/.exec(name)
    if (!match) continue
    const id = providerIdOf(match[1]!)
    if (match[2] === 'KEYLESS') {
      if (value === '1' || value?.toLowerCase() === 'true') providers[id] = { ...providers[id], isKeyless: true }
      continue
    }
    set(id, { API_KEY: 'apiKey', BASE_URL: 'baseURL', API: 'api' }[match[2] as 'API_KEY' | 'BASE_URL' | 'API'], value)
  }
  return providers
}

/** `MY_VLLM` in an environment variable's name is the provider `my-vllm`. */
export const providerIdOf = (environmentPart: string): string => environmentPart.toLowerCase().replaceAll('_', '-')
