/**
 * No request field accepted without effect: every management write refuses a field it does not know with a 400
 * naming it (nested ones by their path) and writes nothing; every query refuses an unknown parameter, and a route
 * that takes no query refuses any (docs/decisions.md, Errors and routing).
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestGateway, scriptedProvider, type TestGateway } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'

let t: TestGateway
let byokId: string
let guardrailId: string
let internId: string
const alpha = scriptedProvider({ reply: 'Hello' })

// Intern chat runs a model: the regular key's; everything else here is management.
const call = (method: string, path: string, json?: unknown) =>
  t.call(method, path, { ...(json === undefined ? {} : { json }), ...(path.endsWith('/chat') ? { key: t.regularKey } : {}) })

const created = async (path: string, json: unknown) => {
  const response = await call('POST', path, json)
  expect(response.status, `${path}: ${await response.clone().text()}`).toBeLessThan(300)
  const body = await readJson(response)
  // Interns answer the record itself (OpenRouter's intern API); the other areas wrap it in `data`.
  return (body.data ?? body) as { id: string }
}

beforeAll(async () => {
  t = await createTestGateway({ providers: { alpha } })
  await t.gateway.admin.setAccountFlags(undefined, { interns: true })
  byokId = (await created('/byok', { key: `sk-proj-${'a'.repeat(40)}`, provider: 'openai' })).id
  guardrailId = (await created('/guardrails', { name: 'Existing' })).id
  internId = (await created('/interns', { name: 'ada' })).id
})
afterAll(() => t.close())

/** What a refused write must leave as it was: the listing or record the route would change. */
const snapshot = async (path: string) => {
  const response = await call('GET', path)
  expect(response.status, path).toBe(200)
  return response.text()
}

// [route, a body the route accepts plus one unknown field, the message, what must not change]
type WriteCase = [string, () => unknown, string, () => string]

const bogus = { bogus_field: 1 }
const writes: WriteCase[] = [
  ['POST /workspaces', () => ({ name: 'A', slug: 'a', ...bogus }), 'body.bogus_field: unknown field', () => '/workspaces'],
  ['PATCH /workspaces/default', () => ({ name: 'Renamed', ...bogus }), 'body.bogus_field: unknown field', () => '/workspaces/default'],
  ['PUT /workspaces/default/budgets/daily', () => ({ limit_usd: 5, ...bogus }), 'body.bogus_field: unknown field', () => '/workspaces/default/budgets'],
  ['POST /keys', () => ({ name: 'k', ...bogus }), 'body.bogus_field: unknown field', () => '/keys?include_disabled=true'],
  [`PATCH /keys/:regular`, () => ({ name: 'renamed', ...bogus }), 'body.bogus_field: unknown field', () => `/keys/${t.regularKeyHash}`],
  ['POST /byok', () => ({ key: `sk-proj-${'b'.repeat(40)}`, provider: 'openai', ...bogus }), 'body.bogus_field: unknown field', () => '/byok'],
  ['PATCH /byok/:id', () => ({ name: 'renamed', ...bogus }), 'body.bogus_field: unknown field', () => `/byok/${byokId}`],
  ['POST /guardrails', () => ({ name: 'G', ...bogus }), 'body.bogus_field: unknown field', () => '/guardrails'],
  ['PATCH /guardrails/:id', () => ({ name: 'renamed', ...bogus }), 'body.bogus_field: unknown field', () => `/guardrails/${guardrailId}`],
  [
    'PATCH /guardrails/:id',
    () => ({ content_filters: [{ pattern: 'secret', action: 'block', bogus_field: 1 }] }),
    'body.content_filters.0.bogus_field: unknown field',
    () => `/guardrails/${guardrailId}`,
  ],
  [
    'PATCH /guardrails/:id',
    () => ({ content_filter_builtins: [{ slug: 'regex-prompt-injection', action: 'block', bogus_field: 1 }] }),
    'body.content_filter_builtins.0.bogus_field: unknown field',
    () => `/guardrails/${guardrailId}`,
  ],
  [
    'POST /guardrails/:id/assignments/keys',
    () => ({ key_hashes: [t.regularKeyHash], ...bogus }),
    'body.bogus_field: unknown field',
    () => `/guardrails/${guardrailId}/assignments/keys`,
  ],
  [
    'POST /guardrails/:id/assignments/keys/remove',
    () => ({ key_hashes: [t.regularKeyHash], ...bogus }),
    'body.bogus_field: unknown field',
    () => `/guardrails/${guardrailId}/assignments/keys`,
  ],
  [
    'POST /guardrails/:id/assignments/members',
    () => ({ member_user_ids: ['user_x'], ...bogus }),
    'body.bogus_field: unknown field',
    () => `/guardrails/${guardrailId}/assignments/members`,
  ],
  [
    'POST /guardrails/:id/assignments/members/remove',
    () => ({ member_user_ids: ['user_x'], ...bogus }),
    'body.bogus_field: unknown field',
    () => `/guardrails/${guardrailId}/assignments/members`,
  ],
  ['POST /interns', () => ({ name: 'bob', ...bogus }), 'body.bogus_field: unknown field', () => '/interns'],
  ['PATCH /interns/:id', () => ({ description: 'd', ...bogus }), 'body.bogus_field: unknown field', () => `/interns/${internId}`],
  ['DELETE /interns/:id', () => ({ acknowledge_workspace_loss: true, ...bogus }), 'body.bogus_field: unknown field', () => `/interns/${internId}`],
  ['POST /interns/:id/chat', () => ({ input: 'Hi', ...bogus }), 'body.bogus_field: unknown field', () => `/interns/${internId}`],
]

