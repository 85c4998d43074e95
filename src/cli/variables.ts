/**
 * Every environment variable the runner reads, in one table. The reader (`configFromEnvironment`), `--help`
 * (src/cli/usage.ts), the misspelling warning at start-up and docs/configuration.md
 * (scripts/generate-configuration-doc.ts) all read this table, so none of them can name a variable the others
 * do not know. test/unit/cli/variables.test.ts fails when src reads a `MODELGATE_*` variable missing here.
 */

import { CONVENTIONAL_KEY_VARIABLES } from '../providers/catalog'
import { fromStrings, type RunnerConfigInput } from './config'

type Setting = keyof RunnerConfigInput
type UpstreamField = keyof NonNullable<RunnerConfigInput['upstream']>

/** Headings of docs/configuration.md, in order. */
export const VARIABLE_SECTIONS = ['Listening', 'Storage', 'Requests and limits', 'Upstream calls', 'Keys and secrets', 'Prices', 'Process'] as const

export interface RunnerVariable {
  readonly name: string
  readonly section: (typeof VARIABLE_SECTIONS)[number]
  /** The setting it fills (the config file's key). Absent for `MODELGATE_CONFIG`, which names the file itself. */
  readonly setting?: Setting
  /** A field of the `upstream` setting, filled field by field. */
  readonly upstreamField?: UpstreamField
  /** The command-line flag that wins over it. */
  readonly flag?: string
  /** What it does, with its default; one line of `--help`. */
  readonly description: string
}

