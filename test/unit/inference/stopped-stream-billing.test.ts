/**
 * What a stream the client stopped is charged (docs/decisions.md, Credits and limits; Usage ledger "Cancelled
 * streams"): the same amount in the spend counters and in the generation record, made of every finished turn's
 * real usage, the server tools' prices already incurred, and the running turn's upstream usage or estimate.
 *
 * Every case runs twice: once as a client that cancels the body it reads, once as a host that aborts the request's
 * signal when its client leaves (without cancelling the body), which must charge the same.
 *
 * Prices: the kit's test model costs $1 per million input tokens and $2 per million output tokens; fusion's lab
 * models $1/$2 (alpha), $2/$4 (beta), $3/$6 (judge).
 */

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import type { ToolExecutor } from '../../../src'
import type { ModelEntry } from '../../../src/engine/models'
import type { GenerationRecord } from '../../../src/repositories/generations'
import { createTestGateway, gate, scriptedProvider, type ScriptedAnswer, type ScriptedCall, type ScriptedReply, type TestGateway, type TestGatewayOptions } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'
import { startSearxngFixture, type Upstream } from '../../helpers/upstream'

let engine: Upstream
let testGateway: TestGateway | undefined
beforeAll(async () => (engine = await startSearxngFixture()))
afterAll(() => engine.close())
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

const SEARCH_PRICE = 0.001
const SEARCH_CALL = { type: 'function_call' as const, name: 'service_web_search', arguments: '{"query":"tides"}', callId: 'call_search' }
const BASH_CALL = { type: 'function_call' as const, name: 'service_bash', arguments: '{"command":"ls"}', callId: 'call_bash' }
const usage = (inputTokens: number, outputTokens: number) => ({ type: 'usage' as const, inputTokens, outputTokens })

const serve = async (reply: { replies: ScriptedReply[] } | { reply: ScriptedReply }, options: TestGatewayOptions = {}) => {
  testGateway = await createTestGateway({ providers: { scripted: scriptedProvider(reply) }, ...options })
  return testGateway
}

type StopHow = 'cancel' | 'signal'

/** Starts a stream; `leave` is how its client leaves: cancelling the body, or its host aborting the request's signal. */
const startStream = async (body: Record<string, unknown>, how: StopHow) => {
  const controller = new AbortController()
  const response = await testGateway!.responses({ ...body, stream: true }, how === 'signal' ? { signal: controller.signal } : {})
  expect(response.status).toBe(200)
  const reader = response.body!.getReader()
  const leave = () => (how === 'signal' ? controller.abort() : reader.cancel())
  return { reader, leave }
}

/** Starts a stream, reads it until `marker` arrived, then stops reading as a client leaving would. */
const stopAfter = async (body: Record<string, unknown>, marker: string, how: StopHow) => {
  const { reader, leave } = await startStream(body, how)
  const decoder = new TextDecoder()
  let text = ''
  while (!text.includes(marker)) text += decoder.decode((await reader.read()).value, { stream: true })
  await leave()
}

/** The one generation record, once its background write landed. */
const recorded = async (): Promise<GenerationRecord> => {
  let record: GenerationRecord | undefined
  await vi.waitFor(async () => {
    record = (await testGateway!.gateway.storage.list<GenerationRecord>('generations')).items[0]?.data
    expect(record).toBeDefined()
  })
  return record!
}

/** What the calling key's `usage` counter holds once every settlement was written. */
const keyUsage = async (): Promise<number> => {
  await testGateway!.gateway.flushSpend()
  return (await readJson(await testGateway!.call('GET', `/keys/${testGateway!.regularKeyHash}`))).data.usage
}

const round = (amount: number) => Math.round(amount * 1e12) / 1e12

const entry = (slug: string, prompt: number, completion: number): ModelEntry => ({
  slug,
  name: slug,
  endpoints: [{ provider: 'lab', model: slug, contextLength: 128_000, pricing: { prompt: prompt / 1e6, completion: completion / 1e6 } }],
})

