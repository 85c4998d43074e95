import { describe, expect, it } from 'vitest'
import { Utf8StreamDecoder } from '../../../src/core/utf8-stream'

/** What a single streaming TextDecoder makes of the same chunks: the behaviour to match. */
const reference = (chunks: Uint8Array[]): string[] => {
  const decoder = new TextDecoder('utf-8')
  return [...chunks.map((chunk) => decoder.decode(chunk, { stream: true })), decoder.decode()]
}

const decoded = (chunks: Uint8Array[]): string[] => {
  const decoder = new Utf8StreamDecoder()
  return [...chunks.map((chunk) => decoder.decode(chunk)), decoder.end()]
}

const bytes = (...values: number[]) => new Uint8Array(values)
const utf8 = (text: string) => new TextEncoder().encode(text)

/** Every way of cutting `whole` into three chunks (two cut points), and each chunk on its own. */
const splits = (whole: Uint8Array): Uint8Array[][] => {
  const result: Uint8Array[][] = []
  for (let first = 0; first <= whole.length; first++) {
    for (let second = first; second <= whole.length; second++) {
      result.push([whole.subarray(0, first), whole.subarray(first, second), whole.subarray(second)])
    }
  }
  return result
}

describe('Utf8StreamDecoder', () => {
  it('gives chunk for chunk the text of a streaming TextDecoder, wherever the chunks split a character', () => {
    const sample = utf8('data: {"delta":"Paris — é 日本 🎉"}\n\nevent: x\ndata: "ok"\n\n')
    for (const chunks of splits(sample)) expect(decoded(chunks)).toEqual(reference(chunks))
  })

  it('replaces broken sequences as a streaming TextDecoder does, including one left open at the end', () => {
    const broken = bytes(0x61, 0xe2, 0x82, 0x0a, 0xff, 0x62, 0xf0, 0x9f, 0x0a, 0xc3, 0xa9, 0xe2, 0x82)
    for (const chunks of splits(broken)) expect(decoded(chunks)).toEqual(reference(chunks))
  })

  it('drops a byte order mark only at the start of the stream, even one split over chunks', () => {
    const withMarks = bytes(0xef, 0xbb, 0xbf, 0x61, 0x0a, 0xef, 0xbb, 0xbf, 0x62, 0x0a)
    for (const chunks of splits(withMarks)) expect(decoded(chunks)).toEqual(reference(chunks))
    expect(decoded([withMarks]).join('')).toBe('a\n\ufeffb\n')
  })

  it('keeps a mark that starts a later chunk', () => {
    const chunks = [utf8('a\n'), bytes(0xef, 0xbb, 0xbf, 0x62, 0x0a)]
    expect(decoded(chunks)).toEqual(reference(chunks))
    expect(decoded(chunks).join('')).toBe('a\n\ufeffb\n')
  })
})
