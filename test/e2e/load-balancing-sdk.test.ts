/**
 * The default load balancing end to end (docs/decisions.md, "Load balancing"): the official `openai` SDK against a
 * gateway on a real node:http server whose model is served by two loopback Chat Completions upstreams, one at twice
 * the other's price. Under the default (`routing.balancing` unset) both get traffic, the cheaper about four times as
 * much; a conversation that goes on stays on one of them. The pick's random source is seeded, so the run is repeatable.
 */

import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toNodeListener } from '../../src/adapters/node'
import { silentLogger } from '../../src/core/logger'
import { createGateway, type Gateway } from '../../src/gateway/gateway'
import { memoryStorage } from '../../src/storage/memory'
import { seededRandom } from '../helpers/seeded-random'
import { jsonFixture, startUpstream, type Upstream } from '../helpers/upstream'

const MODEL = 'local/balanced'
const REQUESTS = 40

let cheap: Upstream
let dear: Upstream
let gateway: Gateway
let server: Server
let client: OpenAI

beforeAll(async () => {
  cheap = await startUpstream(() => jsonFixture('openai-chat', 'text.json'))
  dear = await startUpstream(() => jsonFixture('openai-chat', 'text.json'))
  gateway = createGateway({
    storage: memoryStorage(),
    logger: silentLogger,
    providers: {
      cheap: { api: 'openai-chat', baseURL: cheap.url, apiKey: 'sk-cheap-0123456789abcdef' },
      dear: { api: 'openai-chat', baseURL: dear.url, apiKey: 'sk-dear-0123456789abcdef' },
    },
    models: [
      {
        slug: MODEL,
        name: 'Balanced chat',
        endpoints: [
          { provider: 'cheap', model: 'chat-model', contextLength: 32_000, pricing: { prompt: 0.000001, completion: 0.000002 } },
          { provider: 'dear', model: 'chat-model', contextLength: 32_000, pricing: { prompt: 0.000002, completion: 0.000004 } },
        ],
      },
    ],
    // The default balancing, with a seeded random source instead of Math.random.
    routing: { random: seededRandom(42) },
  })
  const { key } = await gateway.admin.createKey({ kind: 'regular', name: 'load balancing' })
  server = createServer(toNodeListener(gateway))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  client = new OpenAI({ apiKey: key, baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`, maxRetries: 0 })
})

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve))
  await gateway.close()
  await Promise.all([cheap.close(), dear.close()])
})

describe('default load balancing through the openai SDK', () => {
  it('sends traffic to both providers, weighted by the inverse square of their prices', async () => {
    for (let index = 0; index < REQUESTS; index++) {
      // A new conversation each time, so none is held to the endpoint that served it.
      const completion = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `Question number ${index}` }] })
      expect(completion.choices[0]!.message.content).toBeTruthy()
    }
    expect(cheap.requests.length + dear.requests.length).toBe(REQUESTS)
    expect(dear.requests.length).toBeGreaterThan(0)
    expect(cheap.requests.length).toBeGreaterThan(dear.requests.length)
  })

  it('keeps a conversation that goes on with the provider that served its first turn', async () => {
    const before = { cheap: cheap.requests.length, dear: dear.requests.length }
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'Answer in one word.' },
      { role: 'user', content: 'Which colour is the sky?' },
    ]
    for (let turn = 0; turn < 8; turn++) {
      const completion = await client.chat.completions.create({ model: MODEL, messages })
      messages.push({ role: 'assistant', content: completion.choices[0]!.message.content ?? '' }, { role: 'user', content: `Turn ${turn}: and now?` })
    }
    const served = [cheap.requests.length - before.cheap, dear.requests.length - before.dear]
    expect(served.sort()).toEqual([0, 8])
  })
})
