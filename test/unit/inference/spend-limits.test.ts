/**
 * Credits, key limits and workspace budgets on the request path (docs/decisions.md, Credits and limits):
 * a request reserves its worst case before any upstream call and is refused with 402 in its route's
 * error shape when a limit would be passed; when it ends it settles its real cost, exactly once.
 *
 * Prices: the kit's test model costs $1 per million input tokens and $2 per million output tokens. A reply
 * reporting 10 input and 5 output tokens costs $0.00002. The prompt `Hi` estimates 6 tokens (`[null,"Hi",null]`
 * is 16 bytes, 3 to a token), so with `max_output_tokens: 10` a request reserves $0.000026.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, gate, readEvents, scriptedProvider, type ScriptedProvider, type TestGateway, type TestGatewayOptions } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'

const REPLY = [{ type: 'text' as const, text: ['Hello', ' there'] }, { type: 'usage' as const, inputTokens: 10, outputTokens: 5 }]
const SMALL = { input: 'Hi', max_output_tokens: 10 }

let t: TestGateway | undefined
afterEach(async () => {
  await t?.close()
  t = undefined
})

/** A settable clock, starting on Wednesday 2025-03-12 at 10:00 UTC. */
const clock = () => {
  let time = Date.parse('2025-03-12T10:00:00Z')
  return { now: () => new Date(time), set: (iso: string) => (time = Date.parse(iso)) }
}

const start = async ({ provider = scriptedProvider({ reply: REPLY }), ...options }: TestGatewayOptions & { provider?: ScriptedProvider } = {}) => {
  t = await createTestGateway({ ...options, providers: { alpha: provider } })
  return { t, provider }
}

const createKey = async (gateway: TestGateway, fields: Record<string, unknown>) => {
  const response = await gateway.call('POST', '/keys', { json: { name: 'Limited', ...fields } })
  expect(response.status).toBe(201)
  return (await readJson(response)) as { key: string; data: Record<string, any> }
}

const keyRecord = async (gateway: TestGateway, hash: string) => {
  await gateway.gateway.flushSpend()
  return (await readJson(await gateway.call('GET', `/keys/${hash}`))).data
}

describe('usage is counted per key, per UTC period, and per account', () => {
  it('settles the real cost of whole and streamed answers on the key, its periods and the account', async () => {
    const { t } = await start()
    expect((await t.responses({ input: 'Hi' })).status).toBe(200)
    expect((await t.responses({ input: 'Hi again' })).status).toBe(200)
    const streamed = await t.responses({ input: 'Hi', stream: true })
    expect((await readEvents(streamed)).at(-1)?.type).toBe('response.completed')

    expect(await keyRecord(t, t.regularKeyHash)).toMatchObject({
      usage: 0.00006,
      usage_daily: 0.00006,
      usage_weekly: 0.00006,
      usage_monthly: 0.00006,
      byok_usage: 0,
      limit: null,
      limit_remaining: null,
      limit_reset: null,
      include_byok_in_limit: false,
      expires_at: null,
    })
    const credits = await readJson(await t.call('GET', '/credits'))
    expect(credits).toEqual({ data: { total_credits: 0, total_usage: 0.00006 } })
  })

  it('charges nothing for a request no endpoint served', async () => {
    const { t } = await start({ provider: scriptedProvider({ reply: [{ type: 'http_error', status: 400, message: 'bad' }] }) })
    expect((await t.responses({ input: 'Hi' })).status).toBe(400)
    const streamed = await t.responses({ input: 'Hi', stream: true })
    expect(streamed.status).toBe(400)
    expect((await keyRecord(t, t.regularKeyHash)).usage).toBe(0)
  })

  it('charges a stream the client left mid-answer for its prompt and what was streamed', async () => {
    const held = gate()
    const provider = scriptedProvider({ reply: [{ type: 'text', text: 'abcdefghi' }, { type: 'wait', until: held }, { type: 'text', text: 'more' }, { type: 'usage', inputTokens: 10, outputTokens: 5 }] })
    const { t } = await start({ provider })
    const abort = new AbortController()
    const response = await t.responses({ input: 'Hi', stream: true }, { signal: abort.signal })
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = ''
    while (!text.includes('abcdefghi')) text += decoder.decode((await reader.read()).value, { stream: true })
    await reader.cancel()
    abort.abort()
    held.open()
    // As its generation record says (four characters a token): prompt `"Hi"` 1 token at $1/M; 9 characters streamed,
    // 3 tokens at $2/M.
    expect((await keyRecord(t, t.regularKeyHash)).usage).toBe(0.000007)
  })
})

