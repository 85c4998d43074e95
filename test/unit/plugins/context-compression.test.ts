/**
 * The context-compression plugin (middle-out) against scripted models with small contexts: what each endpoint is
 * sent, on by default at 8k or less, off with `enabled: false`, per attempt (a fallback with a larger context gets
 * the whole prompt), the pipeline stage, streamed and whole; and the middle-out rules on their own (turns kept
 * whole, the message-count limit, truncation when dropping is not enough).
 */

import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { middleOut } from '../../../src/features/plugins/middle-out'
import { COUNTED_CHARACTERS, PIECE_CHARACTERS, loadTokenCounter, piecesOf, type TokenCounter } from '../../../src/features/plugins/token-count'
import type { InputItem } from '../../../src/providers/types'
import { createTestGateway, readEvents, scriptedProvider, type ScriptedProvider, type TestGateway } from '../../../src/testing'

let testGateway: TestGateway | undefined
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

const PRICING = { prompt: 0.000001, completion: 0.000002 }
const METADATA = { headers: { 'x-service-metadata': 'enabled' } }

/** `test/small` (an endpoint of `contextLength` tokens) served by `small`, and `test/model` (128k) by `large`. */
const serve = async (contextLength: number, smallReplies: string[] | 'fail' = ['ok'], options: { maxOutputTokens?: number } = {}) => {
  const small = scriptedProvider(smallReplies === 'fail' ? { reply: [{ type: 'http_error', status: 503 }] } : { replies: smallReplies })
  const large = scriptedProvider({ reply: 'large ok' })
  testGateway = await createTestGateway({
    providers: { small, large },
    models: [
      { slug: 'test/small', name: 'Small', endpoints: [{ provider: 'small', model: 'small-model', contextLength, pricing: PRICING, ...options }] },
      { slug: 'test/model', name: 'Large', endpoints: [{ provider: 'large', model: 'large-model', contextLength: 128_000, pricing: PRICING }] },
    ],
  })
  return { small, large }
}

// About 100 tokens each, distinct so the test can tell which were kept.
const turn = (index: number, role: 'user' | 'assistant') => ({ role, content: `Turn ${index}: ${'lorem ipsum dolor sit amet '.repeat(20)}` })
const conversation = (count: number) => Array.from({ length: count }, (_, index) => turn(index, index % 2 === 0 ? 'user' : 'assistant'))
const turnNumbers = (model: ScriptedProvider) =>
  (model.lastCall!.input as Array<{ content: string }>).map((item) => Number(/^Turn (\d+)/.exec(item.content)?.[1]))

