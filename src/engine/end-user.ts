/**
 * `user` and `safety_identifier` never go upstream raw (spec): providers see a keyed hash, stable
 * per account and end user, that cannot be joined across accounts or reversed without the secret.
 */

import { hmacSha256Hex } from '../core/crypto'

const sign = async (secret: string, accountId: string, endUser: string | null | undefined): Promise<string> =>
  `mg_${(await hmacSha256Hex(`modelgate-end-user:${secret}:${accountId}`, endUser ?? '\u0000account')).slice(0, 32)}`

// Callers send the same end user request after request. Where the HMAC cannot run in place, Web Crypto runs it
// on the libuv thread pool, and that round trip, not the hash, is the cost: ~90 µs CPU per request at one
// connection.
// Bounded: `user` is at most 256 characters, so a full cache stays under a few MB.
const ids = new Map<string, Promise<string>>()
const ID_CACHE_MAX = 4_096

/** The id sent upstream for an end user; without one, an account-level identity (spec `safety_identifier`). */
export const endUserIdFor = (secret: string, accountId: string, endUser: string | null | undefined): Promise<string> => {
  // The marker keeps "no end user" apart from an end user named like the account-level input.
  const cacheKey = endUser == null ? `${secret}\u0000${accountId}\u0001` : `${secret}\u0000${accountId}\u0000${endUser}`
  let id = ids.get(cacheKey)
  if (!id) {
    if (ids.size >= ID_CACHE_MAX) ids.clear()
    id = sign(secret, accountId, endUser)
    ids.set(cacheKey, id)
    id.catch(() => ids.delete(cacheKey))
  }
  return id
}
