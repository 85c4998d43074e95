/**
 * A server-tool loop's paid calls against spend limits (docs/decisions.md, "Books that balance", Loops hold each
 * step): a priced search holds its price before the engine is asked, and a nested model call (an advisor) holds its
 * worst case before it is sent. A call the limit cannot hold is not run: the model reads why, the client sees the
 * call's item failed, and nothing it did not run is charged.
 *
 * Prices: the kit's test model costs $1 per million input tokens and $2 per million output tokens (a turn reporting
 * 10 in and 5 out costs $0.00002); a search costs $0.001.
 */

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createTestGateway, readEvents, scriptedProvider, type ScriptedCall, type ScriptedProvider, type ScriptedReply, type TestGateway } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'
import { startSearxngFixture, type Upstream } from '../../helpers/upstream'

const SEARCH_PRICE = 0.001
const TURN = { type: 'usage' as const, inputTokens: 10, outputTokens: 5 }
const TURN_COST = 0.00002
const search = (query: string): ScriptedReply => [{ type: 'function_call', name: 'service_web_search', arguments: JSON.stringify({ query }), callId: `call_${query.replace(/\W/g, '_')}` }, TURN]
const ANSWER: ScriptedReply = [{ type: 'text', text: 'Two tides a day.' }, TURN]
const WEB_SEARCH = [{ type: 'service:web_search', parameters: { engine: 'searxng' } }]

const ADVISOR_MODEL = 'test/advisor'
// No published output limit: an advisor call reserves 32,768 tokens of output at $20 per million, about $0.66.
const advisorEntry = {
  slug: ADVISOR_MODEL,
  name: 'Advisor',
  endpoints: [{ provider: 'advisor', model: 'advisor-model', contextLength: 128_000, pricing: { prompt: 0.00001, completion: 0.00002 } }],
}

let engine: Upstream
let testGateway: TestGateway | undefined
beforeAll(async () => (engine = await startSearxngFixture()))
afterAll(() => engine.close())
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
  engine.requests.length = 0
})

/** A gateway whose model answers `replies` in turn (an advisor model beside it), and a key held to `limit` USD. */
const serve = async (limit: number, replies: ScriptedReply[], advisorReplies: ScriptedReply[] = []) => {
  const model = scriptedProvider({ replies })
  const advisor = scriptedProvider({ replies: advisorReplies })
  testGateway = await createTestGateway({
    providers: { scripted: model, advisor },
    models: [advisorEntry],
    serverTools: { webSearch: { searxng: { baseURL: `${engine.url}/`, pricePerRequest: SEARCH_PRICE } } },
  })
  const created = await readJson(await testGateway.call('POST', '/keys', { json: { name: 'Limited', limit } }))
  return { model, advisor, key: created.key as string, hash: created.data.hash as string }
}

const usageOf = async (hash: string): Promise<number> => {
  await testGateway!.gateway.flushSpend()
  return (await readJson(await testGateway!.call('GET', `/keys/${hash}`))).data.usage
}

/** What the model read for its server calls in one turn. */
const resultsOf = (call: ScriptedCall) =>
  (call.input as Array<Record<string, unknown>>).filter((item) => item.type === 'function_call_output').map((item) => String(item.output))

const post = (key: string, body: Record<string, unknown>) => testGateway!.call('POST', '/responses', { key, json: { input: 'Tides in Brest?', max_output_tokens: 10, ...body } })

