/**
 * The response cache shared by three gateway processes on one store: an answer one process stored is a hit on the
 * others, the provider is called once, and each hit is charged the operator's per-hit price exactly once, however the
 * hits spread over the processes: the key's usage and the account's total settle to the miss's cost plus the hits'.
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
const HIT_CHARGE_NANO = 3_000
const HITS = 30

const answer = JSON.stringify({
  id: 'chatcmpl-cached',
  object: 'chat.completion',
  created: 1,
  model: 'priced',
  choices: [{ index: 0, message: { role: 'assistant', content: 'cached words' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
})

describe.each(PROCESS_STORES)('the response cache across three gateway processes on one $name', (store) => {
  const namespace = uniqueNamespace('cache_mp')
  let gateways: RunningProcess[] = []
  let upstream: Upstream
  let directory: string

  beforeAll(async () => {
    await requireServer(store.port)
    upstream = await startUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: answer }))
    directory = await mkdtemp(join(tmpdir(), 'modelgate-cache-mp-'))
    const config = join(directory, 'config.json')
    await writeFile(
      config,
      JSON.stringify({
        providers: { loop: { api: 'openai-chat', baseURL: `${upstream.url}/v1`, isKeyless: true } },
        models: [{ slug: 'test/priced', name: 'Priced', endpoints: [{ provider: 'loop', model: 'priced', contextLength: 8192, pricing: PRICING }] }],
        responseCache: { hitCharge: HIT_CHARGE_NANO / 1e9 },
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

  const send = (index: number, path: string, init: { key: string; method?: string; json?: unknown; headers?: Record<string, string> }) =>
    fetch(`${gateways[index % 3]!.url}/api/v1${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${init.key}`, ...(init.json === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    })

  const usageNano = async (index: number, hash: string) => {
    const response = await send(index, `/keys/${hash}`, { key: OPERATOR_KEY })
    expect(response.status).toBe(200)
    return Math.round(((await response.json()) as { data: { usage: number } }).data.usage * 1e9)
  }

  it('serves one process’s answer as a hit on all three, charging each hit once', async () => {
    const created = await send(0, '/keys', { key: OPERATOR_KEY, method: 'POST', json: { name: 'cached' } })
    expect(created.status).toBe(201)
    const { key, data } = (await created.json()) as { key: string; data: { hash: string } }
    const ask = (index: number) =>
      send(index, '/responses', { key, method: 'POST', json: { model: 'test/priced', input: 'Same question' }, headers: { 'x-modelgate-cache-ttl': '300' } })

    const first = await ask(0)
    expect(first.status).toBe(200)
    expect(first.headers.get('x-modelgate-cache')).toBe('miss')
    await first.arrayBuffer()

    const hits = await Promise.all(
      Array.from({ length: HITS }, async (_, index) => {
        const response = await ask(index)
        const body = (await response.json()) as { usage: { cost: number }; output: Array<{ content: Array<{ text: string }> }> }
        return { status: response.status, cache: response.headers.get('x-modelgate-cache'), cost: body.usage.cost, text: body.output[0]!.content[0]!.text }
      }),
    )
    expect(hits.every((hit) => hit.status === 200 && hit.cache === 'hit' && hit.text === 'cached words')).toBe(true)
    for (const hit of hits) expect(Math.round(hit.cost * 1e9)).toBe(HIT_CHARGE_NANO)
    expect(upstream.requests).toHaveLength(1)

    // Settled by whichever process served each: a read from any of them sees them all, each charged once.
    const expected = COST_NANO + HITS * HIT_CHARGE_NANO
    await expect.poll(() => usageNano(1, data.hash)).toBe(expected)
    const credits = (await (await send(2, '/credits', { key: OPERATOR_KEY })).json()) as { data: { total_usage: number } }
    expect(Math.round(credits.data.total_usage * 1e9)).toBe(expected)
  })
})