/** In reading order: a later variable filling the same setting wins (MODELGATE_PORT over PORT). */
export const RUNNER_VARIABLES: readonly RunnerVariable[] = [
  { name: 'MODELGATE_CONFIG', section: 'Listening', flag: '--config', description: 'JSON config file; its keys are the settings of this table and the config-file-only ones' },
  { name: 'PORT', section: 'Listening', setting: 'port', description: 'port to listen on, when MODELGATE_PORT is unset' },
  { name: 'MODELGATE_PORT', section: 'Listening', setting: 'port', flag: '--port', description: 'port to listen on (default 8787; wins over PORT)' },
  { name: 'MODELGATE_HOST', section: 'Listening', setting: 'host', flag: '--host', description: 'address to listen on (default 127.0.0.1)' },
  { name: 'MODELGATE_BASE_PATH', section: 'Listening', setting: 'basePath', flag: '--base-path', description: 'prefix of every route (default /api/v1)' },
  {
    name: 'MODELGATE_STORAGE',
    section: 'Storage',
    setting: 'storage',
    flag: '--memory',
    description: "sqlite (default: <data dir>/modelgate.db), sqlite:<path>, memory, redis://…, rediss://…, postgres://…, mysql://…, mariadb://…, file (earlier versions' embedded store)",
  },
  { name: 'MODELGATE_DATA_DIR', section: 'Storage', setting: 'dataDir', flag: '--data-dir', description: 'data directory: the SQLite store, the --dev key (default .modelgate)' },
  { name: 'MODELGATE_REDIS_PREFIX', section: 'Storage', setting: 'redisPrefix', description: 'key prefix on Redis (default modelgate:)' },
  { name: 'MODELGATE_SQL_SCHEMA', section: 'Storage', setting: 'sqlSchema', description: "PostgreSQL schema or MySQL/MariaDB database for the tables (default: the URL's)" },
  { name: 'MODELGATE_READ_CACHE', section: 'Storage', setting: 'readCache', description: 'off: read keys, accounts, workspaces and the like from the store on every request (default on)' },
  { name: 'MODELGATE_LEDGER', section: 'Storage', setting: 'ledger', description: 'off: keep no usage records (GET /generation 404, GET /activity empty; limits and credits still count)' },
  { name: 'MODELGATE_LEDGER_RETENTION_DAYS', section: 'Storage', setting: 'ledgerRetentionDays', description: 'days usage records are kept (default 30)' },
  {
    name: 'MODELGATE_STORED_RESPONSES',
    section: 'Storage',
    setting: 'storedResponses',
    description: 'on: store /responses answers (store, previous_response_id, GET /responses/{id}); default off',
  },
  { name: 'MODELGATE_STORED_RESPONSE_RETENTION_DAYS', section: 'Storage', setting: 'storedResponseRetentionDays', description: 'days stored responses are kept (default 30)' },
  { name: 'MODELGATE_AUDIT_LOG_RETENTION_DAYS', section: 'Storage', setting: 'auditLogRetentionDays', description: 'days audit log entries (administrative changes) are kept (default 90)' },
  { name: 'MODELGATE_RATE_LIMIT_REQUESTS', section: 'Requests and limits', setting: 'rateLimitRequests', description: 'requests per key per window (default: no limit)' },
  { name: 'MODELGATE_RATE_LIMIT_WINDOW_SECONDS', section: 'Requests and limits', setting: 'rateLimitWindowSeconds', description: 'rate-limit window in seconds (default 60)' },
  {
    name: 'MODELGATE_ENFORCE_CREDITS',
    section: 'Requests and limits',
    setting: 'enforceCredits',
    description: '1: refuse (402) requests of accounts whose granted credits are used up (default: only counted)',
  },
  { name: 'MODELGATE_BODY_LIMIT', section: 'Requests and limits', setting: 'bodyLimit', description: 'request body limit in bytes of routes other than model requests (default 1048576)' },
  {
    name: 'MODELGATE_INFERENCE_BODY_LIMIT',
    section: 'Requests and limits',
    setting: 'inferenceBodyLimit',
    description: 'body limit in bytes of /responses, /chat/completions, /messages, /embeddings (default 20971520)',
  },
  { name: 'MODELGATE_REQUEST_BODY_TIMEOUT_MS', section: 'Requests and limits', setting: 'requestBodyTimeoutMs', description: 'time a request body may take to arrive (default 30000; then 408)' },
  {
    name: 'MODELGATE_REQUEST_TIMEOUT_MS',
    section: 'Requests and limits',
    setting: 'requestTimeoutMs',
    description: "a request's deadline, all its fallback attempts, tool turns and fusion runs together (default 600000; then 524)",
  },
  {
    name: 'MODELGATE_SPEND_LEASE_MS',
    section: 'Requests and limits',
    setting: 'spendLeaseMs',
    description: "a spend hold's lease, renewed while its request runs; a dead process's holds return within 1.5 leases (default 60000)",
  },
  {
    name: 'MODELGATE_ROUTING_BALANCING',
    section: 'Upstream calls',
    setting: 'routingBalancing',
    description: "a model's endpoints where the request orders none: weighted (default: a pick among the cheapest, by 1/price²) or cheapest (always first)",
  },
  { name: 'MODELGATE_UPSTREAM_CONNECT_TIMEOUT_MS', section: 'Upstream calls', setting: 'upstream', upstreamField: 'connectTimeoutMs', description: 'time to connect to an upstream (default 10000)' },
  {
    name: 'MODELGATE_UPSTREAM_FIRST_BYTE_TIMEOUT_MS',
    section: 'Upstream calls',
    setting: 'upstream',
    upstreamField: 'firstByteTimeoutMs',
    description: "time to an upstream answer's first byte (default 300000)",
  },
  {
    name: 'MODELGATE_UPSTREAM_IDLE_TIMEOUT_MS',
    section: 'Upstream calls',
    setting: 'upstream',
    upstreamField: 'idleTimeoutMs',
    description: "longest silence between an upstream answer's body chunks (default 60000)",
  },
  {
    name: 'MODELGATE_UPSTREAM_TOTAL_TIMEOUT_MS',
    section: 'Upstream calls',
    setting: 'upstream',
    upstreamField: 'totalTimeoutMs',
    description: "one whole upstream exchange (default 600000); each upstream deadline ends at the request's at the latest",
  },
  {
    name: 'MODELGATE_UPSTREAM_MAX_RESPONSE_BYTES',
    section: 'Upstream calls',
    setting: 'upstream',
    upstreamField: 'maxResponseBytes',
    description: 'largest whole upstream answer (default 33554432; past it 502, or an in-band failure)',
  },
  {
    name: 'MODELGATE_UPSTREAM_MAX_EVENT_BYTES',
    section: 'Upstream calls',
    setting: 'upstream',
    upstreamField: 'maxEventBytes',
    description: 'largest upstream stream event (default 8388608; past it an in-band failure)',
  },
  { name: 'MODELGATE_MANAGEMENT_KEY', section: 'Keys and secrets', setting: 'managementKey', description: 'a management key of the default account, ensured at every start (16 to 512 characters; never logged); without one, an empty store gets a generated key, printed once' },
  { name: 'MODELGATE_ENCRYPTION_KEY', section: 'Keys and secrets', setting: 'encryptionKeys', description: 'as MODELGATE_ENCRYPTION_KEYS, which wins when both are set' },
  {
    name: 'MODELGATE_ENCRYPTION_KEYS',
    section: 'Keys and secrets',
    setting: 'encryptionKeys',
    description: 'master keys for BYOK secrets, comma-separated, primary first (modelgate secrets generate-key makes one); none: BYOK is off, and --dev keeps a generated key in the data dir',
  },
  {
    name: 'MODELGATE_PRICE_SOURCE',
    section: 'Prices',
    setting: 'priceSource',
    description: 'a price document reloaded without a restart: a file path (reloaded when it changes) or an https:// URL; both reload on SIGHUP',
  },
  { name: 'MODELGATE_PRICE_REFRESH_SECONDS', section: 'Prices', setting: 'priceRefreshSeconds', description: 'seconds between reloads of a URL price source (default 3600)' },
  { name: 'MODELGATE_DEV', section: 'Process', setting: 'dev', flag: '--dev', description: '1: development mode: generate and keep an encryption key in the data dir (npm start turns it on)' },
  { name: 'MODELGATE_LOG_LEVEL', section: 'Process', setting: 'logLevel', flag: '--log-level', description: 'debug, info (default), warn or error' },
  { name: 'MODELGATE_DEMO_MODELS', section: 'Process', setting: 'demoModels', description: '1: serve the free demo models demo/chat, demo/tools, demo/reasoning (no provider key; default: on with --dev only; 0: off)' },
  { name: 'MODELGATE_DASHBOARD', section: 'Process', setting: 'dashboard', description: "1: serve the operator's dashboard, signed in with a management key (default off; docs/dashboard.md)" },
  { name: 'MODELGATE_DASHBOARD_PATH', section: 'Process', setting: 'dashboardPath', description: 'where the dashboard is served, outside the base path (default /dashboard)' },
  {
    name: 'MODELGATE_METRICS',
    section: 'Process',
    setting: 'metrics',
    description: 'Prometheus metrics (docs/operations.md): on (default: GET /metrics with a management key), public (no key), off',
  },
  { name: 'MODELGATE_METRICS_PATH', section: 'Process', setting: 'metricsPath', description: 'where the metrics are served, outside the base path (default /metrics)' },
  {
    name: 'MODELGATE_METRICS_PORT',
    section: 'Process',
    setting: 'metricsPort',
    description: 'serve the metrics on this port of MODELGATE_HOST instead of the API port, without a key (default: the API port)',
  },
  {
    name: 'MODELGATE_WORKERS',
    section: 'Process',
    setting: 'workers',
    flag: '--workers',
    description: 'worker processes on one port, or auto (one per core); default 1. More than one needs a store processes share',
  },
  { name: 'MODELGATE_SHUTDOWN_GRACE_SECONDS', section: 'Process', setting: 'shutdownGraceSeconds', description: 'time in-flight requests get on shutdown (default 10)' },
  { name: 'MODELGATE_WATCH_PARENT', section: 'Process', setting: 'watchParent', description: '1: stop when the parent process exits, 0: never (default: on under npm and npx)' },
]

