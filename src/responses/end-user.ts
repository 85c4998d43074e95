/**
 * `user` and `safety_identifier` never go upstream raw (spec): providers see a keyed hash, stable
 * per account and end user, that cannot be joined across accounts or reversed without the secret.
 */

const encoder = new TextEncoder()
const keys = new Map<string, Promise<CryptoKey>>()
const KEY_CACHE_MAX = 10_000

const keyFor = (secret: string, accountId: string): Promise<CryptoKey> => {
  const cacheKey = `${accountId}\u0000${secret}`
  let key = keys.get(cacheKey)
  if (!key) {
    if (keys.size >= KEY_CACHE_MAX) keys.clear()
    key = crypto.subtle.importKey('raw', encoder.encode(`modelgate-end-user:${secret}:${accountId}`), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
    keys.set(cacheKey, key)
  }
  return key
}

const sign = async (secret: string, accountId: string, endUser: string | null | undefined): Promise<string> => {
  const signature = await crypto.subtle.sign('HMAC', await keyFor(secret, accountId), encoder.encode(endUser ?? '\u0000account'))
  let hex = ''
  for (const byte of new Uint8Array(signature).subarray(0, 16)) hex += byte.toString(16).padStart(2, '0')
  return `mg_${hex}`
}

// Callers send the same end user request after request. Web Crypto runs each HMAC on the libuv thread
// pool, and that round trip, not the hash, is the cost: ~90 µs CPU per request at one connection (issue #5).
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
