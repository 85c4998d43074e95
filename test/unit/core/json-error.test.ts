import { describe, expect, it } from 'vitest'
import { findJsonSyntaxProblem } from '../../../src/core/json-error'

describe('findJsonSyntaxProblem', () => {
  it('accepts every text JSON.parse accepts', () => {
    const valid = ['0', '-1.5e+3', '"x"', 'true', 'null', '[]', '{}', ' [1, {"a": [null, false, "\\u00e9\\n"]}] ', '{"a":{"b":{"c":[[],[{}]]}}}']
    for (const text of valid) {
      expect(() => JSON.parse(text)).not.toThrow()
      expect(findJsonSyntaxProblem(text), text).toBeNull()
    }
  })

  it('finds a problem in every text JSON.parse rejects', () => {
    const invalid = ['', '{', '[1,]', '{"a":1,}', '01', '1.', '.5', '"\\x"', '"a\nb"', 'tru', '{a:1}', '[1 2]', '{"a" 1}', 'nul', '[]]', '--1', '"\u0001"']
    for (const text of invalid) {
      expect(() => JSON.parse(text), text).toThrow()
      expect(findJsonSyntaxProblem(text), text).not.toBeNull()
    }
  })

  it('handles very deep nesting without overflowing the stack', () => {
    const depth = 200_000
    expect(findJsonSyntaxProblem('['.repeat(depth) + ']'.repeat(depth - 1))).toEqual({ offset: 2 * depth - 1, expected: "',' or ']'" })
  })
})
