/**
 * The guard for every upstream location a caller chooses instead of the operator: Azure BYOK endpoints and
 * resource names today, any URL the gateway fetches on a caller's behalf tomorrow (images, web fetch). Two
 * checks: `checkUrl` on the parsed URL (scheme, userinfo, port, host family; no IP literals), and
 * `isAllowedAddress` on each address the host resolves to, run where the connection is made so that a name
 * re-pointed between check and use (DNS rebinding) gains nothing. See docs/decisions.md, "Upstream I/O".
 */

import ipaddr from 'ipaddr.js'

/** One answer of a name lookup. */
export interface ResolvedAddress {
  address: string
  family: 4 | 6
}

/** Resolves a DNS name to every address it has (like `dns.lookup(name, {all: true})`). */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>

/**
 * Marks an upstream location that came from a caller (a credential, a URL in the input) rather than from
 * configuration. `hostSuffixes` are the DNS suffixes its host must sit under; empty means any public name.
 */
export interface CallerDestination {
  /** Names the rule in messages and in `upstreamGuard.extraHostSuffixes` (e.g. `azure`). */
  family: string
  hostSuffixes: readonly string[]
}

/** The operator's policy (`createGateway({ upstreamGuard })`); every field defaults to the strict choice. */
export interface UpstreamGuardOptions {
  /**
   * `true` lets caller-chosen hosts resolve to loopback, private, link-local (cloud metadata too) and other
   * non-public addresses; a list of CIDR ranges allows only those. Default: public addresses only.
   */
  allowPrivateNetworks?: boolean | string[]
  /** Accept `http://` as well as `https://` (default false). */
  allowHttp?: boolean
  /** Ports accepted besides the scheme's default (default none). */
  allowedPorts?: number[]
  /** More DNS suffixes per family, e.g. `{ azure: ['openai.azure.us'] }` for a sovereign cloud. */
  extraHostSuffixes?: Record<string, string[]>
  /** Name resolution for the checks; defaults to the system resolver (`node:dns` lookup). */
  resolve?: HostResolver
}

/** Why the gateway will not send a caller's request somewhere. The reason is safe to show: it never quotes the URL. */
export class DestinationRefusedError extends Error {
  constructor(readonly reason: string) {
    super(`upstream destination refused: ${reason}`)
    this.name = 'DestinationRefusedError'
  }
}

export interface UpstreamGuard {
  /** Parses and checks a caller-supplied URL; throws `DestinationRefusedError`, else returns the parsed URL. */
  checkUrl(url: string, destination: CallerDestination): URL
  /** Whether a connection to this (resolved) address may be made for a caller. */
  isAllowedAddress(address: string): boolean
  /** The operator's resolver, when one was given. */
  readonly resolve: HostResolver | undefined
}

// Lowercase letter-digit-hyphen labels, at least two of them, no empty label and no trailing dot.
const DNS_NAME = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/
// Names that mean "this machine" or "this site" whatever the resolver says.
const LOCAL_NAMES = /(?:^|\.)(?:localhost|localdomain|local|internal|home\.arpa|intranet|lan)$/
const NUMERIC_LABEL = /(?:^|\.)(?:\d+|0x[0-9a-f]*)$/

const toIPv4IfEmbedded = (address: ipaddr.IPv6): ipaddr.IPv4 | undefined => {
  if (address.isIPv4MappedAddress()) return address.toIPv4Address()
  // NAT64 (RFC 6052, 64:ff9b::/96): IPv6-only networks reach every IPv4 host this way, so classify the IPv4 inside.
  const bytes = address.toByteArray()
  if (address.range() === 'rfc6052' && bytes[4] === 0 && bytes[5] === 0) return new ipaddr.IPv4(bytes.slice(12))
  return undefined
}

/**
 * True only for globally routable unicast addresses: not loopback, private, link-local, CGNAT, multicast,
 * broadcast, documentation, benchmarking or otherwise reserved. IPv4 inside IPv4-mapped or NAT64 addresses is
 * classified as itself; other IPv6 forms that carry IPv4 (6to4, Teredo, IPv4-compatible, translated) are refused,
 * as is anything outside 2000::/3.
 */