describe('key limits', () => {
  it('refuses with 402 naming the key limit once the next worst case would pass it, without calling upstream', async () => {
    const { t, provider } = await start()
    const { key, data } = await createKey(t, { limit: 0.0001 })
    expect(data).toMatchObject({ limit: 0.0001, limit_remaining: 0.0001, limit_reset: null, include_byok_in_limit: false })
    const ask = () => t.call('POST', '/responses', { key, json: SMALL })
    // $0.000026 reserved each time, $0.00002 settled: four fit under $0.0001, the fifth would not.
    for (let index = 0; index < 4; index++) {
      expect((await ask()).status).toBe(200)
      await t.gateway.flushSpend()
    }
    const callsBefore = provider.calls.length
    const refused = await ask()
    expect(refused.status).toBe(402)
    expect(await readJson(refused)).toEqual({
      error: {
        code: 402,
        message:
          'API key limit reached: the key may spend $0.0001 in total, $0.00008 of it is spent, and this request could cost up to $0.000026; ' +
          "lower max_output_tokens or raise the key's limit",
        metadata: { error_type: 'payment_required', limit: 'key' },
      },
    })
    expect(provider.calls.length).toBe(callsBefore)
    // The refusal reserved nothing.
    expect(await keyRecord(t, data.hash)).toMatchObject({ usage: 0.00008, limit_remaining: 0.00002 })

    // Raising the limit lets it through again; null removes it.
    const raised = await t.call('PATCH', `/keys/${data.hash}`, { json: { limit: 0.001 } })
    expect((await readJson(raised)).data).toMatchObject({ limit: 0.001, limit_remaining: 0.00092 })
    expect((await ask()).status).toBe(200)
    const cleared = await t.call('PATCH', `/keys/${data.hash}`, { json: { limit: null } })
    expect((await readJson(cleared)).data).toMatchObject({ limit: null, limit_remaining: null })
  })

  it('reserves the worst case: without max_output_tokens, the output an endpoint without a published limit may write (32,768 tokens)', async () => {
    const { t, provider } = await start()
    const { key } = await createKey(t, { limit: 0.05 })
    const refused = await t.call('POST', '/responses', { key, json: { input: 'Hi' } })
    expect(refused.status).toBe(402)
    expect((await readJson(refused)).error.message).toContain('this request could cost up to $0.065542')
    expect(provider.calls).toHaveLength(0)
  })

  it('starts a daily limit again at UTC midnight, and a weekly one on Monday', async () => {
    const time = clock()
    const { t } = await start({ now: time.now })
    const daily = await createKey(t, { limit: 0.00003, limit_reset: 'daily' })
    const weekly = await createKey(t, { limit: 0.00003, limit_reset: 'weekly' })
    for (const { key } of [daily, weekly]) {
      expect((await t.call('POST', '/responses', { key, json: SMALL })).status).toBe(200)
      expect((await t.call('POST', '/responses', { key, json: SMALL })).status).toBe(402)
    }
    time.set('2025-03-12T23:59:59Z')
    expect((await t.call('POST', '/responses', { key: daily.key, json: SMALL })).status).toBe(402)
    time.set('2025-03-13T00:00:00Z')
    expect((await t.call('POST', '/responses', { key: daily.key, json: SMALL })).status).toBe(200)
    expect((await t.call('POST', '/responses', { key: weekly.key, json: SMALL })).status).toBe(402)
    expect(await keyRecord(t, daily.data.hash)).toMatchObject({ usage: 0.00004, usage_daily: 0.00002, usage_weekly: 0.00004, limit_remaining: 0.00001 })
    // Sunday is still the same week; Monday starts the next.
    time.set('2025-03-16T23:00:00Z')
    expect((await t.call('POST', '/responses', { key: weekly.key, json: SMALL })).status).toBe(402)
    time.set('2025-03-17T00:00:01Z')
    expect((await t.call('POST', '/responses', { key: weekly.key, json: SMALL })).status).toBe(200)
    expect(await keyRecord(t, weekly.data.hash)).toMatchObject({ usage: 0.00004, usage_weekly: 0.00002, usage_monthly: 0.00004, limit_reset: 'weekly' })
  })

  it('refuses an expired key with 401 on every route, naming when it expired', async () => {
    const time = clock()
    const { t } = await start({ now: time.now })
    const { key, data } = await createKey(t, { expires_at: '2025-03-12T11:00:00Z' })
    expect(data.expires_at).toBe('2025-03-12T11:00:00.000Z')
    expect((await t.call('POST', '/responses', { key, json: SMALL })).status).toBe(200)
    time.set('2025-03-12T11:00:00Z')
    for (const [method, path] of [['POST', '/responses'], ['GET', '/key'], ['GET', '/credits']] as const) {
      const response = await t.call(method, path, { key, ...(method === 'POST' ? { json: SMALL } : {}) })
      expect(response.status).toBe(401)
      expect(await readJson(response)).toEqual({ error: { code: 401, message: 'API key expired at 2025-03-12T11:00:00.000Z; create a new key' } })
    }
  })

  it('counts BYOK requests at the list price only when include_byok_in_limit is set', async () => {
    const provider = scriptedProvider({ reply: REPLY, apiKey: null })
    const { t } = await start({ provider })
    expect((await t.call('POST', '/byok', { json: { provider: 'alpha', key: 'byok-alpha-0123456789abcdef' } })).status).toBe(200)
    const excluded = await createKey(t, { limit: 0.00003 })
    const included = await createKey(t, { limit: 0.00003, include_byok_in_limit: true })
    // BYOK: the fee (5% of the list price) is what counts as usage.
    expect((await t.call('POST', '/responses', { key: excluded.key, json: SMALL })).status).toBe(200)
    expect((await t.call('POST', '/responses', { key: excluded.key, json: SMALL })).status).toBe(200)
    expect((await t.call('POST', '/responses', { key: included.key, json: SMALL })).status).toBe(200)
    const refused = await t.call('POST', '/responses', { key: included.key, json: SMALL })
    expect(refused.status).toBe(402)
    expect((await readJson(refused)).error.message).toContain('$0.000021 of it is spent')
    expect(await keyRecord(t, excluded.data.hash)).toMatchObject({ usage: 0.000002, byok_usage: 0.00004, byok_usage_daily: 0.00004, limit_remaining: 0.000028 })
    expect(await keyRecord(t, included.data.hash)).toMatchObject({ usage: 0.000001, byok_usage: 0.00002, limit_remaining: 0.000009 })
  })
})

