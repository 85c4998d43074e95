/**
 * One key's spending limit held by three gateway processes on one store (Redis, PostgreSQL, then a SQLite file): requests
 * spread over all three reserve their worst case with atomic increments before calling the upstream, so
 * while they run the key's counter passes its limit by no more than the reservations in flight, and once
 * every request settled, the key's usage is exactly the sum of what the served requests cost.
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startListening, type RunningProcess } from '../helpers/process'
import { PROCESS_STORES, requireServer, uniqueNamespace } from '../helpers/stores'
import { startUpstream, type Upstream } from '../helpers/upstream'

const CLI = resolve(__dirname, '../../dist/cli.js')
const OPERATOR_KEY = `operator-${uniqueNamespace('key')}`

// $1 per million input tokens, $2 per million output: an answer of 10 in and 5 out costs 20,000 nano-dollars.
const PRICING = { prompt: 0.000001, completion: 0.000002 }
const COST_NANO = 20_000
// `Hi` estimates 6 prompt tokens and max_output_tokens is 10: each request reserves 26,000 nano-dollars.
const RESERVED_NANO = 26_000
const LIMIT_NANO = 300_000
const WAVE = 60

const answer = JSON.stringify({
  id: 'chatcmpl-spend',
  object: 'chat.completion',
  created: 1,
  model: 'priced',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
})

describe.each(PROCESS_STORES)('one key limit across three gateway processes on one $name', (store) => {
  const namespace = uniqueNamespace('spend')
  let gateways: RunningProcess[] = []
  let upstream: Upstream
  let directory: string

  beforeAll(async () => {
    await requireServer(store.port)
    upstream = await startUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: answer }))
    directory = await mkdtemp(join(tmpdir(), 'modelgate-spend-'))
    const config = join(directory, 'config.json')
    await writeFile(
      config,
      JSON.stringify({
        providers: { loop: { api: 'openai-chat', baseURL: `${upstream.url}/v1`, isKeyless: true } },
        models: [{ slug: 'test/priced', name: 'Priced', endpoints: [{ provider: 'loop', model: 'priced', contextLength: 8192, pricing: PRICING }] }],
      }),
    )
    const started = await Promise.allSettled(
      [0, 1, 2].map(() =>
        startListening('node', [CLI, 'serve'], {
          env: { ...store.env(namespace), MODELGATE_CONFIG: config, MODELGATE_PORT: '0', MODELGATE_LOG_LEVEL: 'warn', MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY },
        }),
      ),
    )
    gateways = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
    const failure = started.find((result) => result.status === 'rejected')
    if (failure) throw (failure as PromiseRejectedResult).reason
  })

  afterAll(async () => {
    await Promise.all(gateways.map((gateway) => gateway.stop('SIGTERM')))
    await upstream?.close()
    await store.drop(namespace)
    if (directory) await rm(directory, { recursive: true, force: true })
  })

  const send = (index: number, path: string, init: { key: string; method?: string; json?: unknown }) =>
    fetch(`${gateways[index % 3]!.url}/api/v1${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${init.key}`, ...(init.json === undefined ? {} : { 'content-type': 'application/json' }) },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    })

  const usageNano = async (index: number, hash: string) => {
    const response = await send(index, `/keys/${hash}`, { key: OPERATOR_KEY })
    expect(response.status).toBe(200)
    return Math.round(((await response.json()) as { data: { usage: number } }).data.usage * 1e9)
  }

  it('passes the limit by no more than the reservations in flight, and settles to the sum of real costs', async () => {
    const created = await send(0, '/keys', { key: OPERATOR_KEY, method: 'POST', json: { name: 'hammered', limit: LIMIT_NANO / 1e9 } })
    expect(created.status).toBe(201)
    const { key, data } = (await created.json()) as { key: string; data: { hash: string } }
    const ask = (index: number) => send(index, '/responses', { key, method: 'POST', json: { model: 'test/priced', input: 'Hi', max_output_tokens: 10 } })

    let inFlight = 0
    let isRunning = true
    const samples: Array<{ usage: number; inFlight: number }> = []
    const sampler = (async () => {
      for (let index = 0; isRunning; index++) {
        const before = inFlight
        const usage = await usageNano(index, data.hash)
        samples.push({ usage, inFlight: Math.max(before, inFlight) })
      }
    })()
    const statuses = await Promise.all(
      Array.from({ length: WAVE }, async (_, index) => {
        inFlight++
        try {
          const response = await ask(index)
          await response.arrayBuffer()
          return response.status
        } finally {
          inFlight--
        }
      }),
    )
    isRunning = false
    await sampler
    expect(statuses.every((status) => status === 200 || status === 402)).toBe(true)
    // Sampled while requests ran: settled spend plus reservations, over the limit by at most what was in flight.
    for (const sample of samples) expect(sample.usage).toBeLessThanOrEqual(LIMIT_NANO + sample.inFlight * RESERVED_NANO)

    // Each process settles a request just after its answer ends; a read from any of them sees them all.
    let served = statuses.filter((status) => status === 200).length
    await expect.poll(() => usageNano(1, data.hash)).toBe(served * COST_NANO)
    // One at a time, the rest of the budget: refused exactly when the next worst case would not fit.
    for (let index = 0; ; index++) {
      const response = await ask(index)
      await response.arrayBuffer()
      if (response.status === 402) break
      expect(response.status).toBe(200)
      served++
      await expect.poll(() => usageNano(index + 1, data.hash)).toBe(served * COST_NANO)
    }
    expect(upstream.requests).toHaveLength(served)
    const usage = served * COST_NANO
    expect(usage).toBeLessThanOrEqual(LIMIT_NANO)
    expect(usage + RESERVED_NANO).toBeGreaterThan(LIMIT_NANO)
    const credits = (await (await send(2, '/credits', { key: OPERATOR_KEY })).json()) as { data: { total_usage: number } }
    expect(Math.round(credits.data.total_usage * 1e9)).toBe(usage)
  })
})