describe('context-compression through the gateway', () => {
  it('is on by default for an endpoint of 8k or less: drops middle turns until the prompt fits, and reports it', async () => {
    const { small } = await serve(1_024 + 700)
    const response = await testGateway!.responses({ model: 'test/small', input: conversation(15) }, METADATA)
    const body = await response.json()
    expect(response.status, JSON.stringify(body)).toBe(200)
    const kept = turnNumbers(small)
    expect(kept[0]).toBe(0)
    expect(kept.at(-1)).toBe(14)
    expect(kept.length).toBeLessThan(15)
    // What is kept is both ends, the middle gone.
    expect(kept).toEqual([...kept].sort((left, right) => left - right))
    const stage = body.service_metadata.pipeline[0]
    expect(stage.type).toBe('plugin')
    expect(stage.name).toBe('context-compression')
    expect(stage.summary).toBe(`${15 - kept.length} messages dropped and 0 truncated from the middle to fit test/small via small`)
    expect(stage.data).toEqual({
      provider: 'small',
      model: 'test/small',
      context_length: 1_724,
      engine: 'middle-out',
      compressed: true,
      prompt_tokens_before: expect.any(Number),
      prompt_tokens_after: expect.any(Number),
      dropped_messages: 15 - kept.length,
      truncated_messages: 0,
      fits: true,
    })
    // Room for the answer: 1,024 tokens, but never more than half the context (862 here).
    expect(stage.data.prompt_tokens_before).toBeGreaterThan(862)
    expect(stage.data.prompt_tokens_after).toBeLessThanOrEqual(862)
  })

  it('sends the whole prompt with enabled: false, and to an endpoint over 8k unless listed', async () => {
    const { small } = await serve(1_724, ['ok', 'ok'])
    const off = await testGateway!.responses({ model: 'test/small', input: conversation(15), plugins: [{ id: 'context-compression', enabled: false }] }, METADATA)
    expect(off.status).toBe(200)
    expect(small.lastCall!.input).toHaveLength(15)
    expect((await off.json()).service_metadata.pipeline).toEqual([])
    await testGateway!.close()
    const big = await serve(9_000, ['ok'], {})
    const response = await testGateway!.responses({ model: 'test/small', input: conversation(15) }, METADATA)
    expect(big.small.lastCall!.input).toHaveLength(15)
    expect((await response.json()).service_metadata.pipeline).toEqual([])
  })

  it('compresses per attempt: a fallback with a larger context gets the whole prompt', async () => {
    const { small, large } = await serve(1_724, 'fail')
    const response = await testGateway!.responses({ models: ['test/small', 'test/model'], input: conversation(15), plugins: [{ id: 'context-compression', engine: 'middle-out' }] }, METADATA)
    const body = await response.json()
    expect(response.status, JSON.stringify(body)).toBe(200)
    expect((small.lastCall!.input as unknown[]).length).toBeLessThan(15)
    expect(large.lastCall!.input).toHaveLength(15)
    const stages = body.service_metadata.pipeline
    expect(stages.map((stage: { data: { provider: string; compressed: boolean } }) => [stage.data.provider, stage.data.compressed])).toEqual([
      ['small', true],
      ['large', false],
    ])
    expect(stages[1].summary).toMatch(/^the prompt fits test\/model via large \(\d+ of 126976 tokens\)$/)
  })

  it('keeps room for max_output_tokens, and truncates the middle of a text too long on its own', async () => {
    const { small } = await serve(1_500)
    const long = `START ${'word '.repeat(3_000)} END`
    const events = await readEvents(await testGateway!.responses({ model: 'test/small', input: long, max_output_tokens: 500, stream: true }, METADATA))
    const [item] = small.lastCall!.input as Array<{ role: string; content: string }>
    expect(item!.role).toBe('user')
    expect(item!.content.startsWith('START word')).toBe(true)
    expect(item!.content.endsWith('word  END')).toBe(true)
    expect(item!.content).toMatch(/\n\[… \d+ tokens removed to fit the context window …\]\n/)
    const stage = events.at(-1)!.response.service_metadata.pipeline[0]
    expect(stage.data).toMatchObject({ compressed: true, dropped_messages: 0, truncated_messages: 1, fits: true })
    expect(stage.data.prompt_tokens_after).toBeLessThanOrEqual(1_000)
  })
})

