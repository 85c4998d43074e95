/**
 * The use-time check of an upstream location that came from a caller. The URL is checked here, for every
 * transport. Its addresses are checked where the connection is made when the transport can (undici's `lookup`),
 * and otherwise here, just before the call: then the transport resolves the name once more on its own, a window
 * that only a transport with a connect hook closes (docs/decisions.md, "Upstream I/O").
 */

import { assertAllowedAddresses, DestinationRefusedError, type CallerDestination, type HostResolver, type UpstreamGuard } from '../core/upstream-guard'
import type { UpstreamTransport } from '../transport/contract'

let systemResolver: Promise<HostResolver> | undefined

// Loaded on first need, so runtimes without `node:dns` only fail here, and only when no resolver was configured.
const loadSystemResolver = (): Promise<HostResolver> =>
  (systemResolver ??= import('../transport/system-resolver').then(
    (module) => module.systemResolver,
    () => {
      throw new DestinationRefusedError('no name resolver is available in this runtime (set upstreamGuard.resolve)')
    },
  ))

export const checkCallerDestination = async (
  url: string,
  destination: CallerDestination,
  guard: UpstreamGuard,
  transport: UpstreamTransport,
): Promise<void> => {
  const { hostname } = guard.checkUrl(url, destination)
  if (transport.hasConnectGuard) return
  const resolve = guard.resolve ?? (await loadSystemResolver())
  assertAllowedAddresses(guard, await resolve(hostname))
}
