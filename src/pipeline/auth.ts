/** Bearer-token authentication: keys are looked up by their SHA-256 hash, never stored raw. */

import { sha256Hex, timingSafeEqual } from '../core/crypto'
import { AuthenticationError, PermissionDeniedError } from '../core/errors'
import type { Caller } from '../services/caller'
import type { Repositories } from '../repositories'

/**
 * Who may call a route: anyone without a key (health checks for load balancers), any valid key,
 * management keys only (spec Authentication 2), or keys that may run inference (management keys may
 * not, as with the public counterpart). Every route that runs a model is `inference`, so the rule holds
 * whichever way a request reaches the model.
 */
export type RouteAuth = 'none' | 'any' | 'management' | 'inference'

export type { Caller }

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i

/** Which headers may carry the key: Anthropic's clients send theirs as `x-api-key`. */
export type KeyHeaders = 'bearer' | 'bearer-or-x-api-key'

// Never logged or echoed: the raw key.
const readKey = (request: Request, headers: KeyHeaders): string => {
  const header = request.headers.get('authorization')
  if (!header && headers === 'bearer-or-x-api-key') {
    const apiKey = request.headers.get('x-api-key')?.trim()
    if (apiKey) return apiKey
    throw new AuthenticationError('Missing API key: send it as x-api-key: <key> or Authorization: Bearer <key>')
  }
  if (!header) throw new AuthenticationError('Missing API key: send it as Authorization: Bearer <key>')
  const token = BEARER.exec(header)?.[1]
  if (!token) throw new AuthenticationError('Malformed Authorization header: expected Bearer <key>')
  return token
}

/** Resolves the caller from `Authorization: Bearer <key>` (or `x-api-key` where `headers` allows it), or throws 401. */
export const authenticate = async (
  request: Request,
  repositories: Repositories,
  headers: KeyHeaders = 'bearer',
  now: () => Date = () => new Date(),
): Promise<Caller> => {
  const token = readKey(request, headers)
  const hash = await sha256Hex(token)
  const key = await repositories.apiKeys.get(hash)
  if (!key || !timingSafeEqual(key.hash, hash)) throw new AuthenticationError('Invalid API key')
  if (key.disabled) throw new AuthenticationError('API key is disabled')
  // docs/decisions.md, Credits and limits: an expired key is refused everywhere, with when it expired.
  if (key.expiresAt !== null && now().getTime() >= Date.parse(key.expiresAt)) {
    throw new AuthenticationError(`API key expired at ${key.expiresAt}; create a new key`)
  }
  const account = await repositories.accounts.get(key.accountId)
  if (!account) throw new AuthenticationError('Invalid API key')
  return { key, account, flags: account.flags }
}

/**
 * Whether the caller's kind of key may use a route, or 403. This is the one rule for model calls:
 * every route that runs a model declares `auth: 'inference'`, whichever way it reaches the model.
 */
export const assertRouteAuth = (caller: Caller, required: RouteAuth): void => {
  // spec Authentication 2: non-management keys get 403 on management routes.
  if (required === 'management' && caller.key.kind !== 'management') {
    throw new PermissionDeniedError('Only management keys can perform this operation')
  }
  if (required === 'inference' && caller.key.kind === 'management') {
    throw new PermissionDeniedError('Management keys cannot be used for inference; use a regular API key')
  }
}