describe('402 in each inference route', () => {
  const limited = async () => {
    const { t, provider } = await start()
    const { key } = await createKey(t, { limit: 0 })
    return { t, provider, key }
  }

  it('answers /chat/completions with the standard error body', async () => {
    const { t, provider, key } = await limited()
    const response = await t.call('POST', '/chat/completions', { key, json: { model: 'test/model', messages: [{ role: 'user', content: 'Hi' }] } })
    expect(response.status).toBe(402)
    const body = await readJson(response)
    expect(body.error).toMatchObject({ code: 402, metadata: { error_type: 'payment_required', limit: 'key' } })
    expect(body.error.message).toMatch(/^API key limit reached: the key may spend \$0\.00 in total/)
    expect(provider.calls).toHaveLength(0)
  })

  it('answers /messages in Anthropic\'s shape, billing_error', async () => {
    const { t, provider, key } = await limited()
    const response = await t.call('POST', '/messages', { key, json: { model: 'test/model', max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] } })
    expect(response.status).toBe(402)
    const body = await readJson(response)
    expect(Object.keys(body).sort()).toEqual(['error', 'type'])
    expect(body.type).toBe('error')
    expect(body.error.type).toBe('billing_error')
    expect(body.error.message).toMatch(/^API key limit reached/)
    expect(provider.calls).toHaveLength(0)
  })

  it('answers a stream request with the error body, not a stream', async () => {
    const { t, provider, key } = await limited()
    const response = await t.call('POST', '/responses', { key, json: { ...SMALL, stream: true } })
    expect(response.status).toBe(402)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    expect(provider.calls).toHaveLength(0)
  })
})

