import type { Server } from 'node:http'

/** Closes a test server at once, connections included. */
export const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  })
