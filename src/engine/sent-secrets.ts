/**
 * The secrets one upstream request carries, read from the request as built rather than from the
 * credential record: a structured key's inner keys travel on their own (the adapter's `credential`,
 * src/providers/contract.ts), and configuration may add credential headers, query parameters or userinfo.
 * Every text an upstream sends back is scrubbed of these before a caller or a log sees it.
 */

import type { ProviderAdapter, UpstreamRequest } from '../providers/contract'

// Header and query names that carry credentials (`authorization`, `api-key`, `x-goog-api-key`, `?key=`, `?sig=`…).
const CREDENTIAL_HEADER = /^(authorization|proxy-authorization|cookie)$|key|token|secret|signature|auth/i
const CREDENTIAL_QUERY = /key|token|secret|sig|password|auth|credential/i

// Shorter strings would blank out ordinary words of a message; no real credential is that short.
export const MIN_SECRET_LENGTH = 8

const decodeBase64 = (text: string): string | undefined => {
  try {
    return atob(text)
  } catch {
    return undefined
  }
}

const safeDecodeURIComponent = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** Each secret with the forms an upstream may quote it in (JSON-escaped, URL-encoded), longest first. */
const withQuotedForms = (secrets: Iterable<string>): string[] => {
  const forms = new Set<string>()
  for (const secret of secrets) {
    if (secret.length < MIN_SECRET_LENGTH) continue
    forms.add(secret)
    forms.add(JSON.stringify(secret).slice(1, -1))
    forms.add(encodeURIComponent(secret))
  }
  // Longest first, so a secret that contains another is removed whole.
  return [...forms].sort((left, right) => right.length - left.length)
}

const headerSecrets = (name: string, value: string): string[] => {
  if (!CREDENTIAL_HEADER.test(name)) return []
  const [, scheme, token] = /^(\S+)\s+(.+)$/.exec(value.trim()) ?? []
  if (!token) return [value]
  const secrets = [value, token]
  if (scheme!.toLowerCase() === 'basic') {
    const decoded = decodeBase64(token)
    if (decoded) secrets.push(decoded, decoded.slice(decoded.indexOf(':') + 1))
  }
  return secrets
}

const urlSecrets = (url: string): string[] => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return []
  }
  const secrets: string[] = []
  for (const part of [parsed.username, parsed.password]) if (part) secrets.push(part, safeDecodeURIComponent(part))
  for (const [name, value] of parsed.searchParams) if (CREDENTIAL_QUERY.test(name)) secrets.push(value)
  return secrets
}

/** The adapter that reads the credential, for the keys inside a structured one. */
type CredentialReader = Pick<ProviderAdapter, 'credential'>

const credentialParts = (rawKey: string, adapter: CredentialReader): string[] => [rawKey, ...(adapter.credential?.innerSecrets(rawKey) ?? [])]

/** What a raw credential hides before any request is built: itself and each key inside it, as `adapter` reads it. */
export const credentialSecrets = (rawKey: string, adapter: CredentialReader): string[] => withQuotedForms(credentialParts(rawKey, adapter))

/** Every secret placed in `request` (credential headers, query parameters, userinfo), plus the raw credential and the keys inside it. */
export const sentSecrets = (request: UpstreamRequest, rawKey: string, adapter: CredentialReader): string[] => {
  const secrets = [...credentialParts(rawKey, adapter), ...urlSecrets(request.url)]
  for (const [name, value] of Object.entries(request.headers)) secrets.push(...headerSecrets(name, value))
  return withQuotedForms(secrets)
}
