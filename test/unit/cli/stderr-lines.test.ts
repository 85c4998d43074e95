import { describe, expect, it } from 'vitest'
import { createStderrLines } from '../../../src/cli/stderr-lines'

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

describe('createStderrLines', () => {
  it('writes the lines of one turn of the event loop in one write, each ended by a newline', async () => {
    const writes: string[] = []
    const lines = createStderrLines((text) => writes.push(text))
    lines.writeLine('{"a":1}')
    lines.writeLine('{"b":2}')
    expect(writes).toEqual([])
    await nextTurn()
    expect(writes).toEqual(['{"a":1}\n{"b":2}\n'])
    lines.writeLine('{"c":3}')
    await nextTurn()
    expect(writes).toEqual(['{"a":1}\n{"b":2}\n', '{"c":3}\n'])
  })

  it('cuts a turn of many lines at line ends into writes of at most 4096 bytes, and a longer line goes alone', async () => {
    const writes: string[] = []
    const lines = createStderrLines((text) => writes.push(text))
    const line = 'é'.repeat(99) // 198 bytes, 199 with its newline
    for (let index = 0; index < 50; index++) lines.writeLine(line)
    lines.writeLine('x'.repeat(5000))
    lines.writeLine('tail')
    await nextTurn()
    expect(writes.join('')).toBe(`${`${line}\n`.repeat(50)}${'x'.repeat(5000)}\ntail\n`)
    for (const text of writes) expect(text.endsWith('\n')).toBe(true)
    expect(writes.filter((text) => Buffer.byteLength(text) > 4096)).toEqual([`${'x'.repeat(5000)}\n`])
    expect(writes.map((text) => text.split('\n').length - 1)).toEqual([20, 20, 10, 1, 1])
  })

  it('writes what is pending at once when asked (the process exits)', () => {
    const writes: string[] = []
    const lines = createStderrLines((text) => writes.push(text))
    lines.writeLine('last words')
    lines.flush()
    expect(writes).toEqual(['last words\n'])
  })
})