describe('intern chat turns', () => {
  it('are charged to the key and refused with 402 in the intern error body, like any request', async () => {
    const { t, provider } = await start()
    await t.gateway.admin.setAccountFlags(undefined, { interns: true })
    const { key, data } = await createKey(t, {})
    const created = await readJson(await t.call('POST', '/interns', { key, json: { name: 'ada', model: 'test/model', provision: true } }))
    await expect.poll(async () => (await readJson(await t!.call('GET', `/interns/${created.id}`, { key }))).status).toBe('running')
    const chat = () => t!.call('POST', `/interns/${created.id}/chat`, { key, json: { input: 'Hi' } })
    const first = await chat()
    expect(first.status).toBe(200)
    expect((await readEvents(first)).at(-1)?.type).toBe('response.completed')
    expect((await keyRecord(t, data.hash)).usage).toBe(0.00002)
    // A turn reserves the intern's instructions, tool and history plus 32,768 output tokens (over $0.0655): more than $0.06.
    expect((await t.call('PATCH', `/keys/${data.hash}`, { json: { limit: 0.06 } })).status).toBe(200)
    const refused = await chat()
    expect(refused.status).toBe(402)
    const body = await readJson(refused)
    expect(body.error).toMatchObject({ code: 402, metadata: { reason: 'payment_required', retryable: false } })
    expect(body.error.message).toMatch(/^API key limit reached: the key may spend \$0\.06 in total, \$0\.00002 of it is spent/)
    expect(provider.calls).toHaveLength(1)
  })
})