const pathOf = (route: string) =>
  route
    .replace(':regular', t.regularKeyHash)
    .replace('/byok/:id', `/byok/${byokId}`)
    .replace('/guardrails/:id', `/guardrails/${guardrailId}`)
    .replace('/interns/:id', `/interns/${internId}`)

describe('an unknown field in a management body', () => {
  it.each(writes)('%s: 400 naming it, nothing written', async (route, body, message, watched) => {
    const [method, path] = route.split(' ') as [string, string]
    const before = await snapshot(watched())
    const response = await call(method, pathOf(path), body())
    expect(response.status).toBe(400)
    expect((await readJson(response)).error.message).toBe(message)
    expect(await snapshot(watched())).toBe(before)
  })

  it('the same bodies without the unknown field are accepted, so the refusals above are about that field alone', async () => {
    for (const [route, body] of writes) {
      const [method, path] = route.split(' ') as [string, string]
      if (method === 'DELETE' || path.endsWith('/chat')) continue
      const { bogus_field: _, ...rest } = body() as Record<string, unknown>
      const clean = Array.isArray(rest.content_filters)
        ? { content_filters: [{ pattern: 'secret', action: 'block' }] }
        : Array.isArray(rest.content_filter_builtins)
          ? { content_filter_builtins: [{ slug: 'regex-prompt-injection', action: 'block' }] }
          : rest
      // Members are users the account's keys act for; the assignment refusals are the route's own rules.
      if (path.includes('/members')) continue
      const response = await call(method, pathOf(path), clean)
      expect(response.status, `${route}: ${await response.clone().text()}`).toBeLessThan(300)
    }
  })
})

describe('an unknown query parameter', () => {
  const listings = [
    '/workspaces',
    '/keys',
    '/byok',
    '/guardrails',
    '/guardrails/assignments/keys',
    '/guardrails/assignments/members',
    '/interns',
    '/presets',
    '/models',
    '/activity',
    '/stats',
    '/embeddings/models',
  ]
  it.each(listings)('GET %s?bogus=1: 400 naming it', async (path) => {
    const response = await call('GET', `${path}?bogus=1`)
    expect(response.status).toBe(400)
    expect((await readJson(response)).error.message).toBe('query.bogus: unknown field')
  })

  // Routes that declare no query take none: a parameter would look applied and be ignored.
  const withoutQuery: [string, () => string][] = [
    ['GET', () => `/keys/${t.regularKeyHash}`],
    ['GET', () => '/workspaces/default'],
    ['GET', () => '/workspaces/default/budgets'],
    ['GET', () => `/byok/${byokId}`],
    ['GET', () => `/guardrails/${guardrailId}`],
    ['GET', () => `/interns/${internId}`],
    ['GET', () => '/credits'],
    ['GET', () => '/key'],
    ['GET', () => '/health'],
    ['GET', () => '/providers'],
    ['DELETE', () => `/keys/${t.regularKeyHash}`],
    ['DELETE', () => `/guardrails/${guardrailId}`],
  ]
  it.each(withoutQuery)('%s %s with a parameter: 400 naming it, nothing changed', async (method, path) => {
    const before = await snapshot(path())
    const response = await call(method, `${path()}?bogus=1`)
    expect(response.status).toBe(400)
    expect((await readJson(response)).error.message).toBe('query.bogus: unknown field')
    expect(await snapshot(path())).toBe(before)
  })

  // Nor does a route that reads no body: a field in one would look applied and be ignored.
  it.each(withoutQuery.filter(([method]) => method === 'DELETE'))('%s %s with a field in its body: 400 naming it, nothing changed', async (method, path) => {
    const before = await snapshot(path())
    const response = await call(method, path(), { force: true })
    expect(response.status).toBe(400)
    expect((await readJson(response)).error.message).toBe('body.force: unknown field')
    expect(await snapshot(path())).toBe(before)
  })

  it('a body that says nothing passes where the route reads none: {} and null', async () => {
    for (const said of [{}, null]) {
      const key = await t.gateway.admin.createKey({ kind: 'regular', name: 'doomed' })
      expect((await call('DELETE', `/keys/${key.record.hash}`, said)).status).toBe(200)
    }
  })

  it('inference routes refuse one too, except the beta flag Anthropic SDKs put on /messages', async () => {
    const responses = await t.call('POST', '/responses?bogus=1', { key: t.regularKey, json: { input: 'Hi' } })
    expect(responses.status).toBe(400)
    expect((await readJson(responses)).error.message).toBe('query.bogus: unknown field')
    const messages = await t.call('POST', '/messages?bogus=1', { key: t.regularKey, json: { max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] } })
    expect(messages.status).toBe(400)
    expect((await readJson(messages)).error).toEqual({ type: 'invalid_request_error', message: 'query.bogus: unknown field' })
    const beta = await t.call('POST', '/messages?beta=true', { key: t.regularKey, json: { max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] } })
    expect(beta.status).toBe(200)
  })
})

