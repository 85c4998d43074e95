/**
 * Finds where a JSON text breaks and what was expected there. Runs only after `JSON.parse` failed,
 * because V8's own message may quote the input (which can hold keys) and, on Node 20, often has
 * no position. Iterative, so deeply nested input cannot overflow the stack.
 */

export interface JsonSyntaxProblem {
  offset: number
  expected: string
}

const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d])
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
const STRING_ESCAPE = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/y

type Frame = 'array' | 'object'

export const findJsonSyntaxProblem = (text: string): JsonSyntaxProblem | null => {
  let index = 0
  const stack: Frame[] = []
  const skipWhitespace = () => {
    while (index < text.length && WHITESPACE.has(text.charCodeAt(index))) index++
  }
  const fail = (expected: string): JsonSyntaxProblem => ({ offset: index, expected })

  // Returns a problem, or null after consuming one complete string.
  const readString = (): JsonSyntaxProblem | null => {
    index++ // opening quote
    while (index < text.length) {
      const code = text.charCodeAt(index)
      if (code === 0x22) {
        index++
        return null
      }
      if (code === 0x5c) {
        STRING_ESCAPE.lastIndex = index
        if (!STRING_ESCAPE.test(text)) return fail('a valid escape sequence')
        index = STRING_ESCAPE.lastIndex
        continue
      }
      if (code < 0x20) return fail('no control characters inside a string')
      index++
    }
    return fail('a closing quote')
  }

  // Reads one scalar, or opens containers down to the first scalar; returns a problem or null.
  const readValue = (): JsonSyntaxProblem | null => {
    for (;;) {
      skipWhitespace()
      if (index >= text.length) return fail('a value')
      const char = text[index]!
      if (char === '{' || char === '[') {
        index++
        skipWhitespace()
        if (text[index] === (char === '{' ? '}' : ']')) {
          index++
          return null
        }
        stack.push(char === '{' ? 'object' : 'array')
        if (char === '{') {
          if (text[index] !== '"') return fail('a double-quoted property name')
          const problem = readString()
          if (problem) return problem
          skipWhitespace()
          if (text[index] !== ':') return fail("':' after the property name")
          index++
        }
        continue
      }
      if (char === '"') return readString()
      for (const literal of ['true', 'false', 'null']) {
        if (text.startsWith(literal, index)) {
          index += literal.length
          return null
        }
      }
      NUMBER.lastIndex = index
      if (NUMBER.test(text)) {
        index = NUMBER.lastIndex
        return null
      }
      return fail('a value')
    }
  }

  let problem = readValue()
  while (!problem) {
    skipWhitespace()
    const frame = stack.at(-1)
    if (!frame) return index < text.length ? fail('the end of the input') : null
    const closer = frame === 'object' ? '}' : ']'
    if (text[index] === closer) {
      stack.pop()
      index++
      continue
    }
    if (text[index] !== ',') return fail(`',' or '${closer}'`)
    index++
    if (frame === 'object') {
      skipWhitespace()
      if (text[index] !== '"') return fail('a double-quoted property name')
      problem = readString()
      if (problem) return problem
      skipWhitespace()
      if (text[index] !== ':') return fail("':' after the property name")
      index++
    }
    problem = readValue()
  }
  return problem
}
