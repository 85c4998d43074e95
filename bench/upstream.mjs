// @ts-check
/**
 * The loopback upstream: a bare node:http server that answers the recorded fixtures, byte for byte,
 * with no added latency. `POST …/chat/completions` speaks the OpenAI Chat Completions wire
 * (test/fixtures/providers/openai-chat/); every other path speaks the OpenAI Responses wire
 * (test/fixtures/providers/openai/). A streamed answer goes out one SSE event per write, each in its
 * own turn of the event loop, so the client sees a real stream of chunks (as from OpenAI, minus the
 * model's think time) rather than one buffer. Both wires are paced alike.
 */

import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { answerStatsRequests, reportReady } from './process-stats.mjs'

/** The stream split after each blank line; the parts concatenate back to the fixture exactly. */
const splitEvents = (/** @type {Buffer} */ sse) => {
  /** @type {Buffer[]} */
  const events = []
  for (let start = 0; start < sse.length; ) {
    const end = sse.indexOf('\n\n', start)
    const stop = end === -1 ? sse.length : end + 2
    events.push(sse.subarray(start, stop))
    start = stop
  }
  return events
}

const loadFixtures = (/** @type {string} */ folder) => {
  const base = new URL(`../test/fixtures/providers/${folder}/`, import.meta.url)
  return { json: readFileSync(new URL('text.json', base)), events: splitEvents(readFileSync(new URL('text.sse', base))) }
}

const responsesFixtures = loadFixtures('openai')
const chatFixtures = loadFixtures('openai-chat')

/**
 * @param {import('node:http').ServerResponse} res
 * @param {Buffer[]} events
 */
const writeEvents = (res, events, index = 0) => {
  if (res.destroyed) return
  if (index === events.length) return void res.end()
  res.write(events[index])
  setImmediate(writeEvents, res, events, index + 1)
}

const server = createServer((req, res) => {
  const fixtures = req.url?.endsWith('/chat/completions') ? chatFixtures : responsesFixtures
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
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': fixtures.json.length }).end(fixtures.json)
      return
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' })
    res.flushHeaders()
    writeEvents(res, fixtures.events)
  })
})
server.keepAliveTimeout = 60_000

server.listen(0, '127.0.0.1', () => {
  const address = /** @type {import('node:net').AddressInfo} */ (server.address())
  // How many events each stream has: the runner's stream targets are set for a stream of a given length.
  reportReady({ url: `http://127.0.0.1:${address.port}`, responsesEvents: String(responsesFixtures.events.length), chatEvents: String(chatFixtures.events.length) })
})
answerStatsRequests(() => new Promise((resolve) => server.close(() => resolve())))
