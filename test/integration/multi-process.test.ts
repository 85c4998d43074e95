/**
 * Several gateways, one state: three gateway processes (real HTTP servers, separate Node processes)
 * share one Redis, then one PostgreSQL, then one SQLite file, and take concurrent requests spread over all three.
 */

import { resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runToEnd, startListening, type RunningProcess } from '../helpers/process'
import { PROCESS_STORES, requireServer, uniqueNamespace } from '../helpers/stores'

const CLI = resolve(__dirname, '../../dist/cli.js')
const OPERATOR_KEY = `operator-${uniqueNamespace('key')}`
const RATE_LIMIT = 100

describe.each(PROCESS_STORES)('three gateway processes on one $name', (store) => {
  const namespace = uniqueNamespace('multi')
  let gateways: RunningProcess[] = []

  beforeAll(async () => {
    await requireServer(store.port)
    // All three start at once: the default account and the operator key are created by exactly one.
    const started = await Promise.allSettled(
      [0, 1, 2].map(() =>
        startListening('node', [CLI, 'serve'], {
          env: {
            ...store.env(namespace),
            MODELGATE_PORT: '0',
            MODELGATE_LOG_LEVEL: 'warn',
            MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY,
            MODELGATE_RATE_LIMIT_REQUESTS: String(RATE_LIMIT),
            MODELGATE_RATE_LIMIT_WINDOW_SECONDS: '3600',
          },
        }),
      ),
    )
    gateways = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
    // One failed start must not leave the others running after the suite.
    const failure = started.find((result) => result.status === 'rejected')
    if (failure) throw (failure as PromiseRejectedResult).reason
  })

  afterAll(async () => {
    await Promise.all(gateways.map((gateway) => gateway.stop('SIGTERM')))
    await store.drop(namespace)
  })

  /** Sends request `index` to gateway `index % 3`. */
  const send = (index: number, path: string, init: { key: string; method?: string; json?: unknown; headers?: Record<string, string> }) =>
    fetch(`${gateways[index % 3]!.url}/api/v1${path}`, {
      method: init.method ?? 'GET',
      headers: {
        authorization: `Bearer ${init.key}`,
        ...(init.json === undefined ? {} : { 'content-type': 'application/json' }),
        ...init.headers,
      },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    })

  const newManagementKey = async () => {
    const response = await send(0, '/keys', { key: OPERATOR_KEY, method: 'POST', json: { name: 'worker', kind: 'management' } })
    expect(response.status).toBe(201)
    return ((await response.json()) as { key: string }).key
  }

  const listSlugs = async (key: string) => {
    const response = await send(1, '/workspaces?limit=100', { key })
    expect(response.status).toBe(200)
    const body = (await response.json()) as { data: Array<{ slug: string; id: string }>; total_count: number }
    return body
  }

  it('started one default account with one operator key', async () => {
    const responses = await Promise.all([0, 1, 2].map((index) => send(index, '/keys?include_disabled=true', { key: OPERATOR_KEY })))
    for (const response of responses) expect(response.status).toBe(200)
    const bodies = (await Promise.all(responses.map((response) => response.json()))) as Array<{ data: Array<{ name: string }> }>
    for (const body of bodies) {
      expect(body.data.filter((key) => key.name === 'MODELGATE_MANAGEMENT_KEY')).toHaveLength(1)
    }
    const workspaces = await listSlugs(OPERATOR_KEY)
    expect(workspaces.data.filter((workspace) => workspace.slug === 'default')).toHaveLength(1)
  })

  it('creating the same unique name from all three yields exactly one winner', async () => {
    const key = await newManagementKey()
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        send(index, '/workspaces', { key, method: 'POST', json: { name: `Contender ${index}`, slug: 'contested' } }),
      ),
    )
    const statuses = responses.map((response) => response.status).sort()
    expect(statuses.filter((status) => status === 201)).toHaveLength(1)
    expect(statuses.filter((status) => status === 409)).toHaveLength(29)
    const { data } = await listSlugs(key)
    expect(data.filter((workspace) => workspace.slug === 'contested')).toHaveLength(1)
  })

  it('the same idempotency key yields one record', async () => {
    const key = await newManagementKey()
    const request = (index: number) =>
      send(index, '/workspaces', { key, method: 'POST', json: { name: 'Idempotent', slug: 'idempotent' }, headers: { 'idempotency-key': 'one-record' } })
    const responses = await Promise.all(Array.from({ length: 30 }, (_, index) => request(index)))
    const created = new Set<string>()
    for (const response of responses) {
      expect([201, 409]).toContain(response.status)
      const body = (await response.json()) as { data?: { id: string }; error?: { message: string } }
      if (response.status === 201) created.add(body.data!.id)
      // Losers of the race are told the key is busy, never that the slug is taken.
      else expect(body.error!.message).toContain('Idempotency-Key')
    }
    expect(created.size).toBe(1)
    // Once settled, every gateway replays the same record.
    const replays = await Promise.all([0, 1, 2].map((index) => request(index)))
    for (const replay of replays) {
      expect(replay.status).toBe(201)
      expect(replay.headers.get('idempotent-replayed')).toBe('true')
      expect(((await replay.json()) as { data: { id: string } }).data.id).toBe([...created][0])
    }
    const { data } = await listSlugs(key)
    expect(data.filter((workspace) => workspace.slug === 'idempotent')).toHaveLength(1)
  })

  it('counters add up exactly: a shared rate limit admits exactly its budget', async () => {
    const key = await newManagementKey()
    const total = RATE_LIMIT + 50
    const responses = await Promise.all(Array.from({ length: total }, (_, index) => send(index, '/workspaces/default', { key })))
    const statuses = responses.map((response) => response.status)
    expect(statuses.filter((status) => status === 200)).toHaveLength(RATE_LIMIT)
    expect(statuses.filter((status) => status === 429)).toHaveLength(total - RATE_LIMIT)
    await Promise.all(responses.map((response) => response.arrayBuffer()))
  })

  it('concurrent intern creates with one idempotency key make one intern and one vault', async () => {
    const flagged = await runToEnd('node', [CLI, 'accounts', 'flags', '--interns'], { env: store.env(namespace) })
    expect(flagged.code, flagged.stderr).toBe(0)
    const body = { name: 'racer', description: 'one of thirty' }
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        send(index, '/interns', { key: OPERATOR_KEY, method: 'POST', json: body, headers: { 'idempotency-key': 'race-1' } }),
      ),
    )
    const statuses = responses.map((response) => response.status)
    expect(statuses.filter((status) => status === 201)).toHaveLength(1)
    expect(statuses.filter((status) => status === 200)).toHaveLength(29)
    const interns = (await Promise.all(responses.map((response) => response.json()))) as Array<{ id: string; vault_id: string }>
    expect(new Set(interns.map((intern) => intern.id)).size).toBe(1)
    // Every answer names the same vault once the create completed (a racer may answer before the link).
    const settled = (await (await send(0, `/interns/${interns[0]!.id}`, { key: OPERATOR_KEY })).json()) as { vault_id: string }
    for (const intern of interns) if (intern.vault_id) expect(intern.vault_id).toBe(settled.vault_id)
    const list = (await (await send(1, '/interns', { key: OPERATOR_KEY })).json()) as { data: Array<{ name: string }> }
    expect(list.data.filter((intern) => intern.name === 'racer')).toHaveLength(1)
  })

  it('concurrent intern creates of one name from all three yield exactly one winner', async () => {
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        send(index, '/interns', { key: OPERATOR_KEY, method: 'POST', json: { name: 'unique-one', description: `attempt ${index}` } }),
      ),
    )
    const statuses = responses.map((response) => response.status)
    expect(statuses.filter((status) => status === 201)).toHaveLength(1)
    expect(statuses.filter((status) => status === 409)).toHaveLength(29)
    for (const response of responses) {
      if (response.status !== 409) continue
      expect(((await response.json()) as { error: { metadata: { reason: string } } }).error.metadata.reason).toBe('name_taken')
    }
  })

  it('nothing is lost or duplicated under concurrent distinct writes', async () => {
    const key = await newManagementKey()
    const slugs = Array.from({ length: 40 }, (_, index) => `bulk-${index}`)
    const responses = await Promise.all(
      slugs.map((slug, index) => send(index, '/workspaces', { key, method: 'POST', json: { name: slug, slug } })),
    )
    for (const response of responses) expect(response.status).toBe(201)
    const { data } = await listSlugs(key)
    const bulk = data.filter((workspace) => workspace.slug.startsWith('bulk-')).map((workspace) => workspace.slug)
    expect(bulk.sort()).toEqual([...slugs].sort())
    expect(new Set(data.map((workspace) => workspace.id)).size).toBe(data.length)
  })
})