describe('workspace budgets', () => {
  it('refuses once a budget of the key\'s workspace would be passed; BYOK counts only with include_byok_in_budgets', async () => {
    const time = clock()
    const { t, provider } = await start({ now: time.now })
    const { budget } = await t.gateway.admin.setWorkspaceBudget(undefined, 'default', { interval: 'monthly', limitUsd: 0.00004 })
    expect(budget).toMatchObject({ interval: 'monthly', limitNano: 40_000 })
    expect((await t.responses(SMALL)).status).toBe(200)
    await t.gateway.flushSpend()
    const refused = await t.responses(SMALL)
    expect(refused.status).toBe(402)
    expect(await readJson(refused)).toEqual({
      error: {
        code: 402,
        message:
          'Workspace budget reached: workspace "default" may spend $0.00004 per month (UTC), $0.00002 of it is spent, and this request ' +
          'could cost up to $0.000026; lower max_output_tokens or raise the budget',
        metadata: { error_type: 'payment_required', limit: 'workspace_budget' },
      },
    })
    expect(provider.calls).toHaveLength(1)
    // Another workspace's keys are not held to it.
    const other = await t.gateway.admin.createWorkspace(undefined, { name: 'Other', slug: 'other' })
    const { key } = await createKey(t, { workspace_id: other.id })
    expect((await t.call('POST', '/responses', { key, json: SMALL })).status).toBe(200)
    // The next month starts the budget again.
    time.set('2025-04-01T00:00:00Z')
    expect((await t.responses(SMALL)).status).toBe(200)
    expect(await t.gateway.admin.deleteWorkspaceBudget(undefined, 'default', 'monthly')).toBe(true)
    expect(await t.gateway.admin.deleteWorkspaceBudget(undefined, 'default', 'monthly')).toBe(false)
  })

  it('counts a workspace\'s spend only in the periods its budgets hold it to, from when they are set', async () => {
    const time = clock()
    const { t } = await start({ now: time.now })
    const workspaceSpend = async (metric: 'usage' | 'byok', period: string) => {
      await t.gateway.flushSpend()
      const [value] = await t.gateway.storage.readTallies([`spend:workspace:${t.defaultWorkspaceId}:${metric}:${period}`])
      return value
    }
    expect((await t.responses(SMALL)).status).toBe(200)
    // No budget: nothing reads the workspace's spend, so a request leaves its counters alone.
    for (const period of ['total', 'd2025-03-12', 'w2025-03-10', 'm2025-03']) expect(await workspaceSpend('usage', period)).toBe(0)
    await t.gateway.admin.setWorkspaceBudget(undefined, 'default', { interval: 'weekly', limitUsd: 1 })
    expect((await t.responses(SMALL)).status).toBe(200)
    // The budget's period only; a request on the gateway's own key adds nothing to BYOK spend.
    expect(await workspaceSpend('usage', 'w2025-03-10')).toBe(20_000)
    expect(await workspaceSpend('byok', 'w2025-03-10')).toBe(0)
    expect(await workspaceSpend('usage', 'm2025-03')).toBe(0)
    // The key's own periods count every request whatever the budgets.
    expect((await keyRecord(t, t.regularKeyHash)).usage_monthly).toBe(0.00004)
  })

  it('counts BYOK spend at the list price when the workspace includes it', async () => {
    const { t } = await start({ provider: scriptedProvider({ reply: REPLY, apiKey: null }) })
    expect((await t.call('POST', '/byok', { json: { provider: 'alpha', key: 'byok-alpha-0123456789abcdef' } })).status).toBe(200)
    await t.gateway.admin.setWorkspaceBudget(undefined, 'default', { interval: 'daily', limitUsd: 0.00003 })
    // Excluded: only the fee ($0.000001 a request) counts.
    for (let index = 0; index < 3; index++) expect((await t.responses(SMALL)).status).toBe(200)
    await t.gateway.admin.setWorkspaceBudget(undefined, 'default', { interval: 'daily', limitUsd: 0.00003, includeByokInBudgets: true })
    await t.gateway.flushSpend()
    const refused = await t.responses(SMALL)
    expect(refused.status).toBe(402)
    expect((await readJson(refused)).error.message).toContain('$0.000063 of it is spent')
  })
})