export const isPublicAddress = (text: string): boolean => {
  if (!ipaddr.isValid(text)) return false
  const parsed = ipaddr.parse(text)
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast'
  const v6 = parsed as ipaddr.IPv6
  const embedded = toIPv4IfEmbedded(v6)
  if (embedded) return embedded.range() === 'unicast'
  return v6.range() === 'unicast' && v6.match(ipaddr.parseCIDR('2000::/3'))
}

const parseNetworks = (ranges: readonly string[]) =>
  ranges.map((range) => {
    if (!ipaddr.isValidCIDR(range)) throw new TypeError(`modelgate: upstreamGuard.allowPrivateNetworks: "${range}" is not a CIDR range`)
    return ipaddr.parseCIDR(range)
  })

const isInNetworks = (text: string, networks: ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]>): boolean => {
  if (!ipaddr.isValid(text)) return false
  const parsed = ipaddr.process(text)
  return networks.some(([network, bits]) => network.kind() === parsed.kind() && parsed.match(network, bits))
}

// Even where private networks are allowed, these are no host to connect to (0.0.0.0 even reaches this machine).
const NEVER_CONNECTABLE = new Set(['unspecified', 'multicast', 'broadcast'])
const isConnectable = (text: string) => ipaddr.isValid(text) && !NEVER_CONNECTABLE.has(ipaddr.process(text).range())

const normaliseSuffix = (suffix: string) => suffix.toLowerCase().replace(/^\.+|\.+$/g, '')

/** Builds the guard from the operator's policy; a malformed CIDR range throws at start-up. */
export const createUpstreamGuard = (options: UpstreamGuardOptions = {}): UpstreamGuard => {
  const privateNetworks = options.allowPrivateNetworks
  const networks = Array.isArray(privateNetworks) ? parseNetworks(privateNetworks) : []
  const allowedPorts = new Set(options.allowedPorts ?? [])
  const extraSuffixes = new Map(Object.entries(options.extraHostSuffixes ?? {}).map(([family, list]) => [family, list.map(normaliseSuffix)]))

  const checkHost = (hostname: string, destination: CallerDestination) => {
    if (hostname.startsWith('[') || ipaddr.isValid(hostname) || NUMERIC_LABEL.test(hostname)) {
      throw new DestinationRefusedError('the host must be a DNS name, not an IP address')
    }
    if (!DNS_NAME.test(hostname) || LOCAL_NAMES.test(hostname)) throw new DestinationRefusedError('the host must be a public DNS name')
    const suffixes = [...destination.hostSuffixes, ...(extraSuffixes.get(destination.family) ?? [])]
    if (suffixes.length > 0 && !suffixes.some((suffix) => hostname.endsWith(`.${suffix}`))) {
      throw new DestinationRefusedError(`the host must be under ${suffixes.map((suffix) => `*.${suffix}`).join(', ')}`)
    }
  }

  return {
    resolve: options.resolve,
    checkUrl(text, destination) {
      let url: URL
      try {
        url = new URL(text)
      } catch {
        throw new DestinationRefusedError('must be a valid URL')
      }
      const isHttps = url.protocol === 'https:'
      if (!isHttps && !(url.protocol === 'http:' && options.allowHttp)) {
        throw new DestinationRefusedError(options.allowHttp ? 'must use https or http' : 'must use https')
      }
      if (url.username || url.password) throw new DestinationRefusedError('must not carry a user name or password')
      // WHATWG parsing has already dropped a port equal to the scheme's default.
      if (url.port !== '' && !allowedPorts.has(Number(url.port))) throw new DestinationRefusedError(allowedPorts.size > 0 ? 'must use the default port or an allowed one' : 'must use the default port')
      // The parsed hostname: decimal, hex and octal IPv4 forms are dotted quads by now, and letters are lowercase.
      checkHost(url.hostname, destination)
      return url
    },
    isAllowedAddress(address) {
      if (isPublicAddress(address)) return true
      if (privateNetworks === true) return isConnectable(address)
      return isInNetworks(address, networks)
    },
  }
}

/** Throws unless there is at least one address and every one of them is allowed (a mixed answer is a rebinding trick). */
export const assertAllowedAddresses = (guard: UpstreamGuard, addresses: readonly ResolvedAddress[]): void => {
  if (addresses.length === 0) throw new DestinationRefusedError('the host must resolve')
  if (!addresses.every((entry) => guard.isAllowedAddress(entry.address))) {
    throw new DestinationRefusedError('the host must resolve to public addresses only')
  }
}
