// @ts-check
/**
 * The gateway under test, alone in its own process so its CPU time is its own: the built package
 * (`BENCH_BUILD_DIR`, dist/ or the bench's private build of the same tsup config) served by
 * node:http through `toNodeListener`, pooled undici upstream transport, memory storage (its calls counted), no logger,
 * and two providers pointed at the loopback upstream (`BENCH_UPSTREAM_URL`): `openai` (Responses wire, model
 * `openai/gpt-4.1`) and `groq` (Chat Completions wire, model `bench/chat-model`, which modelgate translates to
 * and from Responses).
 */

import { createServer } from 'node:http'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { answerStatsRequests, reportReady } from './process-stats.mjs'

const buildDir = process.env.BENCH_BUILD_DIR
const upstreamUrl = process.env.BENCH_UPSTREAM_URL
if (!buildDir || !upstreamUrl) throw new Error('gateway.mjs needs BENCH_BUILD_DIR and BENCH_UPSTREAM_URL')

const load = (/** @type {string} */ file) => import(pathToFileURL(join(buildDir, file)).href)
const [{ createGateway, memoryStorage }, { toNodeListener }, { undiciTransport }] = await Promise.all([
  load('index.js'),
  load('adapters/node.js'),
  load('transport/undici.js'),
])

/**
 * The memory store, counting the driver calls the gateway makes: on Redis or SQL each would be a command or a
 * statement, so the count per request is what the gateway asks of a networked store (its usage record, spend
 * counters, key and workspace reads).
 */
const countCalls = (/** @type {Record<string, unknown>} */ driver) => {
  const counted = { calls: 0 }
  const proxy = new Proxy(driver, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver)
      if (typeof value !== 'function' || name === 'close') return value
      return (/** @type {unknown[]} */ ...args) => {
        counted.calls++
        return value.apply(target, args)
      }
    },
  })
  return { proxy, counted }
}

const store = countCalls(memoryStorage())
const transport = undiciTransport()
const gateway = createGateway({
  storage: /** @type {any} */ (store.proxy),
  logger: false,
  transport,
  providers: {
    openai: { baseURL: upstreamUrl, apiKey: 'sk-bench-0123456789abcdef' },
    groq: { baseURL: upstreamUrl, apiKey: 'sk-bench-0123456789abcdef' },
  },
  // One endpoint only, so no request of the translated phase is routed anywhere else.
  models: [
    {
      slug: 'bench/chat-model',
      name: 'Bench model on a Chat Completions upstream',
      endpoints: [{ provider: 'groq', model: 'gpt-4.1-mini', contextLength: 1_047_576, pricing: { prompt: 0.4e-6, completion: 1.6e-6 } }],
    },
  ],
})
const { key } = await gateway.admin.createKey({ kind: 'regular', name: 'bench' })

const server = createServer(toNodeListener(gateway))
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => {
  const address = /** @type {import('node:net').AddressInfo} */ (server.address())
  reportReady({ url: `http://127.0.0.1:${address.port}`, key })
})
answerStatsRequests(
  async () => {
    await new Promise((resolve) => server.close(() => resolve(undefined)))
    await transport.close()
    await gateway.close()
  },
  () => ({ storeCalls: store.counted.calls }),
)
