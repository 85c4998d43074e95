/**
 * Per-key request rate limits over the storage contract's expiring counters. The count is one
 * atomic increment in the store, so several gateway processes on one store share one limit.
 */

import { RateLimitError } from '../core/errors'
import type { StorageDriver } from '../storage/contract'

export interface RateLimitOptions {
  /** Requests allowed per key in each window. */
  requests: number
  /** Window length in seconds; a window starts with the first request after the previous one ended. */
  windowSeconds: number
}

/** Counts one request of `keyHash`; throws 429 with `Retry-After` and `X-RateLimit-*` once over the limit. */
export const enforceRateLimit = async (storage: StorageDriver, limit: RateLimitOptions, keyHash: string, now: number) => {
  const { value, expiresAt } = await storage.increment(`rate:${keyHash}`, 1, limit.windowSeconds * 1000)
  if (value <= limit.requests) return
  // docs/decisions.md, Errors and routing: 429 carries X-RateLimit-Limit / -Remaining / -Reset (ms since epoch), as OpenRouter sends.
  throw new RateLimitError(`Rate limit exceeded: ${limit.requests} requests per ${limit.windowSeconds} seconds`, {
    headers: {
      'retry-after': String(Math.max(1, Math.ceil((expiresAt - now) / 1000))),
      'x-ratelimit-limit': String(limit.requests),
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': String(expiresAt),
    },
  })
}
