/**
 * The response cache's wire (docs/routes.md, Response cache): the `x-modelgate-cache-ttl` request header, the `cache`
 * setting of workspaces and keys, and the management route that clears a workspace's entries.
 */

import * as v from 'valibot'
import { InvalidRequestError } from '../core/errors'
import type { ResponseCacheSetting } from '../repositories/response-cache'

/** The longest a cached answer is kept: thirty days. */
export const CACHE_TTL_MAX_SECONDS = 2_592_000

export const CACHE_TTL_HEADER = 'x-modelgate-cache-ttl'

const TtlSecondsSchema = v.pipe(
  v.number(),
  v.integer('must be a whole number of seconds'),
  v.minValue(0, 'must be at least 0'),
  v.maxValue(CACHE_TTL_MAX_SECONDS, `must be at most ${CACHE_TTL_MAX_SECONDS}`),
)

/** A key's `cache`: `{ ttl_seconds }` (0 keeps nothing), or null for off. */
export const CacheSettingSchema = v.optional(v.nullable(v.strictObject({ ttl_seconds: TtlSecondsSchema })))

/** A workspace's `cache`: a key's, and `semantic` to answer requests close in meaning to a stored one too. */
export const WorkspaceCacheSettingSchema = v.optional(v.nullable(v.strictObject({ ttl_seconds: TtlSecondsSchema, semantic: v.optional(v.boolean()) })))

type CacheSettingWire = v.InferOutput<typeof WorkspaceCacheSettingSchema>

/** The wire `cache` as stored; `undefined` stays unchanged. */
export const cacheSettingFromWire = (wire: CacheSettingWire): ResponseCacheSetting | null | undefined =>
  wire === undefined ? undefined : wire === null ? null : { ttlSeconds: wire.ttl_seconds, ...(wire.semantic ? { semantic: true } : {}) }

/** The stored `cache` on the wire: null when off (records made before it have none); `semantic` only where it is on. */
export const cacheSettingToWire = (setting: ResponseCacheSetting | null | undefined) =>
  setting ? { ttl_seconds: setting.ttlSeconds, ...(setting.semantic ? { semantic: true } : {}) } : null

/** 400 for a workspace that asks for the semantic cache of a gateway that names no model for it. */
export const assertSemanticAvailable = (wire: CacheSettingWire, hasSemanticModel: boolean, where: 'body' | 'input' = 'body') => {
  if (wire?.semantic && !hasSemanticModel) {
    throw new InvalidRequestError(`${where}.cache.semantic: this gateway names no embedding model for the semantic cache (its responseCache.semantic option)`)
  }
}

const DIGITS = /^\d{1,8}$/

/** `x-modelgate-cache-ttl` in seconds; `undefined` when absent; a 400 naming the header when it is not a TTL. */
export const cacheTtlHeader = (headers: Headers): number | undefined => {
  const value = headers.get(CACHE_TTL_HEADER)
  if (value === null) return undefined
  const seconds = DIGITS.test(value) ? Number(value) : Number.NaN
  if (!(seconds <= CACHE_TTL_MAX_SECONDS)) {
    throw new InvalidRequestError(`header ${CACHE_TTL_HEADER}: must be a whole number of seconds from 0 to ${CACHE_TTL_MAX_SECONDS}`)
  }
  return seconds
}
