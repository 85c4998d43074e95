/** `createGateway` options, validated once at start-up. */

import * as v from 'valibot'
import type { StorageDriver } from '../storage/contract'
import type { Logger } from './logger'
import { MODEL_SLUG_PATTERN } from './patterns'

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
  /** Clock, for tests. */
  now: v.optional(v.custom<() => Date>((value) => typeof value === 'function', 'must be a function returning a Date')),
})

export type GatewayOptions = v.InferInput<typeof GatewayOptionsSchema>
