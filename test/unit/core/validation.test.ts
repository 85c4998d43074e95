/**
 * Validation messages name the field path and the rule, never the submitted value: a value in the
 * wrong field may be a key or token, and error bodies end up in client logs.
 */

import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { createGateway } from '../../../src/gateway/gateway'
import { isGatewayError } from '../../../src/core/errors'
import { parseInput } from '../../../src/core/validation'
import { createTestGateway, readJson } from '../../helpers/gateway'

const SECRET = 'sk-proj-Q7mX2vR9tL4wZ8yK3nB6'

const messageOf = (run: () => unknown): string => {
  try {
    run()
  } catch (error) {
    if (isGatewayError(error) && error.status === 400) return error.message
    throw error
  }
  throw new Error('expected a 400')
}

describe('parseInput messages', () => {
  const cases: Array<[string, v.GenericSchema, unknown, string]> = [
    ['picklist', v.object({ sort: v.picklist(['price', 'latency']) }), { sort: SECRET }, 'body.sort: must be one of "price", "latency"'],
    ['literal', v.object({ type: v.literal('ephemeral') }), { type: SECRET }, 'body.type: must be "ephemeral"'],
    ['type', v.object({ disabled: v.boolean() }), { disabled: SECRET }, 'body.disabled: expected boolean'],
    ['union of types', v.object({ input: v.union([v.number(), v.array(v.string())]) }), { input: SECRET }, 'body.input: expected number or array'],
    ['regex', v.object({ id: v.pipe(v.string(), v.regex(/^[a-z]{3}$/)) }), { id: SECRET }, 'body.id: must match /^[a-z]{3}$/'],
    ['min length', v.object({ name: v.pipe(v.string(), v.minLength(40)) }), { name: SECRET }, 'body.name: must be at least 40 characters'],
    ['max length', v.object({ name: v.pipe(v.string(), v.maxLength(8)) }), { name: SECRET }, 'body.name: must be at most 8 characters'],
    ['items', v.object({ keys: v.pipe(v.array(v.string()), v.maxLength(1)) }), { keys: [SECRET, SECRET] }, 'body.keys: must have at most 1 item'],
    ['url', v.object({ url: v.pipe(v.string(), v.url()) }), { url: SECRET }, 'body.url: must be a URL'],
    ['check', v.object({ key: v.pipe(v.string(), v.check((value) => value === '')) }), { key: SECRET }, 'body.key: is invalid'],
    ['unknown key', v.strictObject({ name: v.string() }), { name: 'x', extra: SECRET }, 'body.extra: unknown field'],
    ['missing', v.object({ name: v.string() }), {}, 'body.name: is required'],
  ]

  it.each(cases)('%s: path and rule, never the value', (_kind, schema, value, expected) => {
    const message = messageOf(() => parseInput(schema, value, 'body'))
    expect(message).toBe(expected)
    expect(message).not.toContain(SECRET)
  })

  it('calls an undeclared key of options an unknown setting', () => {
    expect(messageOf(() => parseInput(v.strictObject({ port: v.number() }), { port: 1, prot: 2 }, 'options'))).toBe('options.prot: unknown setting')
    expect(() => createGateway({ trustProxy: true } as never)).toThrow('options.trustProxy: unknown setting')
  })

  it('keeps a rule’s own message', () => {
    expect(messageOf(() => parseInput(v.object({ name: v.pipe(v.string(), v.maxLength(2, 'must be short')) }), { name: SECRET }, 'body'))).toBe(
      'body.name: must be short',
    )
  })
})

describe('a schema message that would quote the value', () => {
  it('falls back to the rule, built from the schema alone', () => {
    const echoing = v.object({ kind: v.custom<never>(() => false, (issue) => `kind ${String(issue.input)} is not supported`) })
    expect(messageOf(() => parseInput(echoing, { kind: SECRET }, 'body'))).toBe('body.kind: expected unknown')
    const listed = v.object({ tier: v.pipe(v.string(), v.check(() => false, (issue) => `${String(issue.input)} is not a tier`)) })
    expect(messageOf(() => parseInput(listed, { tier: SECRET }, 'body'))).toBe('body.tier: is invalid')
  })

  it('keeps a message that names allowed values, when a short value happens to be part of one', () => {
    expect(messageOf(() => parseInput(v.object({ action: v.picklist(['block', 'redact'], 'must be one of block, redact') }), { action: 'bloc' }, 'body'))).toBe(
      'body.action: must be one of block, redact',
    )
  })
})

describe('route validation errors never quote the value', () => {
  it('over HTTP, for picklist, type and length rules of several routes', async () => {
    const t = await createTestGateway()
    const cases: Array<[string, string, string | null, unknown, string]> = [
      ['POST', '/keys', null, { name: 'ops', kind: SECRET }, 'body.kind: must be "regular" or "management"'],
      ['PATCH', `/keys/${t.regularKeyHash}`, null, { disabled: SECRET }, 'body.disabled: expected boolean'],
      ['POST', '/byok', null, { provider: 'openai', key: 'sk-real-0123456789abcdef', declared_zdr: SECRET }, 'body.declared_zdr: expected boolean'],
      ['POST', '/workspaces', null, { name: 'Lab', slug: 'lab', default_provider_sort: SECRET }, 'body.default_provider_sort: must be one of price, throughput, latency, exacto'],
      ['POST', '/responses', t.regularKey, { input: 'hi', service_tier: SECRET }, 'body.service_tier: must be one of "auto", "default", "fast", "flex", "priority", "scale"'],
      ['POST', '/responses', t.regularKey, { input: 'hi', temperature: SECRET }, 'body.temperature: expected number'],
      ['POST', '/responses', t.regularKey, { input: 'hi', provider: { sort: SECRET } }, 'body.provider.sort: must be one of "price", "throughput", "latency", "exacto", or object'],
      // A lowercase key passes the slug rule and reaches the provider check.
      ['POST', '/byok', null, { provider: SECRET.toLowerCase(), key: 'sk-real-0123456789abcdef' }, 'body.provider: must be a provider this gateway routes to (GET /providers lists them)'],
      ['GET', `/byok?provider=${SECRET.toLowerCase()}`, null, undefined, 'query.provider: must be a provider this gateway routes to (GET /providers lists them)'],
    ]
    for (const [method, path, key, json, message] of cases) {
      const response = await t.call(method, path, { json, ...(key ? { key } : {}) })
      const text = await response.clone().text()
      expect(response.status, `${method} ${path}: ${text}`).toBe(400)
      expect(await readJson(response)).toEqual({ error: { code: 400, message } })
      expect(text.toLowerCase()).not.toContain(SECRET.toLowerCase())
    }
  })
})
