// modelgate on Bun.serve. Run `npm run build` at the repo root first, then `bun examples/bun/server.ts`.
import { createGateway } from 'modelgate'
import { serveBun } from 'modelgate/adapters/bun'

const port = Number(process.env.PORT || 8787)
const host = process.env.HOST || '127.0.0.1'

const gateway = createGateway()
// Never log this value: it is a bearer credential.
const managementKey = process.env.MODELGATE_MANAGEMENT_KEY
if (managementKey) await gateway.admin.ensureManagementKey(managementKey)

// serveBun raises Bun's 10 s idle timeout to its 255 s maximum, so slow first tokens are not cut off.
const server = serveBun(gateway, { port, hostname: host })
console.log(`modelgate listening on http://${host.includes(':') ? `[${host}]` : host}:${server.port}`)

let isShuttingDown = false
const shutdown = async () => {
  if (isShuttingDown) process.exit(1) // a second signal means "now"
  isShuttingDown = true
  await server.stop()
  await gateway.close()
}
process.on('SIGINT', shutdown)
process.on('SIGTERM', shutdown)
