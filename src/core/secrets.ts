/**
 * Envelope encryption for secrets at rest (BYOK provider keys): AES-256-GCM through Web Crypto, a
 * fresh 96-bit nonce per write, associated data that binds a ciphertext to its record, and a key id
 * stored beside it so the master key can be rotated: new writes use the first key, every listed key
 * still decrypts, and re-encryption moves old ciphertexts to the first key.
 */

import { PermissionDeniedError } from './errors'
import { sha256Hex } from './crypto'

/** A sealed secret as stored. Contains nothing that reveals the plaintext. */
export type SealedSecret = {
  v: 1
  /** Which master key sealed it. */
  kid: string
  /** Base64 nonce. */
  iv: string
  /** Base64 ciphertext with the GCM tag. */
  ct: string
}

interface MasterKey {
  id: string
  key: CryptoKey
}

const KEY_BYTES = 32

const toBase64 = (bytes: Uint8Array): string => {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary)
}

const fromBase64 = (text: string): Uint8Array<ArrayBuffer> => Uint8Array.from(atob(text), (char) => char.charCodeAt(0))

/** Decodes a master key given as 64 hex characters or as base64 / base64url of 32 bytes; `null` if neither. */
export const decodeMasterKey = (text: string): Uint8Array<ArrayBuffer> | null => {
  const trimmed = text.trim()
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Uint8Array.from(trimmed.match(/../g)!, (pair) => Number.parseInt(pair, 16))
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) return null
  try {
    const bytes = fromBase64(trimmed.replaceAll('-', '+').replaceAll('_', '/'))
    return bytes.byteLength === KEY_BYTES ? bytes : null
  } catch {
    return null
  }
}

/** A fresh random master key, base64-encoded (for `--dev` and for operators' set-up). */
export const generateMasterKey = (): string => toBase64(crypto.getRandomValues(new Uint8Array(KEY_BYTES)))

// Not a 5xx: SDKs retry those, and this fails the same way every time until the operator acts.
const notConfigured = () =>
  new PermissionDeniedError(
    'BYOK is disabled on this gateway: no encryption key is configured. The operator enables it by setting MODELGATE_ENCRYPTION_KEYS (or the encryptionKeys option)',
  )

/** Why a sealed secret could not be opened: its master key is not configured, or it was altered or moved. */
export type UnreadableReason = 'unknown-key' | 'integrity'

/**
 * A stored secret this gateway cannot open. Deliberately not a `GatewayError`: its message names a master-key
 * id and is meant for the operator's log; the request path turns it into an error for the caller.
 */
export class SecretUnreadableError extends Error {
  readonly keyId: string
  readonly reason: UnreadableReason

  constructor(keyId: string, reason: UnreadableReason) {
    super(
      reason === 'unknown-key'
        ? `A stored secret was sealed with encryption key ${keyId}, which is not configured`
        : 'A stored secret failed its integrity check',
    )
    this.name = 'SecretUnreadableError'
    this.keyId = keyId
    this.reason = reason
  }
}

export interface SecretBox {
  /** Whether at least one master key is configured. */
  readonly isConfigured: boolean
  /** Encrypts `plaintext` with the primary key, bound to `associatedData`. */
  seal(plaintext: string, associatedData: string): Promise<SealedSecret>
  /** Decrypts; throws when the key id is unknown or the data was tampered with or moved. */
  open(sealed: SealedSecret, associatedData: string): Promise<string>
  /** The primary key's id, which new seals carry. */
  primaryKeyId(): Promise<string>
  /** The ids of every configured key, primary first (fingerprints: safe to show). */
  keyIds(): Promise<string[]>
}

/** Builds a secret box over master keys (primary first). Keys are checked here, imported lazily. */
export const createSecretBox = (masterKeys: readonly string[]): SecretBox => {
  const decoded = masterKeys.map((text, index) => {
    const bytes = decodeMasterKey(text)
    if (!bytes) throw new TypeError(`modelgate: encryption key ${index + 1} must be 32 bytes, as 64 hex characters or base64`)
    return bytes
  })
  let imported: Promise<MasterKey[]> | undefined
  const keys = () =>
    (imported ??= Promise.all(
      decoded.map(async (bytes) => ({
        // The id is a fingerprint of the key, so operators can list keys in any order across restarts.
        id: (await sha256Hex(`modelgate-master-key:${toBase64(bytes)}`)).slice(0, 16),
        key: await crypto.subtle.importKey('raw', bytes, { name: 'AES-GCM' }, false, ['encrypt', 'decrypt']),
      })),
    ))
  const encoder = new TextEncoder()

  return {
    isConfigured: decoded.length > 0,
    async primaryKeyId() {
      const [primary] = await keys()
      if (!primary) throw notConfigured()
      return primary.id
    },
    async keyIds() {
      return (await keys()).map((masterKey) => masterKey.id)
    },
    async seal(plaintext, associatedData) {
      const [primary] = await keys()
      if (!primary) throw notConfigured()
      const iv = crypto.getRandomValues(new Uint8Array(12))
      const ciphertext = await crypto.subtle.encrypt(
        { name: 'AES-GCM', iv, additionalData: encoder.encode(associatedData) },
        primary.key,
        encoder.encode(plaintext),
      )
      return { v: 1, kid: primary.id, iv: toBase64(iv), ct: toBase64(new Uint8Array(ciphertext)) }
    },
    async open(sealed, associatedData) {
      const masterKey = (await keys()).find((candidate) => candidate.id === sealed.kid)
      if (!masterKey) throw new SecretUnreadableError(sealed.kid, 'unknown-key')
      try {
        const plaintext = await crypto.subtle.decrypt(
          { name: 'AES-GCM', iv: fromBase64(sealed.iv), additionalData: encoder.encode(associatedData) },
          masterKey.key,
          fromBase64(sealed.ct),
        )
        return new TextDecoder().decode(plaintext)
      } catch {
        throw new SecretUnreadableError(sealed.kid, 'integrity')
      }
    },
  }
}