/** The variables that configure a provider by its id: `<ID>` is the id upper-cased, `-` as `_` (`my-vllm` → `MY_VLLM`). */
export const PROVIDER_VARIABLES = [
  { name: 'MODELGATE_PROVIDER_<ID>_API_KEY', description: "the provider's shared key" },
  { name: 'MODELGATE_PROVIDER_<ID>_BASE_URL', description: 'where its API is (a built-in provider has its own)' },
  { name: 'MODELGATE_PROVIDER_<ID>_API', description: 'the wire format of a provider of your own: openai-responses, openai-chat, azure-openai, anthropic-messages or gemini' },
  { name: 'MODELGATE_PROVIDER_<ID>_KEYLESS', description: '1: it needs no key (a self-hosted vLLM or Ollama)' },
  { name: 'MODELGATE_PROVIDER_<ID>_MODELS', description: 'the models it serves: <author>/<name>=<upstream model id>,… (price 0; a config-file models entry can give prices)' },
] as const

const PROVIDER_VARIABLE = /^MODELGATE_PROVIDER_[A-Z0-9_]+_(API_KEY|BASE_URL|API|KEYLESS|MODELS)$/

/** The conventional variables of built-in providers' shared keys, in the order the runner reads them. */
export const providerKeyVariables = (): Array<{ name: string; provider: string; description: string }> =>
  Object.entries(CONVENTIONAL_KEY_VARIABLES).flatMap(([provider, names]) =>
    names.map((name, index) => ({ name, provider, description: `shared key of the built-in provider ${provider}${index > 0 ? ` (${names[0]} wins)` : ''}` })),
  )