describe('credits', () => {
  it('are counted but not enforced by default', async () => {
    const { t } = await start()
    expect((await t.responses(SMALL)).status).toBe(200)
  })

  it('refuse requests once the granted credits are used up when enforced, and count grants as records', async () => {
    const { t, provider } = await start({ enforceCredits: true })
    const refused = await t.responses(SMALL)
    expect(refused.status).toBe(402)
    expect(await readJson(refused)).toEqual({
      error: {
        code: 402,
        message:
          'Insufficient credits: the account has $0.00 left of $0.00 granted, and this request could cost up to $0.000026; ' +
          'lower max_output_tokens or ask the operator for more credits',
        metadata: { error_type: 'payment_required', limit: 'credits' },
      },
    })
    expect(provider.calls).toHaveLength(0)

    const granted = await t.gateway.admin.grantCredits(undefined, { amount: 0.00004, note: 'trial' })
    expect(granted).toMatchObject({ totalCredits: 0.00004, totalUsage: 0, grant: { sequence: 1, amountNano: 40_000, note: 'trial', grantedBy: 'admin' } })
    expect((await t.responses(SMALL)).status).toBe(200)
    await t.gateway.flushSpend()
    expect((await t.responses(SMALL)).status).toBe(402)
    await t.gateway.admin.grantCredits(undefined, { amount: 1, note: 'top-up', grantedBy: 'billing' })
    expect((await t.responses(SMALL)).status).toBe(200)
    await t.gateway.flushSpend()
    expect(await readJson(await t.call('GET', '/credits'))).toEqual({ data: { total_credits: 1.00004, total_usage: 0.00004 } })
    const { grants, totalCount } = await t.gateway.admin.listCreditGrants(undefined)
    expect(totalCount).toBe(2)
    expect(grants.map((grant) => [grant.sequence, grant.amountNano, grant.grantedBy])).toEqual([
      [1, 40_000, 'admin'],
      [2, 1_000_000_000, 'billing'],
    ])
    // A regular key may not read the account's credits.
    expect((await t.call('GET', '/credits', { key: t.regularKey })).status).toBe(403)
  })

  it('never refuses a request that cannot cost anything', async () => {
    const provider = scriptedProvider({ reply: REPLY })
    t = await createTestGateway({
      enforceCredits: true,
      providers: { alpha: provider },
      models: [{ slug: 'test/free', name: 'Free', endpoints: [{ provider: 'alpha', model: 'free', contextLength: 8192, pricing: { prompt: 0, completion: 0 } }] }],
    })
    expect((await t.responses({ model: 'test/free', input: 'Hi' })).status).toBe(200)
  })
})

describe('admin API', () => {
  it('validates grants, budgets and key limits, naming the field', async () => {
    const { t } = await start()
    const { admin } = t.gateway
    await expect(admin.grantCredits(undefined, { amount: 0 })).rejects.toThrow('input.amount: must not be 0')
    await expect(admin.grantCredits(undefined, { amount: 2_000_000 })).rejects.toThrow('input.amount: must be at most 1000000')
    await expect(admin.grantCredits(undefined, { amount: 1, memo: 'x' } as never)).rejects.toThrow('input.memo: unknown field')
    await expect(admin.setWorkspaceBudget(undefined, 'default', { interval: 'daily', limitUsd: 0 })).rejects.toThrow('input.limitUsd: must be greater than 0')
    await expect(admin.setWorkspaceBudget(undefined, 'default', { interval: 'yearly' as never, limitUsd: 1 })).rejects.toThrow('input.interval: must be')
    await expect(admin.deleteWorkspaceBudget(undefined, 'default', 'yearly')).rejects.toThrow('must be "daily", "weekly", "monthly" or "lifetime"')
    await expect(admin.setWorkspaceBudget(undefined, 'missing', { interval: 'daily', limitUsd: 1 })).rejects.toThrow('Workspace not found')

    const limited = await admin.updateKeyLimits(undefined, t.regularKeyHash.slice(0, 12), { limit: 0.5, limitReset: 'daily', includeByokInLimit: true })
    expect(limited).toMatchObject({ limitNano: 500_000_000, limitReset: 'daily', includeByokInLimit: true })
    expect(await admin.updateKeyLimits(undefined, t.regularKeyHash, { limit: null })).toMatchObject({ limitNano: null, limitReset: 'daily' })
    const { record } = await admin.createKey({ name: 'expiring', limit: 1, expiresAt: '2099-01-01T00:00:00Z' })
    expect(record).toMatchObject({ limitNano: 1_000_000_000, expiresAt: '2099-01-01T00:00:00.000Z' })
    await expect(admin.createKey({ expiresAt: '2001-01-01T00:00:00Z' })).rejects.toThrow('input.expiresAt: must be in the future')
  })
})

