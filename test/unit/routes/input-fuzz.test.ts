/**
 * Robustness of the inbound formats: generated bodies on `/chat/completions` and `/messages` and generated query
 * strings on `GET /models` never produce a 5xx, and every refusal comes in the route's own error shape. Cases are
 * a fixed table drawn from a seeded generator (so a failure names a case that reproduces): valid requests with one
 * or two fields replaced by random JSON (or left out), and wholly random values.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestGateway, scriptedProvider, type TestGateway } from '../../../src/testing'
import { seededRandom } from '../../helpers/seeded-random'

const SEED = 0x6d6f6467
const CASES = 250

const generator = (seed: number) => {
  const next = seededRandom(seed)
  const integer = (below: number) => Math.floor(next() * below)
  const pick = <T>(items: readonly T[]): T => items[integer(items.length)]!
  return { next, integer, pick }
}

type Random = ReturnType<typeof generator>

const STRINGS = ['', 'x', 'END', 'test/model', 'nobody/none', 'function', 'text', 'user', 'assistant', 'tool', 'ephemeral', '💥', 'a'.repeat(300), '{"a":1}', '__proto__', 'constructor']
const NUMBERS = [0, 1, -1, 0.5, 2, 4, 20, 21, 100, -101, 1024, 1e21, -0, Number.MAX_SAFE_INTEGER]

/** A random JSON value, nesting at most `depth` more levels. */
const randomJson = (random: Random, depth = 3): unknown => {
  const kind = random.integer(depth > 0 ? 8 : 5)
  switch (kind) {
    case 0:
      return null
    case 1:
      return random.next() < 0.5
    case 2:
      return random.pick(NUMBERS)
    case 3:
    case 4:
      return random.pick(STRINGS)
    case 5:
    case 6: {
      const object: Record<string, unknown> = {}
      for (let count = random.integer(4); count > 0; count--) object[random.pick([...STRINGS, 'type', 'role', 'content', 'text', 'name', 'id'])] = randomJson(random, depth - 1)
      return object
    }
    default:
      return Array.from({ length: random.integer(4) }, () => randomJson(random, depth - 1))
  }
}

/** Replaces the value at a random path of `value` (a copy) with random JSON, or deletes it. */
const mutate = (random: Random, value: unknown, depth = 0): unknown => {
  if (value === null || typeof value !== 'object' || (depth > 0 && random.next() < 0.2)) return randomJson(random)
  const copy: any = Array.isArray(value) ? [...value] : { ...value }
  const keys = Object.keys(copy)
  if (keys.length === 0 || random.next() < 0.1) {
    copy[random.pick(['type', 'role', 'extra', '0'])] = randomJson(random)
    return copy
  }
  const key = random.pick(keys)
  if (random.next() < 0.15 && !Array.isArray(copy)) delete copy[key]
  else copy[key] = mutate(random, copy[key], depth + 1)
  return copy
}

const CHAT_BODY = {
  model: 'test/model',
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: [{ type: 'text', text: 'Weather?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temperature":20}' },
  ],
  tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
  tool_choice: 'auto',
  reasoning: { effort: 'low' },
  response_format: { type: 'json_schema', json_schema: { name: 'out', schema: { type: 'object' } } },
  temperature: 0.5,
  max_tokens: 100,
  stream: false,
  provider: { order: ['scripted'] },
}
// The extensions, which the scripted provider cannot honour: these bodies end in a 400 past validation.
const CHAT_EXTENDED = { ...CHAT_BODY, stop: ['END'], seed: 1, logprobs: true, top_logprobs: 2, logit_bias: { '1': 1 } }

const MESSAGES_BODY = {
  model: 'test/model',
  max_tokens: 2000,
  system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'Weather?' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '{"temperature":20}' }] },
  ],
  tools: [{ name: 'get_weather', input_schema: { type: 'object' } }],
  tool_choice: { type: 'auto' },
  thinking: { type: 'enabled', budget_tokens: 1024 },
  temperature: 0.5,
  stream: false,
}
const MESSAGES_EXTENDED = { ...MESSAGES_BODY, stop_sequences: ['END'] }

