/**
 * Which hostname a request was addressed to, from a source the operator trusts. By default that is
 * the host the server was reached on (the `Host` header, else the request URL); forwarded headers
 * are read only when the operator names one that their proxy sets, since any client can send them.
 */

/** Lowercase, without port or trailing dot: `EU.Example.com.:443` → `eu.example.com`. */
const normalizeHost = (host: string): string => {
  const trimmed = host.trim().toLowerCase()
  const withoutPort = trimmed.startsWith('[') ? trimmed.slice(0, trimmed.indexOf(']') + 1) : trimmed.replace(/:\d*$/, '')
  return withoutPort.replace(/\.$/, '')
}

// RFC 7239 `Forwarded: for=…;host=example.com;proto=https`.
const FORWARDED_HOST = /(?:^|;)\s*host\s*=\s*(?:"([^"]*)"|([^;,\s]*))/i

/**
 * The value a trusted proxy put in `header`: the last entry, since a proxy that appends puts its
 * own after whatever the client sent. `null` when the header is absent or empty.
 */
const trustedHeaderHost = (request: Request, header: string): string | null => {
  const value = request.headers.get(header)
  const last = value?.split(',').at(-1)?.trim()
  if (!last) return null
  if (header !== 'forwarded') return last
  const match = FORWARDED_HOST.exec(last)
  return match?.[1] ?? match?.[2] ?? null
}

/**
 * The hostname the request was addressed to. With `trustedHostHeader` (e.g. `x-forwarded-host`,
 * `forwarded`) that header decides, falling back to the host the server was reached on when a
 * request arrives without it (it did not come through the proxy).
 */
export const requestHostname = (request: Request, trustedHostHeader: string | undefined): string => {
  const forwarded = trustedHostHeader ? trustedHeaderHost(request, trustedHostHeader) : null
  return normalizeHost(forwarded ?? request.headers.get('host') ?? new URL(request.url).host)
}