describe.each([
  ['the client cancels the body', 'cancel'],
  ['the host aborts the request signal', 'signal'],
] as const)('when %s', (_, how) => {
  describe('a single turn the client stopped', () => {
    it('is charged in the counters exactly what its record says: the prompt and the text sent, at four characters a token', async () => {
      const held = gate()
      await serve({ reply: [{ type: 'text', text: 'abcdefghi' }, { type: 'wait', until: held }, { type: 'text', text: 'more' }, usage(10, 5)] })
      await stopAfter({ input: 'Hi' }, 'abcdefghi', how)
      held.open()
      const record = await recorded()
      // Input: `"Hi"` is 4 characters, 1 token; output: 9 characters, 3 tokens.
      expect(record).toMatchObject({ status: 'cancelled', isUsageEstimated: true, tokens: { input: 1, output: 3 }, cost: round(1e-6 + 3 * 2e-6) })
      expect(await keyUsage()).toBe(record.cost)
    })
  })

  describe('a server-tool stream the client stopped', () => {
    it('during a later turn: the earlier turns, the searches they ran and an estimate of the running turn', async () => {
      const held = gate()
      await serve(
        { replies: [[SEARCH_CALL, usage(100, 10)], [{ type: 'text', text: 'Brest has..' }, { type: 'wait', until: held }, { type: 'text', text: 'never' }]] },
        { serverTools: { webSearch: { searxng: { baseURL: `${engine.url}/`, pricePerRequest: SEARCH_PRICE } } } },
      )
      await stopAfter({ input: 'Tides in Brest?', tools: [{ type: 'service:web_search' }] }, 'Brest has..', how)
      held.open()
      const record = await recorded()
      // The second turn's output: 11 characters, 3 tokens; its input is estimated from what it was sent (the
      // conversation with the search's results), so it is read back from the record.
      expect(record).toMatchObject({ status: 'cancelled', isUsageEstimated: true, tokens: { output: 10 + 3 } })
      const secondTurnInput = record.tokens.input - 100
      expect(secondTurnInput).toBeGreaterThan(100)
      expect(record.cost).toBe(round((100 + secondTurnInput) * 1e-6 + 13 * 2e-6 + SEARCH_PRICE))
      expect(await keyUsage()).toBe(record.cost)
    })

    it('while a tool runs: the finished turn and nothing estimated', async () => {
      const running = gate()
      const executor: ToolExecutor = {
        async run(_call, context) {
          running.open()
          await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }))
          return { output: 'aborted', cost: 0.5 }
        },
      }
      await serve({ replies: [[BASH_CALL, usage(100, 10)], 'Never asked.'] }, { serverTools: { executors: { 'service:bash': executor } } })
      const { reader, leave } = await startStream({ input: 'What is here?', tools: [{ type: 'service:bash' }] }, how)
      await reader.read()
      await running
      await leave()
      const record = await recorded()
      // A stop reckons at once, before the tool reports; an aborted signal ends the response once the tool has
      // answered the abort, so the cost it reported for its run is charged too.
      const toolCost = how === 'signal' ? 0.5 : 0
      expect(record).toMatchObject({ status: 'cancelled', isUsageEstimated: false, tokens: { input: 100, output: 10 }, cost: round(100 * 1e-6 + 10 * 2e-6 + toolCost) })
      expect(await keyUsage()).toBe(record.cost)
    })
  })

  describe('a stream with the web plugin the client stopped', () => {
    it('is charged its search as well', async () => {
      const held = gate()
      await serve(
        { reply: [{ type: 'text', text: 'Brest has..' }, { type: 'wait', until: held }, { type: 'text', text: 'never' }] },
        { serverTools: { webSearch: { searxng: { baseURL: `${engine.url}/`, pricePerRequest: SEARCH_PRICE } } } },
      )
      await stopAfter({ input: 'Tides in Brest?', plugins: [{ id: 'web' }] }, 'Brest has..', how)
      held.open()
      const record = await recorded()
      // The input estimate counts the search results the plugin added before the user's message.
      expect(record).toMatchObject({ status: 'cancelled', isUsageEstimated: true, tokens: { output: 3 } })
      expect(record.tokens.input).toBeGreaterThan(100)
      expect(record.cost).toBe(round(record.tokens.input * 1e-6 + 3 * 2e-6 + SEARCH_PRICE))
      expect(await keyUsage()).toBe(record.cost)
    })
  })

  describe('a fusion stream the client stopped while the judge wrote', () => {
    it('settles each panel run and the analyst at its real cost and the judge at its estimate, and records their sum', async () => {
      const held = gate()
      const isAnalyst = (call: ScriptedCall) => String(call.request.instructions ?? '').startsWith('Several models answered')
      const reply = (call: ScriptedCall): ScriptedAnswer =>
        isAnalyst(call)
          ? [{ type: 'text', text: '{"consensus": ["yes"]}' }, usage(30, 8)]
          : call.model === 'lab/judge'
            ? [{ type: 'text', text: 'Judged: yes' }, { type: 'wait', until: held }, { type: 'text', text: 'never' }]
            : [{ type: 'text', text: `View of ${call.model}.` }, usage(10, 5)]
      testGateway = await createTestGateway({ providers: { lab: scriptedProvider({ reply }) }, models: [entry('lab/alpha', 1, 2), entry('lab/beta', 2, 4), entry('lab/judge', 3, 6)] })
      await stopAfter({ model: 'lab/judge', input: 'Hi', plugins: [{ id: 'fusion', analysis_models: ['lab/alpha', 'lab/beta'] }] }, 'Judged: yes', how)
      held.open()
      const record = await recorded()
      // Panel: alpha 10 × 1 + 5 × 2 = 20 µ$, beta 10 × 2 + 5 × 4 = 40 µ$; the judge analysing: 30 × 3 + 8 × 6 = 138 µ$;
      // the judge wrote 11 characters (3 tokens at $6/M) after instructions holding the panel's answers and the analysis,
      // whose estimate is read back from the record.
      expect(record).toMatchObject({ status: 'cancelled', isUsageEstimated: true, tokens: { output: 5 + 5 + 8 + 3 } })
      const judgeInput = record.tokens.input - 20 - 30
      expect(judgeInput).toBeGreaterThan(0)
      expect(record.cost).toBe(round(20e-6 + 40e-6 + 138e-6 + judgeInput * 3e-6 + 3 * 6e-6))
      expect(await keyUsage()).toBe(record.cost)
    })
  })
})
