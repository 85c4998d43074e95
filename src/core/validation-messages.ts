/**
 * Messages for validation rules that carry none of their own, built from the rule alone. valibot's
 * defaults end in `but received "<value>"`, and the value may be a secret sent in the wrong field
 * (a provider key in `name`, a token in `user`), so the value is never part of the message.
 */

import type * as v from 'valibot'

// A quoted literal from a schema (`"price"`), or a type name (`string`, `Object`).
const EXPECTED_TOKEN = /"(?:[^"\\]|\\.)*"|[^\s()|]+/g

const TYPE_NAMES: Record<string, string> = { Object: 'object', Array: 'array' }

const isLiteral = (token: string) => token.startsWith('"') || /^-?\d/.test(token) || token === 'true' || token === 'false' || token === 'null'

/** `(“a” | “b”) | Object` → `must be one of "a", "b", or object`; `string` → `expected string`. */
const describeExpected = (expected: string): string => {
  const tokens = expected.match(EXPECTED_TOKEN) ?? []
  const literals = tokens.filter(isLiteral)
  const types = tokens.filter((token) => !isLiteral(token)).map((token) => TYPE_NAMES[token] ?? token)
  if (literals.length === 0) return `expected ${types.join(' or ') || 'another type'}`
  const choices = literals.length === 1 ? `must be ${literals[0]}` : `must be one of ${literals.join(', ')}`
  return types.length === 0 ? choices : `${choices}, or ${types.join(' or ')}`
}

/** `at least 3 characters`, `at most 1 item`: the bound, in the unit of what was measured. */
const lengthRule = (bound: 'at least' | 'at most' | 'exactly', requirement: unknown, input: unknown): string => {
  const count = String(requirement)
  const plural = count === '1' ? '' : 's'
  if (typeof input === 'string') return `must be ${bound} ${count} character${plural}`
  if (Array.isArray(input)) return `must have ${bound} ${count} item${plural}`
  return `length must be ${bound} ${count}`
}

const FORMATS: Record<string, string> = {
  integer: 'must be an integer',
  url: 'must be a URL',
  email: 'must be an email address',
  uuid: 'must be a UUID',
  finite: 'must be a finite number',
  safe_integer: 'must be a safe integer',
}

/**
 * The message for a rule that has no message of its own. `unknownKey` names what an undeclared key
 * is: a `field` of a request, or a `setting` of the gateway's options and config file.
 */
export const describeRule = (issue: v.BaseIssue<unknown>, unknownKey: 'field' | 'setting'): string => {
  const requirement = issue.requirement
  switch (issue.type) {
    case 'strict_object':
    case 'strict_tuple':
      if (issue.expected === 'never') return `unknown ${unknownKey}`
      break
    case 'min_length':
      return lengthRule('at least', requirement, issue.input)
    case 'max_length':
      return lengthRule('at most', requirement, issue.input)
    case 'length':
      return lengthRule('exactly', requirement, issue.input)
    case 'min_value':
      return `must be at least ${String(requirement)}`
    case 'max_value':
      return `must be at most ${String(requirement)}`
    case 'regex':
      return `must match ${String(requirement)}`
  }
  const format = FORMATS[issue.type]
  if (format) return format
  if (issue.kind === 'schema' && issue.expected) return describeExpected(issue.expected)
  return 'is invalid'
}