describe('reservations under concurrency', () => {
  it('lets parallel requests pass a limit by no more than they under-reserved, and settles usage to the sum of real costs', async () => {
    const { t } = await start()
    const { key, data } = await createKey(t, { limit: 0.0002 })
    const answers = await Promise.all(Array.from({ length: 30 }, () => t!.call('POST', '/responses', { key, json: SMALL })))
    const served = answers.filter((response) => response.status === 200).length
    expect(answers.every((response) => response.status === 200 || response.status === 402)).toBe(true)
    // Each reserves $0.000026 and costs $0.00002: whatever the interleaving, no more than ten fit in $0.0002.
    expect(served).toBeGreaterThan(0)
    expect(served).toBeLessThanOrEqual(10)
    const record = await keyRecord(t, data.hash)
    expect(record.usage).toBeCloseTo(served * 0.00002, 12)
    expect(record.usage).toBeLessThanOrEqual(0.0002)
  })
})

describe('server-tool loops hold each later turn before it is sent', () => {
  // Every turn calls service:datetime again, so a loop runs until `max_tool_calls` (30) unless its spend stops it.
  const LOOPING = [{ type: 'function_call' as const, name: 'service_datetime', arguments: '{}' }, { type: 'usage' as const, inputTokens: 10, outputTokens: 5 }]
  const TURN_NANO = 20_000
  const LIMIT_NANO = 200_000
  const LOOPS = 4
  const body = { input: 'Hi', max_output_tokens: 10, tools: [{ type: 'service:datetime' }] }

  it('stops concurrent loops at the key limit, each passing it by no more than one turn, and ends them failed with 402', async () => {
    const { t, provider } = await start({ provider: scriptedProvider({ reply: LOOPING }) })
    const { key, data } = await createKey(t, { limit: LIMIT_NANO / 1e9 })
    const answers = await Promise.all(Array.from({ length: LOOPS }, () => t.call('POST', '/responses', { json: body, key })))
    const results = await Promise.all(answers.map((answer) => readJson(answer)))
    for (const result of results) {
      expect(result.status).toBe('failed')
      expect(result.error.message).toMatch(/API key limit reached/)
    }
    const record = await keyRecord(t, data.hash)
    const spentNano = Math.round(record.usage * 1e9)
    // Every turn that ran was charged, and no loop ran a turn the limit could not hold.
    expect(spentNano).toBe(provider.calls.length * TURN_NANO)
    expect(spentNano).toBeLessThanOrEqual(LIMIT_NANO + LOOPS * TURN_NANO)
    // Without a hold per turn, four loops of 31 turns would have spent 124 turns.
    expect(provider.calls.length).toBeLessThan(LIMIT_NANO / TURN_NANO + LOOPS + 1)
  })

  it('ends a streamed loop in-band with the 402 once its next turn would pass the limit, having charged the turns it ran', async () => {
    const { t, provider } = await start({ provider: scriptedProvider({ reply: LOOPING }) })
    const { key, data } = await createKey(t, { limit: LIMIT_NANO / 1e9 })
    const events = await readEvents(await t.call('POST', '/responses', { json: { ...body, stream: true }, key }))
    const last = events.at(-1) as unknown as { type: string; response: { status: string; error: { message: string }; usage: { cost: number } } }
    expect(last.type).toBe('response.failed')
    expect(last.response.error.message).toMatch(/API key limit reached/)
    const record = await keyRecord(t, data.hash)
    expect(Math.round(record.usage * 1e9)).toBe(provider.calls.length * TURN_NANO)
    expect(Math.round(last.response.usage.cost * 1e9)).toBe(provider.calls.length * TURN_NANO)
    expect(provider.calls.length).toBeLessThanOrEqual(LIMIT_NANO / TURN_NANO)
  })
})
