/**
 * The runner's node:http server, and how it lets go of keep-alive connections at shutdown. `server.close()` stops
 * accepting and closes the connections idle at that moment, but a connection whose response was still running goes
 * back to keep-alive when it ends and is held until its client leaves or the keep-alive timeout (65 s) passes: the
 * runner then waited out its whole grace period. While draining, each response that ends closes the connections
 * that became idle, and each response started meanwhile says `Connection: close`, so the process exits once the
 * last request finished.
 */

import { createServer, type RequestListener, type Server } from 'node:http'

export interface DrainingServer {
  readonly server: Server
  /** From now on, a connection is closed as soon as it has no response in progress (`server.close()` is the caller's). */
  drain(): void
}

export const createDrainingServer = (listener: RequestListener): DrainingServer => {
  let isDraining = false
  // 'close' comes once the response is done and node:http has moved on (to a pipelined request's response, if one
  // waits on the connection): only then does the connection count as idle. A named function, so a response costs
  // one listener and no closure.
  function onResponseClose() {
    if (isDraining) server.closeIdleConnections()
  }
  const server = createServer((request, response) => {
    // The client learns not to send another request on this connection; node:http closes it after the response.
    if (isDraining) response.setHeader('connection', 'close')
    response.on('close', onResponseClose)
    listener(request, response)
  })
  return {
    server,
    drain() {
      isDraining = true
      server.closeIdleConnections()
    },
  }
}
