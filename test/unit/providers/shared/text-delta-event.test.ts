import { describe, expect, it } from 'vitest'
import { TextDeltaEvent } from '../../../../src/providers/shared/text-delta-event'

const plain = (delta: string) => ({ type: 'response.output_text.delta', item_id: 'msg_1', output_index: 2, content_index: 0, delta, logprobs: [] as unknown[] })

describe('TextDeltaEvent', () => {
  it('writes the JSON that serialising the plain event writes', () => {
    for (const delta of ['Hello', ' "quoted" \\ back', 'line\nbreak\ttab', 'é 😀 \u2028 \u0000', '']) {
      const event = new TextDeltaEvent('msg_1', 2, 0, delta)
      expect(event.wireJson).toBe(JSON.stringify(plain(delta)))
      expect(JSON.stringify(event)).toBe(JSON.stringify(plain(delta)))
      expect({ ...event }).toStrictEqual(plain(delta))
    }
  })

  it('follows its fields when they change', () => {
    const event = new TextDeltaEvent('msg_1', 2, 0, 'a')
    event.output_index = 5
    event.delta = 'b'
    event.logprobs.push({ token: 'b', logprob: -0.1 })
    expect(event.wireJson).toBe(JSON.stringify({ ...plain('b'), output_index: 5, logprobs: [{ token: 'b', logprob: -0.1 }] }))
  })
})
