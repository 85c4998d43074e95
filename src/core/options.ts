/** `createGateway` options, validated once at start-up. */

import * as v from 'valibot'
import type { StorageDriver } from '../storage/contract'
import type { Logger } from './logger'
import { MODEL_SLUG_PATTERN } from './patterns'
import type { ModelEntry } from '../responses/models'
import type { UpstreamTransport } from '../responses/transport'
import type { InternRuntime } from '../interns/runtime'
import { DEFAULT_LEASE_TTL_MS } from '../interns/lease'

const isStorageDriver = (value: unknown): value is StorageDriver =>
  typeof value === 'object' &&
  value !== null &&
  ['create', 'get', 'findByUnique', 'update', 'delete', 'list', 'increment', 'close'].every(
    (method) => typeof (value as Record<string, unknown>)[method] === 'function',
  )

const isLogger = (value: unknown): value is Logger =>
  typeof value === 'object' &&
  value !== null &&
  ['debug', 'info', 'warn', 'error'].every((method) => typeof (value as Record<string, unknown>)[method] === 'function')

const ModelSlugSchema = v.pipe(v.string(), v.regex(MODEL_SLUG_PATTERN, 'must be a model slug <author>/<name>'))

export const GatewayOptionsSchema = v.strictObject({
  /** Where all state lives. Defaults to a fresh in-memory store (lost on exit). */
  storage: v.optional(v.custom<StorageDriver>(isStorageDriver, 'must implement the StorageDriver contract')),
  /** Path prefix of every route. */
  basePath: v.optional(
    v.pipe(v.string(), v.regex(/^(\/[A-Za-z0-9._~-]+)*\/?$/, 'must be a path such as /api/v1, or empty')),
    '/api/v1',
  ),
  /** Default request body limit in bytes (intern routes always use the spec's 1 MiB). */
  bodyLimit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024), v.maxValue(1024 * 1024 * 1024)), 1_048_576),
  /** Where diagnostics go; `false` for none. Defaults to JSON lines on stderr at `info`. */
  logger: v.optional(v.union([v.literal(false), v.custom<Logger>(isLogger, 'must have debug, info, warn and error methods')])),
  /** Defaults for workspaces created from now on. */
  workspaceDefaults: v.optional(
    v.strictObject({
      textModel: v.optional(ModelSlugSchema),
      imageModel: v.optional(ModelSlugSchema),
      providerSort: v.optional(v.picklist(['price', 'throughput', 'latency', 'exacto'])),
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
   * others (self-hosted vLLM/Ollama, proxies) also need `api` (their wire format) and `baseURL`.
   */
  providers: v.optional(
    v.record(
      v.pipe(v.string(), v.regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'provider ids are lowercase slugs')),
      v.strictObject({
        api: v.optional(v.picklist(['openai-responses', 'openai-chat', 'azure-openai', 'anthropic-messages', 'gemini'])),
        displayName: v.optional(v.string()),
        baseURL: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
        apiKey: v.optional(v.pipe(v.string(), v.minLength(1))),
        isKeyless: v.optional(v.boolean()),
        headers: v.optional(v.record(v.string(), v.string())),
        options: v.optional(v.record(v.string(), v.string())),
      }),
    ),
  ),
  /** Models added to, or replacing by slug, the built-in catalog. */
  models: v.optional(v.array(v.custom<ModelEntry>((value) => typeof value === 'object' && value !== null && 'slug' in value && 'endpoints' in value, 'must be a model entry with slug and endpoints'))),
  /** Upstream HTTP: `undiciTransport()` on Node (pooled); the runtime's fetch otherwise. */
  transport: v.optional(v.custom<UpstreamTransport>((value) => typeof value === 'function', 'must be a transport function')),
  upstream: v.optional(
    v.strictObject({
      connectTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
      firstByteTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
      totalTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
    }),
  ),
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
  internHistory: v.optional(
    v.strictObject({
      maxItems: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
      maxBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024))),
    }),
  ),
  /**
   * Provisioning leases: a run renews its lease every `heartbeatIntervalMs` (default a third of
   * `leaseTtlMs`, 30 s); once a lease expires (its gateway died) a provision call or any gateway's
   * sweep (every `sweepIntervalMs`, default 15 s; `false` for none) takes the run over.
   */
  internProvisioning: v.optional(
    v.pipe(
      v.strictObject({
        leaseTtlMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100))),
        heartbeatIntervalMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(10))),
        sweepIntervalMs: v.optional(v.union([v.literal(false), v.pipe(v.number(), v.integer(), v.minValue(10))])),
      }),
      v.check(
        (settings) => settings.heartbeatIntervalMs === undefined || settings.heartbeatIntervalMs < (settings.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS),
        'heartbeatIntervalMs must be shorter than leaseTtlMs',
      ),
    ),
  ),
  /** Hostnames of regional deployments: intern routes answer 403 there (spec Authentication 3). */
  regionalHostnames: v.optional(v.array(v.pipe(v.string(), v.minLength(1)))),
  /** Clock, for tests. */
  now: v.optional(v.custom<() => Date>((value) => typeof value === 'function', 'must be a function returning a Date')),
})

export type GatewayOptions = v.InferInput<typeof GatewayOptionsSchema>
