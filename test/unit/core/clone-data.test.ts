import { describe, expect, it } from 'vitest'
import { cloneData } from '../../../src/core/clone-data'

describe('cloneData', () => {
  it('copies plain data as structuredClone does, sharing nothing with the original', () => {
    const item = {
      id: 'msg_1',
      type: 'message',
      status: 'completed',
      content: [{ type: 'output_text', text: 'Paris — é', annotations: [], logprobs: [{ token: 'P', bytes: [80] }] }],
      extra: { nested: { deep: [1, 'two', null, true] }, missing: undefined },
    }
    const copy = cloneData(item)

    expect(copy).toStrictEqual(structuredClone(item))
    expect(copy).not.toBe(item)
    expect(copy.content[0]).not.toBe(item.content[0])
    expect(copy.content[0]!.logprobs[0]!.bytes).not.toBe(item.content[0]!.logprobs[0]!.bytes)
    item.content[0]!.text = 'changed'
    expect(copy.content[0]!.text).toBe('Paris — é')
  })

  it('keeps holes, an own __proto__ key and objects without a prototype as structuredClone does', () => {
    const sparse = [1, , 3]
    const parsed = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as Record<string, unknown>
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 })

    for (const value of [sparse, parsed, bare]) expect(cloneData(value)).toStrictEqual(structuredClone(value))
    expect(1 in cloneData(sparse)).toBe(false)
    expect(Object.keys(cloneData(parsed))).toEqual(['__proto__', 'a'])
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('hands anything else to structuredClone', () => {
    const value = { at: new Date(0), tags: new Map([['a', 1]]) }
    const copy = cloneData(value)

    expect(copy.at).toBeInstanceOf(Date)
    expect(copy.at).not.toBe(value.at)
    expect(copy.tags.get('a')).toBe(1)
  })
})
