/**
 * The web plugin's search price in the spend reservation (docs/decisions.md, Plugins "When they run"): held before
 * the search, so a limit the search and the answer would pass together is a 402 before the engine or the model is
 * called; given back once the answer's usage carries the search, or charged when the request fails after it.
 *
 * Prices: the kit's test model costs $1 per million input tokens and $2 per million output tokens; a search $0.004.
 */

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createTestGateway, readEvents, scriptedProvider, type ScriptedProvider, type ScriptedReply, type TestGateway } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'
import { startSearxngFixture, type Upstream } from '../../helpers/upstream'

const SEARCH_PRICE = 0.004
const WEB = { input: 'tides in brest', max_output_tokens: 10, plugins: [{ id: 'web' }] }

let engine: Upstream
let testGateway: TestGateway | undefined
let model: ScriptedProvider
beforeAll(async () => (engine = await startSearxngFixture()))
afterAll(() => engine.close())
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
  engine.requests.length = 0
})

/** A gateway whose model answers `reply`, and a key held to `limit` USD. */
const serve = async (limit: number, reply: ScriptedReply = [{ type: 'text', text: 'Two tides a day.' }, { type: 'usage', inputTokens: 300, outputTokens: 5 }]) => {
  model = scriptedProvider({ reply })
  testGateway = await createTestGateway({ providers: { scripted: model }, serverTools: { webSearch: { searxng: { baseURL: `${engine.url}/`, pricePerRequest: SEARCH_PRICE } } } })
  const created = await readJson(await testGateway.call('POST', '/keys', { json: { name: 'Limited', limit } }))
  return { key: created.key as string, hash: created.data.hash as string }
}

const usageOf = async (hash: string): Promise<number> => {
  await testGateway!.gateway.flushSpend()
  return (await readJson(await testGateway!.call('GET', `/keys/${hash}`))).data.usage
}

describe('the web plugin and spend limits', () => {
  it('refuses with 402 before the search or the model when the search price would pass the limit', async () => {
    const { key, hash } = await serve(0.003)
    const refused = await testGateway!.call('POST', '/responses', { key, json: WEB })
    expect(refused.status).toBe(402)
    expect(await readJson(refused)).toEqual({
      error: {
        code: 402,
        message:
          'API key limit reached: the key may spend $0.003 in total, $0.00 of it is spent, and this request could cost up to $0.004; ' +
          "that is the request's plugins' price before any model answers; leave the plugin out or raise the key's limit",
        metadata: { error_type: 'payment_required', limit: 'key' },
      },
    })
    expect(engine.requests).toHaveLength(0)
    expect(model.calls).toHaveLength(0)
    expect(await usageOf(hash)).toBe(0)
  })

  it('refuses with 402 before the model when the search fits but the search and the answer together would not', async () => {
    // $0.0041 left: the search ($0.004) fits; with the answer's worst case (a prompt holding the results) it does not.
    const { key, hash } = await serve(0.0041)
    const refused = await testGateway!.call('POST', '/responses', { key, json: WEB })
    expect(refused.status).toBe(402)
    expect(model.calls).toHaveLength(0)
    // The search ran and is charged: it was reserved, so the limit is not passed.
    expect(engine.requests).toHaveLength(1)
    expect(await usageOf(hash)).toBe(SEARCH_PRICE)
  })

  it('settles whole and streamed answers at their real cost, the search included', async () => {
    const { key, hash } = await serve(0.05)
    const whole = await readJson(await testGateway!.call('POST', '/responses', { key, json: WEB }))
    // 300 tokens in at $1/M, 5 out at $2/M, and the search.
    expect(whole.usage.cost).toBe(0.00431)
    expect(await usageOf(hash)).toBe(0.00431)
    const events = await readEvents(await testGateway!.call('POST', '/responses', { key, json: { ...WEB, stream: true } }))
    expect(events.at(-1)!.response.usage.cost).toBe(0.00431)
    expect(await usageOf(hash)).toBe(0.00862)
  })

  it('charges the search when the model then fails', async () => {
    const { key, hash } = await serve(0.05, [{ type: 'http_error', status: 400, message: 'Bad request' }])
    expect((await testGateway!.call('POST', '/responses', { key, json: WEB })).status).toBe(400)
    expect(await usageOf(hash)).toBe(SEARCH_PRICE)
    expect((await testGateway!.call('POST', '/responses', { key, json: { ...WEB, stream: true } })).status).toBe(400)
    expect(await usageOf(hash)).toBe(2 * SEARCH_PRICE)
  })
})
