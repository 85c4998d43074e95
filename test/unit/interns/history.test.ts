import { describe, expect, it } from 'vitest'
import { trimHistory } from '../../../src/interns/history'
import type { JsonValue } from '../../../src/storage/contract'

const user = (text: string): JsonValue => ({ type: 'message', role: 'user', content: text })
const bareUser = (text: string): JsonValue => ({ role: 'user', content: text })
const assistant = (text: string): JsonValue => ({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] })
const reasoning = (id: string): JsonValue => ({ type: 'reasoning', id, summary: [], encrypted_content: `enc-${id}` })
const call = (id: string): JsonValue => ({ type: 'function_call', call_id: id, name: 'service.provide_input', arguments: '{"kind":"question","prompt":"?"}' })
const output = (id: string, text = 'yes'): JsonValue => ({ type: 'function_call_output', call_id: id, output: text })

const bytes = (items: JsonValue[]) => Buffer.byteLength(JSON.stringify(items), 'utf8')

/** Asserts that no kept tool output lost its call and no kept item lost its reasoning item. */
const expectWhole = (kept: JsonValue[], all: JsonValue[]) => {
  const dropped = all.slice(0, all.length - kept.length)
  expect(all.slice(all.length - kept.length)).toEqual(kept)
  const droppedCalls = new Set(dropped.flatMap((item: any) => (item.call_id && !item.type.endsWith('_output') ? [item.call_id] : [])))
  for (const item of kept as any[]) if (item.type?.endsWith('_output')) expect(droppedCalls.has(item.call_id), JSON.stringify(item)).toBe(false)
  if (dropped.length > 0) expect((dropped.at(-1) as any).type).not.toBe('reasoning')
}

describe('trimHistory', () => {
  it('keeps a conversation within both limits as it is', () => {
    const items = [user('hi'), assistant('hello')]
    expect(trimHistory(items, 0, { maxItems: 2, maxBytes: bytes(items) })).toBe(items)
  })

  it('drops the oldest turns past maxItems, starting again at a message of the caller', () => {
    const items = [user('1'), assistant('a'), user('2'), assistant('b'), user('3'), assistant('c')]
    expect(trimHistory(items, 4, { maxItems: 3, maxBytes: 1_000_000 })).toEqual([user('3'), assistant('c')])
    expect(trimHistory(items, 4, { maxItems: 4, maxBytes: 1_000_000 })).toEqual(items.slice(2))
  })

  it('drops the oldest turns past maxBytes, counting UTF-8 bytes of the JSON', () => {
    const big = 'é'.repeat(1000) // 2000 bytes
    const items = [user(big), assistant('a'), bareUser(big), assistant('b'), user(big), assistant('c')]
    const lastTwoTurns = items.slice(2)
    const kept = trimHistory(items, 4, { maxItems: 100, maxBytes: bytes(lastTwoTurns) })
    expect(kept).toEqual(lastTwoTurns)
    expect(trimHistory(items, 4, { maxItems: 100, maxBytes: bytes(lastTwoTurns) - 1 })).toEqual(items.slice(4))
  })

  it('never keeps a tool output whose call it dropped', () => {
    const answer = 'x'.repeat(5000)
    // The byte limit alone would cut between the call and its output.
    const items = [user('book it'), reasoning('r1'), call('c1'), output('c1', answer), assistant('done'), user('thanks'), assistant('welcome')]
    const limit = bytes(items.slice(3))
    const kept = trimHistory(items, 5, { maxItems: 100, maxBytes: limit })
    expectWhole(kept, items)
    expect(kept).toEqual([user('thanks'), assistant('welcome')])
  })

  it('never separates a reasoning item from the item it belongs to', () => {
    const items = [user('a'.repeat(3000)), reasoning('r1'), assistant('first'), user('next'), assistant('second')]
    // Fits from the assistant message on, but not from its reasoning item: cut at the next caller message.
    const kept = trimHistory(items, 3, { maxItems: 100, maxBytes: bytes(items.slice(2)) })
    expectWhole(kept, items)
    expect(kept).toEqual([user('next'), assistant('second')])
  })

  it('cuts a long pause-and-answer chain between its rounds when no caller message fits', () => {
    // One caller message, then rounds of: reasoning, the intern asks, the caller answers.
    const items: JsonValue[] = [user('plan the trip')]
    for (let round = 1; round <= 6; round++) items.push(reasoning(`r${round}`), call(`c${round}`), output(`c${round}`, 'y'.repeat(1000)))
    const newest = items.length - 1 // the newest turn is the last answer
    const limit = Math.floor(bytes(items) / 2)
    const kept = trimHistory(items, newest, { maxItems: 100, maxBytes: limit })
    expectWhole(kept, items)
    expect(bytes(kept)).toBeLessThanOrEqual(limit)
    expect((kept[0] as any).type).toBe('reasoning')
    expect(kept.length).toBeLessThan(items.length)
  })

  it('keeps a newest turn larger than the limit whole, with the call its answer needs', () => {
    const items = [user('hi'), assistant('hello'), reasoning('r1'), call('c1'), output('c1', 'z'.repeat(10_000)), assistant('ok')]
    const kept = trimHistory(items, 4, { maxItems: 100, maxBytes: 2_000 })
    expectWhole(kept, items)
    expect(kept).toEqual(items.slice(2))
    // And a newest turn that starts with a caller message is kept from there.
    const plain = [user('hi'), assistant('hello'), user('q'.repeat(10_000)), assistant('a')]
    expect(trimHistory(plain, 2, { maxItems: 100, maxBytes: 2_000 })).toEqual(plain.slice(2))
  })

  it('treats every kind of tool output alike', () => {
    const items = [
      user('go'),
      { type: 'custom_tool_call', call_id: 'k1', name: 'grep', input: 'x' },
      user('meanwhile'),
      { type: 'custom_tool_call_output', call_id: 'k1', output: 'o'.repeat(4000) },
      user('last'),
      assistant('end'),
    ] as JsonValue[]
    const kept = trimHistory(items, 4, { maxItems: 100, maxBytes: bytes(items.slice(2)) })
    expectWhole(kept, items)
    expect(kept).toEqual(items.slice(4))
  })
})