const bodies = (templates: readonly unknown[], random: Random): unknown[] =>
  Array.from({ length: CASES }, (_, index) => {
    if (index % 10 === 9) return randomJson(random)
    let body = random.pick(templates)
    for (let mutations = 1 + random.integer(2); mutations > 0; mutations--) body = mutate(random, body)
    return body
  })

let t: TestGateway
beforeAll(async () => {
  t = await createTestGateway({ logger: false, providers: { scripted: scriptedProvider({ reply: 'ok' }) } })
})
afterAll(() => t.close())

const isChatError = (body: any, status: number) => typeof body?.error?.message === 'string' && body.error.code === status && Object.keys(body).length === 1
const isAnthropicError = (body: any) =>
  body?.type === 'error' && typeof body.error?.type === 'string' && typeof body.error.message === 'string' && Object.keys(body).length === 2

/** Sends each body and checks the answer: never a 5xx; an error in the route's shape; a success read to its end. */
const expectRobust = async (path: string, cases: unknown[], isRouteError: (body: unknown, status: number) => boolean) => {
  const statuses = new Map<number, number>()
  for (const [index, body] of cases.entries()) {
    const response = await t.call('POST', path, { key: t.regularKey, json: body })
    const text = await response.text()
    const where = `case ${index}: ${JSON.stringify(body).slice(0, 600)} → ${response.status} ${text.slice(0, 300)}`
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
    expect(response.status, where).toBeLessThan(500)
    if (response.status >= 400) expect(isRouteError(JSON.parse(text), response.status), where).toBe(true)
    else expect(response.status, where).toBe(200)
  }
  return statuses
}

describe('generated inputs never produce a 5xx', () => {
  it('POST /chat/completions answers every body with a result or its error shape', async () => {
    const statuses = await expectRobust('/chat/completions', bodies([CHAT_BODY, CHAT_EXTENDED], generator(SEED)), isChatError)
    // The table reaches past validation too: some bodies are answered, most refused.
    expect(statuses.get(400)).toBeGreaterThan(0)
    expect([...statuses.keys()].some((status) => status !== 400)).toBe(true)
  })

  it("POST /messages answers every body with a result or Anthropic's error shape", async () => {
    const statuses = await expectRobust('/messages', bodies([MESSAGES_BODY, MESSAGES_EXTENDED], generator(SEED + 1)), isAnthropicError)
    expect(statuses.get(400)).toBeGreaterThan(0)
    expect([...statuses.keys()].some((status) => status !== 400)).toBe(true)
  })

  it('GET /models answers every query with a list or a 400 naming the parameter', async () => {
    const random = generator(SEED + 2)
    const NAMES = [
      'supported_parameters', 'output_modalities', 'input_modalities', 'q', 'context', 'min_price', 'max_price', 'min_output_price', 'max_output_price',
      'model_authors', 'providers', 'arch', 'zdr', 'min_age_days', 'max_age_days', 'sort', 'offset', 'limit', 'category', 'region', 'bogus', '', '%', 'a[b]',
    ]
    const VALUES = ['', 'text', 'all', 'tools,top_k', 'image,', 'true', 'false', '0', '1', '-1', '1.5', '1e3', '999999999999999999999', 'newest', 'most-popular', 'openai', 'GPT', '%00', '%E2%9C%93', ',,', 'a'.repeat(300)]
    let answered = 0
    for (let index = 0; index < CASES; index++) {
      const pairs = Array.from({ length: random.integer(4) }, () => `${random.pick(NAMES)}=${random.pick(VALUES)}`)
      const path = `/models?${pairs.join('&')}`
      const response = await t.call('GET', path, { key: null })
      const text = await response.text()
      const where = `case ${index}: ${path} → ${response.status} ${text.slice(0, 300)}`
      expect([200, 400], where).toContain(response.status)
      const body = JSON.parse(text)
      if (response.status === 400) expect(isChatError(body, 400) && /^query(\.|:)/.test(body.error.message), where).toBe(true)
      else {
        expect(Array.isArray(body.data) && typeof body.total_count === 'number', where).toBe(true)
        answered++
      }
    }
    expect(answered).toBeGreaterThan(0)
  })
})
