// modelgate on Deno.serve. Run `npm run build` at the repo root first, then (from the repo root)
// `deno run --config examples/deno/deno.json --allow-net --allow-env --allow-read examples/deno/server.ts`.
import { createGateway } from 'modelgate'
import { serveDeno } from 'modelgate/adapters/deno'

const port = Number(Deno.env.get('PORT') || 8787)
const host = Deno.env.get('HOST') || '127.0.0.1'

const gateway = createGateway()
// Never log this value: it is a bearer credential.
const managementKey = Deno.env.get('MODELGATE_MANAGEMENT_KEY')
if (managementKey) await gateway.admin.ensureManagementKey(managementKey)

const server = serveDeno(gateway, {
  port,
  hostname: host,
  // Replaces Deno's own "Listening on" line, so exactly one line is printed.
  onListen: ({ port: boundPort }) => {
    console.log(`modelgate listening on http://${host.includes(':') ? `[${host}]` : host}:${boundPort}`)
  },
})

let isShuttingDown = false
const shutdown = async () => {
  if (isShuttingDown) Deno.exit(1) // a second signal means "now"
  isShuttingDown = true
  await server.shutdown()
  await gateway.close()
}
Deno.addSignalListener('SIGINT', shutdown)
Deno.addSignalListener('SIGTERM', shutdown)
