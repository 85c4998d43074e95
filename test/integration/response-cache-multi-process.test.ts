/**
 * The response cache shared by three gateway processes on one store: an answer one process stored is a hit on the
 * others, the provider is called once, and each hit is charged the operator's per-hit price exactly once, however the
 * hits spread over the processes: the key's usage, the account's total and the ledger settle to the miss's cost plus
 * the hits'. (Run after `npm run build`.)
 */

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { booksClient, COST_NANO, fixtureAnswer, nanoOf, writeBooksConfig } from '../helpers/books'
import { startRunners, type RunningProcess } from '../helpers/process'
import { PROCESS_STORES, requireServer, uniqueNamespace } from '../helpers/stores'
import { startUpstream, type Upstream } from '../helpers/upstream'

const OPERATOR_KEY = `operator-${uniqueNamespace('key')}`
const HIT_CHARGE_NANO = 3_000
const HITS = 30

type Output = Array<{ content?: Array<{ text?: string }> }>
/** The answer's words: a hit replays them under fresh ids. */
const textOf = (output: Output) => output.flatMap((item) => item.content ?? []).map((part) => part.text ?? '').join('')

describe.each(PROCESS_STORES)('the response cache across three gateway processes on one $name', (store) => {
  const namespace = uniqueNamespace('cache_mp')
  const client = booksClient(OPERATOR_KEY)
  let gateways: RunningProcess[] = []
  let upstream: Upstream
  let directory = ''

  beforeAll(async () => {
    await requireServer(store.port)
    upstream = await startUpstream(fixtureAnswer)
    directory = await mkdtemp(join(tmpdir(), 'modelgate-cache-mp-'))
    const config = await writeBooksConfig(directory, upstream.url, { responseCache: { hitCharge: HIT_CHARGE_NANO / 1e9 } })
    gateways = await startRunners(3, { ...store.env(namespace), MODELGATE_CONFIG: config, MODELGATE_LOG_LEVEL: 'warn', MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY })
  })

  afterAll(async () => {
    await Promise.all(gateways.map((gateway) => gateway.stop('SIGTERM')))
    await upstream?.close()
    await store.drop(namespace)
    if (directory) await rm(directory, { recursive: true, force: true })
  })

  it('serves one process’s answer as a hit on all three, charging each hit once', async () => {
    const { key, hash } = await client.createKey(gateways[0]!, 'cached')
    const ask = (index: number) =>
      fetch(`${gateways[index % 3]!.url}/api/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-modelgate-cache-ttl': '300' },
        body: JSON.stringify({ model: 'test/resp', input: 'Same question' }),
      })

    const first = await ask(0)
    expect(first.status).toBe(200)
    expect(first.headers.get('x-modelgate-cache')).toBe('miss')
    const text = textOf(((await first.json()) as { output: Output }).output)
    expect(text).not.toBe('')

    const hits = await Promise.all(
      Array.from({ length: HITS }, async (_, index) => {
        const response = await ask(index)
        const body = (await response.json()) as { usage: { cost: number }; output: Output }
        return { status: response.status, cache: response.headers.get('x-modelgate-cache'), costNano: nanoOf(body.usage.cost), text: textOf(body.output) }
      }),
    )
    for (const hit of hits) expect(hit).toEqual({ status: 200, cache: 'hit', costNano: HIT_CHARGE_NANO, text })
    expect(upstream.requests).toHaveLength(1)

    // Settled by whichever process served each: a read from any of them sees them all, each charged once.
    const expected = COST_NANO['test/resp'] + HITS * HIT_CHARGE_NANO
    await expect.poll(() => client.usageNano(gateways[1]!, hash)).toBe(expected)
    expect(await client.creditsUsageNano(gateways[2]!)).toBe(expected)
    await expect.poll(() => client.ledgerOfKey(gateways[0]!, hash)).toEqual({ requests: 1 + HITS, costNano: expected })
  })
})
