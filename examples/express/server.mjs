// modelgate mounted in an Express app under /ai. Run `npm run build` at the repo root first, then
// `node examples/express/server.mjs`.
import express from 'express'
import { createGateway } from 'modelgate'
import { toExpressHandler } from 'modelgate/adapters/express'

const port = Number(process.env.PORT || 8787)
const host = process.env.HOST || '127.0.0.1'

const gateway = createGateway()
// Never log this value: it is a bearer credential.
const managementKey = process.env.MODELGATE_MANAGEMENT_KEY
if (managementKey) await gateway.admin.ensureManagementKey(managementKey)

const app = express()
// Mount modelgate before any body parser: it streams request bodies itself.
app.use('/ai', toExpressHandler(gateway))
app.use(express.json())
app.get('/', (_req, res) => {
  res.json({ service: 'host app', gateway: '/ai/api/v1' })
})

const server = app.listen(port, host, (error) => {
  if (error) throw error
  const { port: boundPort } = server.address()
  console.log(`modelgate listening on http://${host.includes(':') ? `[${host}]` : host}:${boundPort}`)
})

let isShuttingDown = false
const shutdown = async () => {
  if (isShuttingDown) process.exit(1) // a second signal means "now"
  isShuttingDown = true
  await new Promise((resolve) => {
    server.close(resolve)
    server.closeIdleConnections()
  })
  await gateway.close()
}
process.on('SIGINT', shutdown)
process.on('SIGTERM', shutdown)
