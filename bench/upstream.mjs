// @ts-check
/**
 * The loopback upstream: a bare node:http server speaking the OpenAI Responses wire with the
 * recorded fixtures, byte for byte, and no added latency. A streamed answer goes out one SSE event
 * per write, each in its own turn of the event loop, so the client sees a real stream of chunks
 * (as from OpenAI, minus the model's think time) rather than one buffer.
 */

import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { answerStatsRequests, reportReady } from './process-stats.mjs'

const fixtures = new URL('../test/fixtures/providers/openai/', import.meta.url)
const json = readFileSync(new URL('text.json', fixtures))
const sse = readFileSync(new URL('text.sse', fixtures))

/** The stream split after each blank line; the parts concatenate back to the fixture exactly. */
/** @type {Buffer[]} */
const events = []
for (let start = 0; start < sse.length; ) {
  const end = sse.indexOf('\n\n', start)
  const stop = end === -1 ? sse.length : end + 2
  events.push(sse.subarray(start, stop))
  start = stop
}

/** @param {import('node:http').ServerResponse} res */
const writeEvents = (res, index = 0) => {
  if (res.destroyed) return
  if (index === events.length) return void res.end()
  res.write(events[index])
  setImmediate(writeEvents, res, index + 1)
}

const server = createServer((req, res) => {
  /** @type {Buffer[]} */
  const chunks = []
  req.on('data', (chunk) => chunks.push(chunk))
  req.on('end', () => {
    let isStream = false
    try {
      isStream = JSON.parse(Buffer.concat(chunks).toString('utf8')).stream === true
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad json"}}')
      return
    }
    if (!isStream) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': json.length }).end(json)
      return
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' })
    res.flushHeaders()
    writeEvents(res)
  })
})
server.keepAliveTimeout = 60_000

server.listen(0, '127.0.0.1', () => {
  const address = /** @type {import('node:net').AddressInfo} */ (server.address())
  reportReady({ url: `http://127.0.0.1:${address.port}` })
})
answerStatsRequests(() => new Promise((resolve) => server.close(() => resolve())))
