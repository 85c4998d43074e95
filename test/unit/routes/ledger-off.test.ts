/**
 * The usage ledger turned off (`ledger.enabled: false`, docs/decisions.md, Usage ledger): no record is written or
 * swept, `GET /generation` answers 404 saying why and `GET /activity` an empty list, while key limits and credits,
 * which are counters of their own, keep counting and refusing.
 *
 * Prices: the kit's test model costs $1 per million input tokens and $2 per million output tokens, so the reply
 * below (10 input, 5 output tokens) costs $0.00002, and `SMALL` reserves $0.000026 before it is sent.
 */

import { afterEach, describe, expect, it, vi } from 'vitest'
import { createGateway, memoryStorage, type GatewayOptions } from '../../../src'
import { DEFAULT_LEDGER_SWEEP_INTERVAL_MS } from '../../../src/ledger/ledger'
import { createTestGateway, readEvents, scriptedProvider, TEST_MODEL, type TestGateway } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'

const REPLY = [{ type: 'text' as const, text: ['Hello', ' there'] }, { type: 'usage' as const, inputTokens: 10, outputTokens: 5 }]
const SMALL = { model: TEST_MODEL, input: 'Hi', max_output_tokens: 10 }
const LEDGER_OFF = { error: { code: 404, message: 'Generation not found: this gateway records no generations (its usage ledger is off)' } }

let harness: TestGateway | undefined
afterEach(async () => {
  vi.useRealTimers()
  await harness?.close()
  harness = undefined
})

const start = async (ledger: GatewayOptions['ledger']) => {
  harness = await createTestGateway({ providers: { alpha: scriptedProvider({ reply: REPLY }) }, ledger })
  return harness
}

const storedGenerations = async (gateway: TestGateway) => (await gateway.gateway.storage.list('generations')).items

