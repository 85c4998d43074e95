/**
 * `GET /stats`: the usage ledger summed over a range for management keys, in total and by key, model, provider and
 * workspace, with percentiles, error and fallback rates and the newest generations; and its bounds and 400s.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, scriptedProvider, TEST_MODEL, type ScriptedAnswer, type TestGateway } from '../../../src/testing'
import { createGenerationsRepository, type GenerationRecord } from '../../../src/repositories/generations'
import { memoryStorage } from '../../../src/storage/memory'
import { percentile } from '../../../src/routes/stats.figures'

let harness: TestGateway | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const answer = (input: number, output: number): ScriptedAnswer => [
  { type: 'text', text: 'ok' },
  { type: 'usage', inputTokens: input, outputTokens: output },
]

const OTHER_MODEL = 'test/other'

const stats = async (query = '', key = harness!.managementKey) => {
  const response = await harness!.call('GET', `/stats${query}`, { key })
  return { status: response.status, cacheControl: response.headers.get('cache-control'), body: await response.json() }
}

const generationOf = async (id: string) => (await (await harness!.call('GET', `/generation?id=${id}`)).json()).data

describe('GET /stats', () => {
  it('totals the range and breaks it down by key, model, provider and workspace, matching each generation', async () => {
    let clock = new Date('2026-03-01T10:15:00.000Z')
    harness = await createTestGateway({
      now: () => clock,
      outlierDetection: false,
      providers: {
        alpha: scriptedProvider({ replies: [answer(10, 5), [{ type: 'http_error', status: 500 }]] }),
        beta: scriptedProvider({ replies: [answer(20, 8), answer(3, 1), [{ type: 'http_error', status: 400, message: 'bad' }]] }),
      },
      models: [{ slug: OTHER_MODEL, name: 'Other', endpoints: [{ provider: 'beta', model: 'other', contextLength: 8000, pricing: { prompt: 0.000003, completion: 0.000004 } }] }],
    })
    const second = await harness.gateway.admin.createKey({ kind: 'regular', name: 'second' })
    const ids: string[] = []
    ids.push((await (await harness.responses({ model: TEST_MODEL, input: 'a' })).json()).id) // alpha, 10+5
    clock = new Date('2026-03-01T11:05:00.000Z')
    // alpha fails with a 500, beta answers: a fallback.
    ids.push((await (await harness.responses({ model: TEST_MODEL, input: 'b' })).json()).id)
    ids.push((await (await harness.responses({ model: OTHER_MODEL, input: 'c' }, { key: second.key })).json()).id) // beta, 3+1
    const failed = await harness.responses({ model: OTHER_MODEL, input: 'd' }, { key: second.key })
    expect(failed.status).toBe(400)

    const { status, body, cacheControl } = await stats('?from=2026-03-01T00:00:00Z&to=2026-03-01T12:00:00Z&group_by=key')
    expect(status).toBe(200)
    expect(cacheControl).toBe('no-store')
    const { data } = body
    expect(data).toMatchObject({ from: '2026-03-01T00:00:00.000Z', to: '2026-03-01T12:00:00.000Z', bucket: 'hour', truncated: false, group_by: 'key' })
    const generations = await Promise.all(ids.map(generationOf))
    const cost = generations.reduce((sum, generation) => sum + generation.total_cost, 0)
    expect(data.total).toMatchObject({
      requests: 4,
      errors: 1,
      fallbacks: 1,
      error_rate: 0.25,
      fallback_rate: 0.25,
      prompt_tokens: 33,
      completion_tokens: 14,
    })
    expect(data.total.cost).toBeCloseTo(cost, 12)
    // Twelve hourly buckets, every one listed; the two with traffic carry it.
    expect(data.total.series).toHaveLength(12)
    expect(data.total.series[10]).toMatchObject({ start: '2026-03-01T10:00:00.000Z', requests: 1, prompt_tokens: 10, completion_tokens: 5 })
    expect(data.total.series[11]).toMatchObject({ start: '2026-03-01T11:00:00.000Z', requests: 3, errors: 1, prompt_tokens: 23, completion_tokens: 9 })
    // The percentiles are of the generations' own latencies (nearest rank).
    const latencies = [...generations.map((generation) => generation.latency as number)]
    expect(data.total.latency_ms.p50).toBeGreaterThanOrEqual(0)
    expect(latencies.concat(data.recent.map((item: { latency_ms: number }) => item.latency_ms))).toContain(data.total.latency_ms.p99)
    expect(data.total.time_to_first_token_ms).toEqual({ p50: null, p95: null, p99: null })

    expect(data.groups.map((group: { group: string; requests: number }) => [group.group, group.requests])).toEqual(
      [
        [harness.regularKeyHash, 2],
        [second.record.hash, 2],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    )
    const byModel = (await stats('?from=2026-03-01T00:00:00Z&to=2026-03-01T12:00:00Z&group_by=model')).body.data.groups
    expect(byModel.map((group: { group: string; requests: number }) => [group.group, group.requests])).toEqual([
      [TEST_MODEL, 2],
      [OTHER_MODEL, 2],
    ])
    const byProvider = (await stats('?from=2026-03-01T00:00:00Z&to=2026-03-01T12:00:00Z&group_by=provider')).body.data.groups
    // The failed request reached no provider that answered: it counts under none.
    expect(byProvider.map((group: { group: string | null; requests: number; errors: number }) => [group.group, group.requests, group.errors])).toEqual([
      ['beta', 2, 0],
      ['alpha', 1, 0],
      [null, 1, 1],
    ])
    const byWorkspace = (await stats('?from=2026-03-01T00:00:00Z&to=2026-03-01T12:00:00Z&group_by=workspace')).body.data.groups
    expect(byWorkspace).toEqual([expect.objectContaining({ group: harness.defaultWorkspaceId, requests: 4 })])

    // Newest first, each with the id `GET /generation` finds it by.
    expect(data.recent).toHaveLength(4)
    expect(data.recent[3]).toMatchObject({ id: ids[0], model: TEST_MODEL, provider: 'alpha', status: 'completed', is_fallback: false, prompt_tokens: 10 })
    expect(data.recent.find((item: { id: string }) => item.id === ids[1])).toMatchObject({ provider: 'beta', is_fallback: true })
    expect(data.recent.filter((item: { status: string }) => item.status === 'failed')).toHaveLength(1)

    // A range that leaves the first hour out leaves its request out.
    const later = (await stats('?from=2026-03-01T11:00:00Z&to=2026-03-01T12:00:00Z')).body.data
    expect(later.total.requests).toBe(3)
    expect(later.groups).toBeUndefined()
  })

  it('defaults to the last day, bucketed by hour, and buckets longer ranges by day', async () => {
    let clock = new Date('2026-03-10T12:00:00.000Z')
    harness = await createTestGateway({ now: () => clock, providers: { alpha: scriptedProvider({ reply: answer(1, 1) }) } })
    await harness.responses({ model: TEST_MODEL, input: 'a' })
    clock = new Date('2026-03-10T12:30:00.000Z')
    const { data } = (await stats()).body
    expect(data).toMatchObject({ from: '2026-03-09T12:30:00.000Z', to: '2026-03-10T12:30:00.000Z', bucket: 'hour' })
    expect(data.total.series).toHaveLength(25)
    expect(data.total.requests).toBe(1)
    const week = (await stats('?from=2026-03-04T00:00:00Z&to=2026-03-11T00:00:00Z')).body.data
    expect(week.bucket).toBe('day')
    expect(week.total.series.map((bucket: { requests: number }) => bucket.requests)).toEqual([0, 0, 0, 0, 0, 0, 1])
    expect((await stats('?from=2026-03-04T00:00:00Z&to=2026-03-11T00:00:00Z&bucket=hour')).body.data.total.series).toHaveLength(168)
  })

  it("starts the range where the ledger's retention does", async () => {
    const clock = new Date('2026-03-10T00:00:00.000Z')
    harness = await createTestGateway({ now: () => clock, ledger: { retentionDays: 2 }, providers: { alpha: scriptedProvider({ reply: 'hi' }) } })
    const { data } = (await stats('?from=2026-03-01T00:00:00Z&to=2026-03-10T00:00:00Z')).body
    expect(data.from).toBe('2026-03-08T00:00:00.000Z')
  })

  it('answers zeros with the ledger off', async () => {
    harness = await createTestGateway({ ledger: { enabled: false }, providers: { alpha: scriptedProvider({ reply: 'hi' }) } })
    await harness.responses({ model: TEST_MODEL, input: 'a' })
    const { data } = (await stats('?group_by=model')).body
    expect(data.total).toMatchObject({ requests: 0, cost: 0, latency_ms: { p50: null, p95: null, p99: null } })
    expect(data.groups).toEqual([])
    expect(data.recent).toEqual([])
  })

  it('is for management keys only', async () => {
    harness = await createTestGateway()
    expect((await stats('', harness.regularKey)).status).toBe(403)
  })

  it.each([
    ['?from=yesterday', /^query\.from: must be an ISO 8601 time/],
    ['?from=2026-03-01', /^query\.from: must be an ISO 8601 time/],
    ['?from=2026-02-30T00:00:00Z', /^query\.from: /],
    ['?to=2026-03-01T00:00:00+25:00', /^query\.to: /],
    ['?from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z', /^query\.to: must be later than from/],
    ['?from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z', /^query\.from: the range from\.\.to must be at most 31 days/],
    ['?group_by=colour', /^query\.group_by: must be one of key, model, provider, workspace/],
    ['?bucket=minute', /^query\.bucket: must be hour or day/],
    ['?limit=5', /^query\.limit: /],
  ])('refuses %s with a 400 naming the parameter', async (query, message) => {
    harness = await createTestGateway()
    const { status, body } = await stats(query)
    expect(status).toBe(400)
    expect(body.error.message).toMatch(message)
  })
})

describe('the stats figures', () => {
  it('takes the nearest-rank percentile', () => {
    const sorted = Array.from({ length: 100 }, (_, index) => index + 1)
    expect([percentile(sorted, 50), percentile(sorted, 95), percentile(sorted, 99)]).toEqual([50, 95, 99])
    expect(percentile([7], 99)).toBe(7)
    expect(percentile([1, 2, 3, 4], 50)).toBe(2)
    expect(percentile([], 50)).toBeNull()
  })

  it('reads at most the cap of records, newest day first, and says it was cut short', async () => {
    const storage = memoryStorage()
    const repository = createGenerationsRepository(storage)
    const record = (id: string, createdAt: string) => ({ id, createdAt, accountId: 'acct', workspaceId: 'ws' }) as GenerationRecord
    await repository.store([record('a', '2026-03-01T10:00:00.000Z'), record('b', '2026-03-02T10:00:00.000Z'), record('c', '2026-03-03T10:00:00.000Z'), record('d', '2026-03-03T11:00:00.000Z')])
    const read = async (cap: number) => {
      let isCapped = false
      const ids: string[] = []
      for await (const item of repository.listBetween('acct', '2026-03-01T00:00:00.000Z', '2026-03-03T11:00:00.000Z', cap, () => (isCapped = true))) ids.push(item.id)
      return { ids, isCapped }
    }
    // `d` is on the range's last day but at its end (exclusive): read, not listed.
    expect(await read(10)).toEqual({ ids: ['c', 'b', 'a'], isCapped: false })
    expect(await read(3)).toEqual({ ids: ['c', 'b'], isCapped: true })
    await storage.close()
  })
})
