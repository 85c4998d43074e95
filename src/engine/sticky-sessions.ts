/**
 * Sticky sessions (docs/decisions.md, "Sticky sessions"): the requests of one session go to the endpoint that served
 * the session before, while it stays healthy, so the provider's prompt cache keeps hitting. Per process: a gateway
 * behind a load balancer that does not pin sessions learns each session on each process.
 */

import type { Attempt } from './routing'

/** Sessions remembered at once; the least recently used goes first beyond this. */
const MAX_SESSIONS = 10_000

export interface StickySessions {
  /** The attempts with the session's endpoint first, when it has one among them that `isHealthy` says may serve. */
  order(key: string, attempts: Attempt[], isHealthy: (attempt: Attempt) => boolean): { attempts: Attempt[]; isHeld: boolean }
  /** Remembers the endpoint that served the session. */
  remember(key: string, attempt: Attempt): void
}

/** The endpoint and key an attempt goes to: what a session sticks to. */
const endpointOf = (attempt: Attempt) => `${attempt.provider.descriptor.id} ${attempt.endpoint.model} ${attempt.credential?.id ?? 'shared'}`

/** The session key of a caller's session, for one list of requested models: another list is another routing. */
export const stickyKey = (workspaceId: string, sessionId: string, models: readonly string[]) => `${workspaceId} ${sessionId} ${models.join(',')}`

export const createStickySessions = (max = MAX_SESSIONS): StickySessions => {
  const sessions = new Map<string, string>()
  return {
    order(key, attempts, isHealthy) {
      const endpoint = sessions.get(key)
      if (endpoint === undefined) return { attempts, isHeld: false }
      const index = attempts.findIndex((attempt) => endpointOf(attempt) === endpoint)
      if (index < 0 || !isHealthy(attempts[index]!)) return { attempts, isHeld: false }
      if (index === 0) return { attempts, isHeld: true }
      return { attempts: [attempts[index]!, ...attempts.slice(0, index), ...attempts.slice(index + 1)], isHeld: true }
    },
    remember(key, attempt) {
      if (max === 0) return
      sessions.delete(key)
      if (sessions.size >= max) sessions.delete(sessions.keys().next().value!)
      sessions.set(key, endpointOf(attempt))
    },
  }
}