describe('ledger.enabled: false', () => {
  it('writes no record of whole, streamed or Chat Completions answers, and says so on GET /generation', async () => {
    const gateway = await start({ enabled: false })
    const whole = await readJson(await gateway.responses(SMALL))
    expect(whole.status).toBe('completed')
    const streamed = await readEvents(await gateway.responses({ ...SMALL, stream: true }))
    expect(streamed.at(-1)?.type).toBe('response.completed')
    const chat = await gateway.call('POST', '/chat/completions', { key: gateway.regularKey, json: { model: TEST_MODEL, messages: [{ role: 'user', content: 'Hi' }] } })
    expect(chat.status).toBe(200)

    expect(await storedGenerations(gateway)).toEqual([])
    for (const path of [`/generation?id=${whole.id}`, `/generation/content?id=${whole.id}`]) {
      for (const key of [gateway.regularKey, gateway.managementKey]) {
        const found = await gateway.call('GET', path, { key })
        expect(found.status).toBe(404)
        expect(await readJson(found)).toEqual(LEDGER_OFF)
      }
    }
    // The query is still checked: an unknown parameter is a 400, as with the ledger on.
    expect((await gateway.call('GET', `/generation?id=${whole.id}&include=content`, { key: gateway.regularKey })).status).toBe(400)
  })

  it('the same requests with the ledger on leave one record each (the contrast the test above relies on)', async () => {
    const gateway = await start(undefined)
    const whole = await readJson(await gateway.responses(SMALL))
    await readEvents(await gateway.responses({ ...SMALL, stream: true }))
    expect(await storedGenerations(gateway)).toHaveLength(2)
    expect((await gateway.call('GET', `/generation?id=${whole.id}`, { key: gateway.regularKey })).status).toBe(200)
  })

  it('answers GET /activity with an empty list, still checking its query', async () => {
    const now = new Date('2025-03-31T10:00:00.000Z')
    harness = await createTestGateway({ providers: { alpha: scriptedProvider({ reply: REPLY }) }, ledger: { enabled: false }, now: () => now })
    expect((await harness.responses(SMALL)).status).toBe(200)
    const activity = (query: string) => harness!.call('GET', `/activity${query}`)
    expect(await readJson(await activity(''))).toEqual({ data: [] })
    // No retention bounds the days asked of; the future still is no day to ask.
    expect(await readJson(await activity('?date=2024-01-01'))).toEqual({ data: [] })
    expect(await readJson(await activity('?date=2025-04-01'))).toEqual({ error: { code: 400, message: 'query.date: must not be a day in the future' } })
    expect((await activity('?limit=5')).status).toBe(400)
    expect(await readJson(await activity('?workspace_id=00000000-0000-4000-8000-000000000000'))).toEqual({ error: { code: 404, message: 'Workspace not found' } })
    expect((await harness.call('GET', '/activity', { key: harness.regularKey })).status).toBe(403)
  })

  it('keeps counting spend on the key and the account, and a key limit still refuses with 402', async () => {
    const gateway = await start({ enabled: false })
    const created = await readJson(await gateway.call('POST', '/keys', { json: { name: 'Limited', limit: 0.00003 } }))
    expect((await gateway.responses(SMALL, { key: created.key })).status).toBe(200)
    // $0.00002 spent, $0.000026 more reserved: past the $0.00003 limit.
    const refused = await gateway.responses(SMALL, { key: created.key })
    expect(refused.status).toBe(402)
    expect((await readJson(refused)).error.metadata).toMatchObject({ limit: 'key' })

    await gateway.gateway.flushSpend()
    const key = (await readJson(await gateway.call('GET', `/keys/${created.data.hash}`))).data
    expect(key).toMatchObject({ usage: 0.00002, usage_daily: 0.00002, limit: 0.00003, limit_remaining: 0.00001 })
    expect(await readJson(await gateway.call('GET', '/credits'))).toEqual({ data: { total_credits: 0, total_usage: 0.00002 } })
    expect(await storedGenerations(gateway)).toEqual([])
  })

  it('sweeps nothing: records in the store stay where a gateway with the ledger on deletes them', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
    const sweptAfterInterval = async (ledger: GatewayOptions['ledger']) => {
      const storage = memoryStorage()
      await storage.createMany('generations', [{ id: 'resp_old', data: { id: 'resp_old' }, sortKey: '2025-01-01T00:00:00.000Z' }])
      const gateway = createGateway({ storage, logger: false, ledger, now: () => new Date('2025-06-01T00:00:00.000Z') })
      await vi.advanceTimersByTimeAsync(DEFAULT_LEDGER_SWEEP_INTERVAL_MS + 1)
      const { items } = await storage.list('generations')
      await gateway.close()
      return items.length === 0
    }
    expect(await sweptAfterInterval(undefined)).toBe(true)
    expect(await sweptAfterInterval({ enabled: false })).toBe(false)
  })

  it('still answers a guardrail block with its 403, naming no generation, and writes no record of it', async () => {
    const gateway = await start({ enabled: false })
    const guardrail = await readJson(await gateway.call('POST', '/guardrails', { json: { name: 'No mail', content_filter_builtins: [{ slug: 'email', action: 'block' }] } }))
    const assigned = await gateway.call('POST', `/guardrails/${guardrail.data.id}/assignments/keys`, { json: { key_hashes: [gateway.regularKeyHash] } })
    expect(assigned.status).toBe(200)
    const blocked = await gateway.responses({ model: TEST_MODEL, input: 'Mail jane.doe@example.com' })
    expect(blocked.status).toBe(403)
    const { error } = await readJson(blocked)
    expect(error.metadata.patterns).toBeDefined()
    expect(error.metadata.generation_id).toBeUndefined()
    expect(await storedGenerations(gateway)).toEqual([])
  })

  it('refuses retention settings beside enabled: false, naming the field', async () => {
    const make = (ledger: GatewayOptions['ledger']) => () => createGateway({ storage: memoryStorage(), logger: false, ledger })
    expect(make({ enabled: false, retentionDays: 7 })).toThrow('options.ledger.retentionDays: has no effect with enabled: false (the usage ledger keeps no records)')
    expect(make({ enabled: false, sweepIntervalMs: false })).toThrow('options.ledger.sweepIntervalMs: has no effect with enabled: false')
    expect(make({ enabled: 'no' as never })).toThrow('options.ledger.enabled:')
    await make({ enabled: true, retentionDays: 7 })().close()
  })
})