describe('a priced search holds its price before the engine is asked', () => {
  it('runs the searches the limit can hold and refuses the next, which the model reads; nothing refused is charged', async () => {
    // $0.0035: two searches fit; a third does not beside them and the next turn's worst case (its prompt holds the
    // results, at $1 per million tokens), which is held while the tools run.
    const { model, key, hash } = await serve(0.0035, [search('one'), search('two'), search('three'), ANSWER])
    const response = await post(key, { tools: WEB_SEARCH })
    expect(response.status).toBe(200)
    const body = await readJson(response)
    expect(body.status).toBe('completed')
    expect(engine.requests).toHaveLength(2)
    expect(body.output.filter((item: { type: string }) => item.type === 'web_search_call').map((item: { status: string }) => item.status)).toEqual([
      'completed',
      'completed',
      'failed',
    ])
    const [refused] = resultsOf(model.calls[3]!).slice(-1)
    expect(refused).toMatch(/^Not run: API key limit reached: the key may spend \$0\.0035 in total, .* and this request could cost up to \$0\.001; that is the price of the call the model made; leave its tool out or raise the key's limit$/)
    const cost = 2 * SEARCH_PRICE + 4 * TURN_COST
    expect(body.usage.cost).toBeCloseTo(cost, 12)
    expect(body.usage.server_tool_use_details.web_search_requests).toBe(2)
    expect(await usageOf(hash)).toBeCloseTo(cost, 12)
  })

  it('refuses the same way in a stream, whose failed item is ended in-band', async () => {
    const { model, key, hash } = await serve(0.0005, [search('one'), ANSWER])
    const events = await readEvents(await post(key, { tools: WEB_SEARCH, stream: true }))
    expect(engine.requests).toHaveLength(0)
    const done = events.filter((event) => event.type === 'response.output_item.done').map((event) => event.item)
    expect(done[0]).toMatchObject({ type: 'web_search_call', status: 'failed' })
    expect(resultsOf(model.calls[1]!)[0]).toMatch(/^Not run: API key limit reached/)
    const last = events.at(-1)!
    expect(last.type).toBe('response.completed')
    expect(last.response.usage.cost).toBeCloseTo(2 * TURN_COST, 12)
    expect(await usageOf(hash)).toBeCloseTo(2 * TURN_COST, 12)
  })

  it('keeps concurrent loops on one key within the limit plus one step each', async () => {
    const LOOPS = 4
    const LIMIT = 0.004
    // Every turn searches again until max_tool_calls (6) ends the loop.
    const replies = Array.from({ length: LOOPS * 8 }, (_, index) => search(`q${index}`))
    const { key, hash } = await serve(LIMIT, replies)
    const answers = await Promise.all(Array.from({ length: LOOPS }, () => post(key, { tools: WEB_SEARCH, max_tool_calls: 6 })))
    for (const answer of answers) expect(answer.status).toBe(200)
    const spent = await usageOf(hash)
    // Every search that ran was charged, and none ran that the limit could not hold at the time.
    expect(spent).toBeGreaterThanOrEqual(engine.requests.length * SEARCH_PRICE)
    expect(engine.requests.length).toBeLessThanOrEqual(LIMIT / SEARCH_PRICE)
    // Without a hold per search, four loops of six searches would have spent $0.024.
    expect(spent).toBeLessThan(LIMIT + LOOPS * (SEARCH_PRICE + 0.0001))
  })
})

describe('a nested model call holds its worst case before it is sent', () => {
  it('does not ask the advisor when the limit cannot hold its worst case; the model reads why', async () => {
    const advise: ScriptedReply = [{ type: 'function_call', name: 'service_advisor', arguments: JSON.stringify({ prompt: 'Neap or spring?' }), callId: 'call_advice' }, TURN]
    const { model, advisor, key, hash } = await serve(0.05, [advise, ANSWER], [[{ type: 'text', text: 'Spring.' }, TURN]])
    const body = await readJson(await post(key, { tools: [{ type: 'service:advisor', parameters: { model: ADVISOR_MODEL } }] }))
    expect(body.status).toBe('completed')
    expect(advisor.calls).toHaveLength(0)
    expect(body.output[0]).toMatchObject({ type: 'service:advisor', status: 'failed' })
    expect(resultsOf(model.calls[1]!)[0]).toMatch(/^Not run: API key limit reached: the key may spend \$0\.05 in total, .* lower max_output_tokens or raise the key's limit$/)
    expect(await usageOf(hash)).toBeCloseTo(2 * TURN_COST, 12)
  })

  it('asks the advisor when its worst case fits, and charges what it cost with the response', async () => {
    const advise: ScriptedReply = [{ type: 'function_call', name: 'service_advisor', arguments: JSON.stringify({ prompt: 'Neap or spring?' }), callId: 'call_advice' }, TURN]
    const { advisor, key, hash } = await serve(1, [advise, ANSWER], [[{ type: 'text', text: 'Spring.' }, TURN]])
    const body = await readJson(await post(key, { tools: [{ type: 'service:advisor', parameters: { model: ADVISOR_MODEL } }] }))
    expect(body.status).toBe('completed')
    expect(advisor.calls).toHaveLength(1)
    // The advisor's 10 in and 5 out at ten times the price.
    expect(await usageOf(hash)).toBeCloseTo(2 * TURN_COST + 10 * TURN_COST, 12)
  })
})