// The inference bodies ignore unknown top-level fields (vendor fields for other servers) and take the conversation
// as clients echo it back; the option objects a caller writes are strict.
describe('an unknown field in an inference option object', () => {
  const chat = { model: 'test/model', messages: [{ role: 'user', content: 'Hi' }] }
  const messages = { model: 'test/model', max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] }
  const responses = { model: 'test/model', input: 'Hi' }
  const cases: [string, Record<string, unknown>, string][] = [
    ['/chat/completions', { ...chat, reasoning: { effort: 'low', bogus: 1 } }, 'body.reasoning.bogus: unknown field'],
    ['/chat/completions', { ...chat, stream_options: { include_usage: true, bogus: 1 } }, 'body.stream_options.bogus: unknown field'],
    ['/chat/completions', { ...chat, usage: { include: true, bogus: 1 } }, 'body.usage.bogus: unknown field'],
    [
      '/chat/completions',
      { ...chat, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' }, bogus: 1 } }] },
      'body.tools.0.function.bogus: unknown field',
    ],
    ['/chat/completions', { ...chat, response_format: { type: 'json_object', bogus: 1 } }, 'body.response_format.bogus: unknown field'],
    ['/messages', { ...messages, thinking: { type: 'adaptive', bogus: 1 } }, 'body.thinking.bogus: unknown field'],
    ['/messages', { ...messages, tool_choice: { type: 'auto', bogus: 1 } }, 'body.tool_choice.bogus: unknown field'],
    ['/messages', { ...messages, output_config: { bogus: 1 } }, 'body.output_config.bogus: unknown field'],
    ['/messages', { ...messages, metadata: { user_id: 'u', bogus: 1 } }, 'body.metadata.bogus: unknown field'],
    ['/responses', { ...responses, reasoning: { effort: 'low', bogus: 1 } }, 'body.reasoning.bogus: unknown field'],
    ['/responses', { ...responses, text: { verbosity: 'low', bogus: 1 } }, 'body.text.bogus: unknown field'],
    ['/responses', { ...responses, text: { format: { type: 'json_object', bogus: 1 } } }, 'body.text.format.bogus: unknown field'],
    [
      '/responses',
      { ...responses, text: { format: { type: 'json_schema', name: 'n', schema: { type: 'object' }, bogus: 1 } } },
      'body.text.format.bogus: unknown field',
    ],
    ['/responses', { ...responses, debug: { echo_upstream_body: true, bogus: 1 } }, 'body.debug.bogus: unknown field'],
    ['/responses', { ...responses, cache_control: { type: 'ephemeral', bogus: 1 } }, 'body.cache_control.bogus: unknown field'],
    ['/responses', { ...responses, prompt_cache_options: { mode: 'explicit', bogus: 1 } }, 'body.prompt_cache_options.bogus: unknown field'],
    ['/responses', { ...responses, provider: { sort: { by: 'price', bogus: 1 } } }, 'body.provider.sort.bogus: unknown field'],
    ['/responses', { ...responses, provider: { preferred_max_latency: { p50: 1, bogus: 1 } } }, 'body.provider.preferred_max_latency.bogus: unknown field'],
    [
      '/responses',
      { ...responses, stop_server_tools_when: [{ type: 'step_count_is', step_count: 2, bogus: 1 }] },
      'body.stop_server_tools_when.0.bogus: unknown field',
    ],
  ]
  it.each(cases)('%s %j: 400 naming it', async (path, body, message) => {
    const response = await t.call('POST', path, { key: t.regularKey, json: body })
    expect(response.status).toBe(400)
    expect((await readJson(response)).error.message).toBe(message)
  })

  it("/responses reads OpenAI's older reasoning.generate_summary as summary", async () => {
    const response = await t.call('POST', '/responses', { key: t.regularKey, json: { ...responses, reasoning: { generate_summary: 'concise' } } })
    expect(response.status).toBe(200)
    expect(alpha.lastCall!.request.reasoning).toEqual({ summary: 'concise' })
  })

  it('an unknown top-level field is a 400 naming it there too', async () => {
    for (const [path, body] of [['/chat/completions', chat], ['/messages', messages]] as const) {
      const response = await t.call('POST', path, { key: t.regularKey, json: { ...body, vendor_field: 1 } })
      expect(response.status).toBe(400)
      expect(JSON.stringify(await response.json())).toContain('body.vendor_field: unknown field')
    }
  })
})