describe('middle-out', () => {
  let counter: TokenCounter
  beforeAll(async () => {
    counter = await loadTokenCounter(true)
  })

  it('keeps a function call with its result, dropping them together', () => {
    const input = [
      { role: 'user', content: 'first' },
      { type: 'function_call', call_id: 'c1', name: 'lookup', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'x '.repeat(300) },
      { role: 'assistant', content: 'middle' },
      { role: 'user', content: 'last' },
    ] as InputItem[]
    const result = middleOut(input, { maxInputTokens: 40 }, counter)
    // The first turn holds the user's message, the call and its result: it stays whole, so its long result is cut instead.
    const types = result.input.map((item) => (item as { type?: string; role?: string }).type ?? (item as { role: string }).role)
    expect(types).toEqual(['user', 'function_call', 'function_call_output', 'user'])
    expect(result.droppedMessages).toBe(1)
    expect(result.truncatedMessages).toBe(1)
    expect(result.fits).toBe(true)
  })

  it('keeps half the messages from the start and half from the end over a message-count limit', () => {
    const input = Array.from({ length: 1_200 }, (_, index) => ({ role: index % 2 === 0 ? 'user' : 'assistant', content: `m${index}` })) as InputItem[]
    const result = middleOut(input, { maxInputTokens: 1_000_000, maxMessages: 1_000 }, counter)
    const contents = result.input.map((item) => (item as { content: string }).content)
    expect(contents).toHaveLength(1_000)
    expect(contents.slice(0, 2)).toEqual(['m0', 'm1'])
    expect(contents[499]).toBe('m499')
    expect(contents[500]).toBe('m700')
    expect(contents.at(-1)).toBe('m1199')
    expect(result.droppedMessages).toBe(200)
  })

  it('returns the same items when they fit', () => {
    const input = [{ role: 'user', content: 'hi' }] as InputItem[]
    const result = middleOut(input, { maxInputTokens: 100 }, counter)
    expect(result.input).toBe(input)
    expect(result).toMatchObject({ droppedMessages: 0, truncatedMessages: 0, fits: true })
  })

  it('counts a long run without spaces in pieces, so no prompt makes the count spin; normal text is cut at spaces', () => {
    const run = 'x'.repeat(900_000)
    expect(counter.count(run)).toBe(112_500)
    const cut = counter.truncateMiddle(run, 1_000)
    expect(cut.startsWith('x'.repeat(100))).toBe(true)
    expect(cut).toContain('tokens removed to fit the context window')
    const prose = 'The tide comes in twice a day. '.repeat(100)
    expect(piecesOf(prose).every((piece) => piece.endsWith(' ') && piece.length <= PIECE_CHARACTERS)).toBe(true)
    expect(piecesOf(prose).join('')).toBe(prose)
  })

  it('reads only the head and tail of a text past COUNTED_CHARACTERS, so a 4 MiB prompt costs what 256 KiB does', () => {
    const end = 'The tide comes in twice a day. '.repeat(COUNTED_CHARACTERS / 31 + 1).slice(0, COUNTED_CHARACTERS / 2)
    const middleOf = (unit: string) => unit.repeat(Math.ceil((4 * 1024 * 1024) / unit.length)).slice(0, 4 * 1024 * 1024)
    const prose = end + middleOf('Another sentence, with more words. ') + end
    const symbols = end + middleOf('{}') + end
    // Were the middles encoded, these would count very differently: the count never reads them.
    expect(counter.count(symbols)).toBe(counter.count(prose))
    expect(counter.count(prose)).toBeGreaterThan(counter.count(end) * 10)
    const cut = counter.truncateMiddle(symbols, 2_000)
    expect(cut.startsWith('The tide comes in')).toBe(true)
    expect(cut.endsWith(end.slice(-40))).toBe(true)
    expect(cut).toContain('tokens removed to fit the context window')
    expect(counter.count(cut)).toBeLessThanOrEqual(2_000 + 20)
  })

  it('estimates other families above the o200k count', async () => {
    const other = await loadTokenCounter(false)
    expect(other.count('hello world, how are you?')).toBeGreaterThan(counter.count('hello world, how are you?'))
  })
})

describe('transforms on /chat/completions and /messages (OpenRouter’s older switch)', () => {
  const chatOf = (count: number) => conversation(count).map(({ role, content }) => ({ role, content }))

  it('["middle-out"] compresses on any endpoint; [] turns the default for small contexts off', async () => {
    const { small } = await serve(9_000, ['ok', 'ok', 'ok'])
    const call = (body: Record<string, unknown>, path = '/chat/completions') =>
      testGateway!.call('POST', path, { key: testGateway!.regularKey, json: { model: 'test/small', ...body }, ...METADATA })
    // 9,000 tokens of context: over the default's 8k, so only the transform compresses; a prompt bigger than it.
    const response = await call({ messages: chatOf(120), transforms: ['middle-out'] })
    const body = await response.json()
    expect(response.status, JSON.stringify(body)).toBe(200)
    expect((small.lastCall!.input as unknown[]).length).toBeLessThan(120)
    expect(body.service_metadata.pipeline[0].data).toMatchObject({ compressed: true, provider: 'small' })
    const messages = await call({ messages: chatOf(120), max_tokens: 100, transforms: ['middle-out'] }, '/messages')
    expect(messages.status, await messages.clone().text()).toBe(200)
    expect((small.lastCall!.input as unknown[]).length).toBeLessThan(120)
    await testGateway!.close()
    const tiny = await serve(1_724)
    const off = await testGateway!.call('POST', '/chat/completions', { key: testGateway!.regularKey, json: { model: 'test/small', messages: chatOf(15), transforms: [] } })
    expect(off.status).toBe(200)
    expect(tiny.small.lastCall!.input).toHaveLength(15)
  })
})
