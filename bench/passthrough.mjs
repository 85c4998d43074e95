// @ts-check
/**
 * The bare pass-through baseline: what any Node gateway that works on web Requests pays before it
 * does anything of its own. node:http front → web `Request` (body read as text, as a gateway must
 * read it to route) → upstream with `undici.request` over a pooled Agent (`BENCH_CLIENT=undici`) or
 * the global `fetch` (`BENCH_CLIENT=fetch`) → the upstream's status, content type and body streamed
 * back. No auth, no validation, no translation: a Chat Completions request goes to the upstream's
 * `/chat/completions` as it came, a Responses request to its `/responses`.
 */

import { createServer } from 'node:http'
import { Agent, request as undiciRequest } from 'undici'
import { answerStatsRequests, reportReady } from './process-stats.mjs'

const upstreamUrl = process.env.BENCH_UPSTREAM_URL
const client = process.env.BENCH_CLIENT ?? 'undici'
if (!upstreamUrl) throw new Error('passthrough.mjs needs BENCH_UPSTREAM_URL')
const agent = new Agent({ connections: 256, keepAliveTimeout: 60_000, pipelining: 1 })

/** @param {import('node:http').IncomingMessage} req */
const toWebRequest = (req) => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value)
  }
  const body = new ReadableStream({
    start(controller) {
      req.on('data', (chunk) => controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)))
      req.on('end', () => controller.close())
      req.on('error', (error) => controller.error(error))
    },
  })
  /** @type {RequestInit & { duplex: 'half' }} */
  const init = { method: req.method, headers, body, duplex: 'half' }
  return new Request(`http://${req.headers.host}${req.url}`, init)
}

/** @returns {Promise<{ status: number, contentType: string, body: AsyncIterable<Uint8Array> }>} */
const send = async (/** @type {string} */ path, /** @type {string} */ text, /** @type {string} */ authorization) => {
  const headers = { 'content-type': 'application/json', authorization }
  if (client === 'fetch') {
    const response = await fetch(`${upstreamUrl}${path}`, { method: 'POST', headers, body: text })
    return {
      status: response.status,
      contentType: response.headers.get('content-type') ?? '',
      body: /** @type {AsyncIterable<Uint8Array>} */ (/** @type {unknown} */ (response.body)),
    }
  }
  const response = await undiciRequest(`${upstreamUrl}${path}`, { method: 'POST', headers, body: text, dispatcher: agent })
  return { status: response.statusCode, contentType: String(response.headers['content-type'] ?? ''), body: response.body }
}

const server = createServer(async (req, res) => {
  try {
    const request = toWebRequest(req)
    const text = await request.text()
    const upstream = await send(req.url ?? '/', text, request.headers.get('authorization') ?? '')
    res.writeHead(upstream.status, { 'content-type': upstream.contentType })
    for await (const chunk of upstream.body) res.write(chunk)
    res.end()
  } catch {
    if (!res.headersSent) res.writeHead(502)
    res.end()
  }
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => {
  const address = /** @type {import('node:net').AddressInfo} */ (server.address())
  reportReady({ url: `http://127.0.0.1:${address.port}` })
})
answerStatsRequests(async () => {
  await new Promise((resolve) => server.close(() => resolve(undefined)))
  await agent.close()
})
