/**
 * When each endpoint's upstream last failed (5xx, no connection, timeout), for the default load balancing
 * (docs/decisions.md, "Load balancing"): an endpoint that failed within the last 30 s is set aside, after the stable
 * ones, as OpenRouter skips providers with recent outages. Per process and in memory: the fallback loop records a
 * failure as it happens, and routing reads a map, with no store call on the request path.
 */

/** How long a failure sets an endpoint aside (OpenRouter's "last 30 seconds"). */
export const RECENT_FAILURE_WINDOW_MS = 30_000

// Endpoints are few (providers × upstream models); a long-running gateway forgets the oldest beyond this many.
const MAX_TRACKED = 10_000

export interface RecentFailures {
  /** Notes that `endpoint`'s upstream failed now. */
  record(endpoint: string): void
  /** Whether `endpoint`'s upstream failed within the window. */
  hasFailed(endpoint: string): boolean
}

/** The endpoint a failure is held against: the provider and its upstream model, whichever key reached it. */
export const failureKey = (providerId: string, upstreamModel: string) => `${providerId} ${upstreamModel}`

export const createRecentFailures = (now: () => number, windowMs = RECENT_FAILURE_WINDOW_MS): RecentFailures => {
  const failedAt = new Map<string, number>()
  return {
    record(endpoint) {
      // Re-inserted, so the map's first entry is always the one that failed longest ago.
      failedAt.delete(endpoint)
      if (failedAt.size >= MAX_TRACKED) failedAt.delete(failedAt.keys().next().value!)
      failedAt.set(endpoint, now())
    },
    hasFailed(endpoint) {
      const at = failedAt.get(endpoint)
      if (at === undefined) return false
      if (now() - at < windowMs) return true
      failedAt.delete(endpoint)
      return false
    },
  }
}
