// @ts-check
/**
 * Portkey's AI Gateway (`@portkey-ai/gateway`, the npm package), alone in its own process like every other
 * target, so its CPU time and memory are its own. It is started as its own CLI starts it (`--port=… --headless`),
 * in this process, and sends each request to the loopback upstream named by `x-portkey-custom-host` (the
 * target's headers, bench/targets.ts). Production mode keeps its per-request console logging off.
 */

import { createRequire } from 'node:module'
import { createServer, connect } from 'node:net'
import { answerStatsRequests, reportReady } from './process-stats.mjs'

/** A port nobody listens on right now (Portkey takes a fixed port, not 0). */
const freePort = () =>
  new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (probe.address())
      probe.close(() => resolve(port))
    })
  })

/** Resolves once something accepts connections on `port`. */
const accepting = async (/** @type {number} */ port) => {
  for (let attempt = 0; attempt < 200; attempt++) {
    const isOpen = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (isOpen) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`Portkey did not listen on port ${port}`)
}

// Portkey 1.15 appends its own headers to the upstream's Response, which Node's fetch makes immutable, and answers
// every stream with a 500 ("immutable"). A Response rebuilt around the same body has mutable headers: one object
// per call, small beside what a gateway spends per request (bench/README.md says so next to the numbers).
const upstreamFetch = globalThis.fetch
/** @type {typeof fetch} */
const fetchWithMutableHeaders = async (input, init) => {
  const response = await upstreamFetch(input, init)
  return new Response(response.body, response)
}
globalThis.fetch = fetchWithMutableHeaders

const port = await freePort()
process.env.NODE_ENV = 'production'
process.argv.push(`--port=${port}`, '--headless')
const entry = createRequire(import.meta.url).resolve('@portkey-ai/gateway/build/start-server.js')
await import(entry)
await accepting(Number(port))
reportReady({ url: `http://127.0.0.1:${port}` })
answerStatsRequests(() => {})
