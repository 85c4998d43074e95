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

/** The id sent upstream for an end user; without one, an account-level identity (spec `safety_identifier`). */
export const endUserIdFor = async (secret: string, accountId: string, endUser: string | null | undefined): Promise<string> => {
  const signature = await crypto.subtle.sign('HMAC', await keyFor(secret, accountId), encoder.encode(endUser ?? '\u0000account'))
  let hex = ''
  for (const byte of new Uint8Array(signature).subarray(0, 16)) hex += byte.toString(16).padStart(2, '0')
  return `mg_${hex}`
}
