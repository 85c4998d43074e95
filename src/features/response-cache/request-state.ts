/** The response cache's state on a request, under a slot the feature owns (src/engine/request-slot.ts). */

import { requestSlot } from '../../engine/request-slot'

/** What the response cache was asked to do for a request, and what it did: the route reads it for its headers. */
export interface ResponseCacheState {
  /** How long a new answer is kept, in seconds (0 bypasses): `x-modelgate-cache-ttl`, else the key's, else the workspace's. */
  ttlSeconds: number
  /** Set by the cache's stage when it looked at the request; a hit names the answer it served again (its generation id). */
  outcome?: { status: 'hit' | 'miss' | 'bypass'; ageSeconds?: number; sourceId?: string }
}

/**
 * Set by the HTTP routes when the request, its key or its workspace asks for the cache (`cacheDirectiveFor`); absent
 * otherwise (and on intern turns). The stage records what it did in `outcome`; the route reads it for its headers.
 */
export const RESPONSE_CACHE = requestSlot<ResponseCacheState>('response-cache')
