// modelgate on plain node:http. Run `npm run build` at the repo root first, then `node examples/node-http/server.mjs`.
import http from 'node:http'
import { createGateway } from 'modelgate'
import { toNodeListener } from 'modelgate/adapters/node'

const port = Number(process.env.PORT || 8787)
const host = process.env.HOST || '127.0.0.1'

const gateway = createGateway()
// Never log this value: it is a bearer credential.
const managementKey = process.env.MODELGATE_MANAGEMENT_KEY
if (managementKey) await gateway.admin.ensureManagementKey(managementKey)

const server = http.createServer(toNodeListener(gateway))
server.listen(port, host, () => {
  const { port: boundPort } = server.address()
  console.log(`modelgate listening on http://${host.includes(':') ? `[${host}]` : host}:${boundPort}`)
})

let isShuttingDown = false
const shutdown = async () => {
  if (isShuttingDown) process.exit(1) // a second signal means "now"
  isShuttingDown = true
  // Stop accepting connections, let in-flight requests finish, then release the gateway's resources.
  await new Promise((resolve) => {
    server.close(resolve)
    server.closeIdleConnections()
  })
  await gateway.close()
}
process.on('SIGINT', shutdown)
process.on('SIGTERM', shutdown)
