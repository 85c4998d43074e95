/**
 * The system's name resolution (`dns.lookup`, as sockets use it: hosts file, search domains, every address).
 * Node, Bun and Deno all serve `node:dns`; core loads this module only when a caller-chosen upstream needs a
 * lookup and the operator gave no `upstreamGuard.resolve`, so other runtimes never import it.
 */

import { lookup } from 'node:dns/promises'
import type { HostResolver } from '../core/upstream-guard'

export const systemResolver: HostResolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }))