/** The runner's configuration from the environment (as strings are read: numbers, booleans, lists). */
export const configFromEnvironment = (environment: Record<string, string | undefined>): Partial<RunnerConfigInput> => {
  const settings = RUNNER_VARIABLES.filter((variable) => variable.setting !== undefined && variable.upstreamField === undefined)
  const upstream: Record<string, unknown> = {}
  for (const { name, upstreamField } of RUNNER_VARIABLES) {
    const raw = environment[name]
    // Anything but digits stays a string, so validation names the setting.
    if (upstreamField && raw !== undefined && raw !== '') upstream[upstreamField] = /^\d+$/.test(raw) ? Number(raw) : raw
  }
  return {
    ...fromStrings(settings.map(({ name, setting }) => [setting!, environment[name]])),
    ...(Object.keys(upstream).length > 0 ? { upstream } : {}),
  }
}

/** Levenshtein distance: the fewest single-character edits that turn one name into the other. */
const editDistance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index)
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i]
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    previous = current
  }
  return previous[b.length]!
}

/**
 * One warning for each `MODELGATE_*` variable in the environment that the runner does not read, naming the known
 * variable closest to it. A misspelt setting would otherwise be ignored in silence. Values are never shown.
 */
export const unknownVariableWarnings = (environment: Record<string, string | undefined>): string[] => {
  const known = RUNNER_VARIABLES.map((variable) => variable.name).filter((name) => name.startsWith('MODELGATE_'))
  return Object.keys(environment)
    .filter((name) => name.startsWith('MODELGATE_') && !known.includes(name) && !PROVIDER_VARIABLE.test(name))
    .sort()
    .map((name) => {
      const suggestion = name.startsWith('MODELGATE_PROVIDER_')
        ? 'MODELGATE_PROVIDER_<ID>_API_KEY, _BASE_URL, _API, _KEYLESS or _MODELS'
        : known.reduce((best, candidate) => (editDistance(name, candidate) < editDistance(name, best) ? candidate : best))
      return `unknown environment variable ${name} is ignored; did you mean ${suggestion}? (modelgate --help lists every variable)`
    })
}

/** The settings only a config file gives (`--config`), as docs/configuration.md describes them. */
export const CONFIG_FILE_ONLY: Readonly<Partial<Record<Setting, string>>> = {
  providers: "upstream providers, as `createGateway`'s `providers`; the environment's provider variables fill them in",
  models: "extra or replaced model catalog entries, as `createGateway`'s `models`",
  prices: "price overrides over the catalog, as `createGateway`'s `prices`",
  workspaceDefaults: '`{textModel, imageModel, providerSort}` for new workspaces (defaults `openai/gpt-4.1-mini`, `google/gemini-2.5-flash-image`, `price`)',
  upstreamGuard: "where caller-chosen upstreams may go, as `createGateway`'s, without `resolve`",
  serverTools: "as `createGateway`'s, the fetch guard without `resolve` and without `executors`, which are code",
  plugins: "as `createGateway`'s, without OCR backends and extractors, which are functions",
  retry: "as `createGateway`'s `retry`",
  outlierDetection: "as `createGateway`'s `outlierDetection`",
  endpointPerformance: "as `createGateway`'s `endpointPerformance`",
  routers: "as `createGateway`'s `routers`",
  responseCache: "as `createGateway`'s `responseCache`: the response cache's bounds and its `hitCharge` per hit in USD (default 0)",
  internHistory: "as `createGateway`'s `internHistory`",
  internProvisioning: "as `createGateway`'s `internProvisioning`",
  regionalHostnames: "as `createGateway`'s `regionalHostnames`",
  isRegionalDeployment: "as `createGateway`'s `isRegionalDeployment`",
  trustedHostHeader: "as `createGateway`'s `trustedHostHeader`",
  compactAfterBytes: 'with `storage: "file"`, the journal size that triggers a compaction (default 16 MiB)',
}
