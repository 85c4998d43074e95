/**
 * A loopback TCP proxy for fault tests: put it between a client (a storage driver, a gateway
 * process) and a real server, then make the network fail on demand.
 *
 * - `cut()`: the server went away. Every proxied connection is destroyed (both ends) and the port
 *   stops listening, so new connections are refused (ECONNREFUSED). `cut({ shouldReset: true })` resets
 *   the clients' connections (ECONNRESET) instead of closing them.
 * - `blackhole()`: the server stopped answering. Connections stay open and new ones are still
 *   accepted, but nothing is forwarded any more, in either direction: bytes and closes are
 *   swallowed, as in a network partition. Clients only notice through their own timeouts.
 * - `dropReplies()`: the server's answers are lost. What clients send still reaches the server, which acts on
 *   it, but nothing comes back (on open and new connections alike): a write that landed looks, to its client,
 *   like one that timed out.
 * - `restore()`: the network is back. The proxy listens again on the same port and forwards new
 *   connections. Connections that were blackholed (or lost replies) lost bytes, so they cannot continue: by default
 *   they are reset (both ends destroyed), like a firewall that lost their state; with
 *   `{ shouldResetBlackholed: false }` they stay silent forever, which tests that a client discards a
 *   connection that stopped answering instead of reusing it.
 *
 * `cut()` and `blackhole()` take effect at once (no need to await them); `restore()` resolves once
 * the port listens again. Always `close()` the proxy after the test.
 *
 * @example
 * const proxy = await startTcpProxy({ targetPort: 5432 })
 * const storage = await openSqlStorage({ url: `postgres://postgres@127.0.0.1:${proxy.port}/test` })
 * proxy.blackhole() // calls now fail after the driver's timeout
 * await proxy.restore()
 */
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net'

export interface TcpProxyOptions {
  /** Port of the real server. */
  targetPort: number
  /** Host of the real server (default 127.0.0.1). */
  targetHost?: string
  /** Port to listen on (default: a free one, kept across `cut()` and `restore()`). */
  port?: number
  /** Address to listen on (default 127.0.0.1). */
  host?: string
}

export interface CutOptions {
  /** Reset clients' connections (RST) rather than close them (FIN), as a host that went away does. */
  shouldReset?: boolean
}

export interface RestoreOptions {
  /** Destroy connections that were blackholed (default true); false leaves them open and silent. */
  shouldResetBlackholed?: boolean
}

export interface TcpProxy {
  /** The port clients connect to. */
  readonly port: number
  /** Destroys every connection and stops listening; resolves once the port is free. */
  cut(options?: CutOptions): Promise<void>
  /** Stops forwarding anything, on open and new connections alike, until `restore()` (no-op while cut). */
  blackhole(): void
  /** Forwards what clients send but none of the server's answers, until `restore()` (no-op while cut). */
  dropReplies(): void
  /** Listens (again) and forwards new connections; see the module comment for old ones. */
  restore(options?: RestoreOptions): Promise<void>
  /** Open client connections, including blackholed ones. */
  connectionCount(): number
  /** Destroys everything and stops listening for good. */
  close(): Promise<void>
}

/** One client connection and, unless it arrived during a blackhole, its connection upstream. */
interface Link {
  client: Socket
  upstream: Socket | undefined
  isBlackholed: boolean
  /** The server's bytes are dropped; the client's still go through. */
  isReplyDropped: boolean
}

const noop = () => {}

/** Starts a proxy listening on 127.0.0.1 (or `host`) that forwards to `targetHost:targetPort`. */
export const startTcpProxy = async (options: TcpProxyOptions): Promise<TcpProxy> => {
  const host = options.host ?? '127.0.0.1'
  const targetHost = options.targetHost ?? '127.0.0.1'
  const links = new Set<Link>()
  let mode: 'forwarding' | 'blackholed' | 'repliesDropped' | 'cut' = 'forwarding'
  let isClosed = false
  let server: Server | undefined
  let port = options.port ?? 0
  /** Listening and closing happen one after another, even when callers do not await them. */
  let transitions: Promise<void> = Promise.resolve()

  const enqueue = (step: () => Promise<void>): Promise<void> => {
    const next = transitions.then(step)
    transitions = next.catch(noop)
    return next
  }

  const destroyLink = (link: Link, shouldReset = false) => {
    links.delete(link)
    if (shouldReset) link.client.resetAndDestroy()
    else link.client.destroy()
    link.upstream?.destroy()
  }

  /** Forwards `from` to `to` with backpressure, unless the link is blackholed (or `from` is the server and its replies are dropped). */
  const forward = (from: Socket, to: Socket, link: Link) => {
    const isReply = from === link.upstream
    from.on('data', (chunk: Buffer) => {
      if (link.isBlackholed || (isReply && link.isReplyDropped)) return
      if (!to.write(chunk)) {
        from.pause()
        to.once('drain', () => from.resume())
      }
    })
    // A close is forwarded like data: a blackholed link swallows it and keeps the other end open.
    from.on('close', () => {
      if (!link.isBlackholed && !(isReply && link.isReplyDropped)) destroyLink(link)
    })
  }

  const accept = (client: Socket) => {
    client.on('error', noop)
    client.setNoDelay(true)
    const link: Link = { client, upstream: undefined, isBlackholed: mode === 'blackholed', isReplyDropped: mode === 'repliesDropped' }
    links.add(link)
    if (link.isBlackholed) {
      // Read and drop everything; the link never gets an upstream.
      client.on('data', noop)
      client.on('close', () => links.delete(link))
      return
    }
    const upstream = connect({ host: targetHost, port: options.targetPort })
    upstream.on('error', noop)
    upstream.setNoDelay(true)
    link.upstream = upstream
    forward(client, upstream, link)
    forward(upstream, client, link)
  }

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const next = createServer(accept)
      next.once('error', reject)
      next.listen(port, host, () => {
        next.off('error', reject)
        next.on('error', noop)
        port = (next.address() as AddressInfo).port
        server = next
        resolve()
      })
    })

  const cut = (cutOptions: CutOptions = {}): Promise<void> => {
    mode = 'cut'
    const closing = server
    server = undefined
    // close() stops accepting at once; its callback waits for the connections destroyed below.
    const closed = closing ? new Promise<void>((resolve) => closing.close(() => resolve())) : Promise.resolve()
    for (const link of [...links]) destroyLink(link, cutOptions.shouldReset)
    return enqueue(() => closed)
  }

  await enqueue(listen)

  return {
    get port() {
      return port
    },

    cut,

    blackhole() {
      if (mode === 'cut' || isClosed) return
      mode = 'blackholed'
      for (const link of links) {
        link.isBlackholed = true
        // Keep reading (and dropping) even where backpressure had paused a socket.
        link.client.resume()
        link.upstream?.resume()
      }
    },

    dropReplies() {
      if (mode === 'cut' || isClosed) return
      mode = 'repliesDropped'
      for (const link of links) {
        link.isReplyDropped = true
        link.upstream?.resume()
      }
    },

    restore(restoreOptions: RestoreOptions = {}) {
      if (isClosed) return Promise.reject(new Error('the TCP proxy is closed'))
      if (restoreOptions.shouldResetBlackholed ?? true) {
        for (const link of [...links]) if (link.isBlackholed || link.isReplyDropped) destroyLink(link)
      }
      mode = 'forwarding'
      return enqueue(async () => {
        if (!server && mode === 'forwarding' && !isClosed) await listen()
      })
    },

    connectionCount: () => links.size,

    async close() {
      isClosed = true
      await cut()
    },
  }
}
