/** Web Crypto helpers shared by auth and records; no `node:crypto`, so the core runs on Bun and Deno. */

const encoder = new TextEncoder()

const HEX_PAIRS = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'))

const toHex = (bytes: Uint8Array, start = 0, end = bytes.length): string => {
  let hex = ''
  for (let index = start; index < end; index++) hex += HEX_PAIRS[bytes[index]!]
  return hex
}

interface SyncHash {
  /** One-shot digest (Node ≥ 20.12): no Hash object per call, about a quarter of `createHash`'s time. */
  hash?(algorithm: 'sha256', value: string, encoding: 'hex'): string
  createHash(algorithm: 'sha256'): { update(value: string): { digest(encoding: 'hex'): string } }
  createHmac(algorithm: 'sha256', key: string): { update(value: string): { digest(encoding: 'hex'): string } }
}

/**
 * Node runs Web Crypto digests on its thread pool: hashing a request's API key costs about 18 µs that
 * way and 1.5 µs in place (measured by `npm run bench`). Runtimes that hand out their built-ins
 * synchronously (Node ≥ 20.16, Bun) get the in-place hash; everywhere else Web Crypto does the job.
 * Nothing is imported, so the core still loads unchanged on every runtime.
 */
const syncHash: SyncHash | undefined = (() => {
  try {
    const runtime = (globalThis as { process?: { getBuiltinModule?: (name: string) => unknown } }).process
    return runtime?.getBuiltinModule?.('node:crypto') as SyncHash | undefined
  } catch {
    return undefined
  }
})()

/** Lowercase hex SHA-256 of a UTF-8 string: the only form in which API keys are stored. */
export const sha256Hex = async (value: string): Promise<string> =>
  syncHash
    ? (syncHash.hash?.('sha256', value, 'hex') ?? syncHash.createHash('sha256').update(value).digest('hex'))
    : toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(value))))

const hmacKeys = new Map<string, Promise<CryptoKey>>()
const HMAC_KEY_CACHE_MAX = 10_000

const webCryptoHmacKey = (key: string): Promise<CryptoKey> => {
  let cryptoKey = hmacKeys.get(key)
  if (!cryptoKey) {
    if (hmacKeys.size >= HMAC_KEY_CACHE_MAX) hmacKeys.clear()
    cryptoKey = crypto.subtle.importKey('raw', encoder.encode(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
    hmacKeys.set(key, cryptoKey)
  }
  return cryptoKey
}

/** Lowercase hex HMAC-SHA-256 of a UTF-8 message under a UTF-8 key; in place where the runtime allows, as `sha256Hex`. */
export const hmacSha256Hex = async (key: string, message: string): Promise<string> =>
  syncHash
    ? syncHash.createHmac('sha256', key).update(message).digest('hex')
    : toHex(new Uint8Array(await crypto.subtle.sign('HMAC', await webCryptoHmacKey(key), encoder.encode(message))))

// Each `getRandomValues` call is a trip into the system's CSPRNG (about 4 µs on Node); ids are cut from one
// pooled draw instead, as Node's own `randomUUID` does. Every byte is handed out once, never reused.
const RANDOM_POOL_SIZE = 4096
const randomPool = new Uint8Array(RANDOM_POOL_SIZE)
let randomPoolOffset = RANDOM_POOL_SIZE

/** `byteLength` random bytes as lowercase hex. */
export const randomHex = (byteLength: number): string => {
  if (byteLength > RANDOM_POOL_SIZE) return toHex(crypto.getRandomValues(new Uint8Array(byteLength)))
  if (randomPoolOffset + byteLength > RANDOM_POOL_SIZE) {
    crypto.getRandomValues(randomPool)
    randomPoolOffset = 0
  }
  const start = randomPoolOffset
  randomPoolOffset += byteLength
  return toHex(randomPool, start, randomPoolOffset)
}

/**
 * `byteLength` bytes as lowercase hex, the first six the current time in milliseconds and the rest random: ids made
 * later sort later, so a store's index takes each new one at its end rather than anywhere in it (one page written
 * per batch rather than one per id). OpenAI's response ids begin with their time the same way.
 */
export const timeOrderedHex = (byteLength: number): string => Date.now().toString(16).padStart(12, '0').slice(-12) + randomHex(byteLength - 6)

/** A random version-4 UUID. */
export const randomId = (): string => crypto.randomUUID()

/**
 * Compares two strings in time that depends only on their length, so a comparison of
 * secret-derived values does not reveal how many leading characters matched.
 */
export const timingSafeEqual = (left: string, right: string): boolean => {
  if (left.length !== right.length) return false
  let difference = 0
  for (let index = 0; index < left.length; index++) difference |= left.charCodeAt(index) ^ right.charCodeAt(index)
  return difference === 0
}

/**
 * A UUID derived from a name, stable across processes and restarts (same input, same id).
 * Shaped as an RFC 9562 version-8 UUID built from SHA-256.
 */
export const deriveId = async (name: string): Promise<string> => {
  const hex = (await sha256Hex(name)).slice(0, 32).split('')
  hex[12] = '8'
  hex[16] = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)
  const joined = hex.join('')
  return `${joined.slice(0, 8)}-${joined.slice(8, 12)}-${joined.slice(12, 16)}-${joined.slice(16, 20)}-${joined.slice(20)}`
}
