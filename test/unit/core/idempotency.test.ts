import { beforeEach, describe, expect, it } from 'vitest'
import { createGateway } from '../../../src/gateway/gateway'
import { silentLogger } from '../../../src/core/logger'
import { IDEMPOTENCY_KEYS, type IdempotencyRecord } from '../../../src/repositories/idempotency-keys'
import { memoryStorage } from '../../../src/storage/memory'
import { createTestGateway, readJson, type TestGateway } from '../../helpers/gateway'

describe('Idempotency-Key on POST /workspaces', () => {
  let t: TestGateway
  beforeEach(async () => {
    t = await createTestGateway()
  })
  const create = (key: string | undefined, json: unknown, apiKey?: string) =>
    t.call('POST', '/workspaces', { json, key: apiKey, headers: key === undefined ? {} : { 'idempotency-key': key } })

  it('replays the first response for the same key and body, creating one workspace', async () => {
    const first = await create('k-1', { name: 'Once', slug: 'once' })
    expect(first.status).toBe(201)
    const firstBody = await readJson(first)
    const second = await create('k-1', { name: 'Once', slug: 'once' })
    expect(second.status).toBe(201)
    expect(second.headers.get('idempotent-replayed')).toBe('true')
    expect(await readJson(second)).toEqual(firstBody)
    const list = await readJson(await t.call('GET', '/workspaces'))
    expect(list.data.filter((workspace: { slug: string }) => workspace.slug === 'once')).toHaveLength(1)
  })

  it('refuses the same key with a different body (409) and never creates a second workspace', async () => {
    await create('k-2', { name: 'A', slug: 'a' })
    const reused = await create('k-2', { name: 'B', slug: 'b' })
    expect(reused.status).toBe(409)
    expect(await readJson(reused)).toEqual({ error: { code: 409, message: 'This Idempotency-Key was already used with a different request' } })
    expect((await t.call('GET', '/workspaces/b')).status).toBe(404)
  })

  it('runs concurrent retries once', async () => {
    const responses = await Promise.all(Array.from({ length: 20 }, () => create('k-3', { name: 'Race', slug: 'race' })))
    const statuses = responses.map((response) => response.status)
    expect(statuses.filter((status) => status === 201).length).toBeGreaterThanOrEqual(1)
    expect(statuses.every((status) => status === 201 || status === 409)).toBe(true)
    const ids = new Set<string>()
    for (const response of responses) if (response.status === 201) ids.add((await readJson(response)).data.id)
    expect(ids.size).toBe(1)
    const list = await readJson(await t.call('GET', '/workspaces'))
    expect(list.data.filter((workspace: { slug: string }) => workspace.slug === 'race')).toHaveLength(1)
  })

  it('frees the key when the request failed, so a corrected retry can use it', async () => {
    const failed = await create('k-4', { name: 'Dup', slug: 'default' })
    expect(failed.status).toBe(409)
    const retried = await create('k-4', { name: 'Dup', slug: 'default' })
    expect(retried.status).toBe(409)
    expect(retried.headers.get('idempotent-replayed')).toBeNull()
  })

  it('scopes keys per account', async () => {
    await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
    const otherKey = (await t.gateway.admin.createKey({ accountId: 'other', kind: 'management' })).key
    expect((await create('shared', { name: 'Mine', slug: 'mine' })).status).toBe(201)
    const theirs = await create('shared', { name: 'Theirs', slug: 'theirs' }, otherKey)
    expect(theirs.status).toBe(201)
    expect(theirs.headers.get('idempotent-replayed')).toBeNull()
  })

  it('checks the key length: 1 to 255 characters', async () => {
    expect((await create('x'.repeat(255), { name: 'Edge', slug: 'edge' })).status).toBe(201)
    for (const key of ['', 'x'.repeat(256)]) {
      const response = await create(key, { name: 'Bad', slug: 'bad' })
      expect(response.status).toBe(400)
      expect(await readJson(response)).toEqual({ error: { code: 400, message: 'Idempotency-Key header must be 1 to 255 characters' } })
    }
  })

  it('answers 409 while the first request still holds the key, and takes over a key whose holder went silent', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z')
    const storage = memoryStorage()
    const gateway = createGateway({ storage, logger: silentLogger, now: () => new Date(clock) })
    const { key } = await gateway.admin.createKey({ kind: 'management' })
    const post = () =>
      gateway.fetch(
        new Request('http://gateway.test/api/v1/workspaces', {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'held' },
          body: JSON.stringify({ name: 'Held', slug: 'held' }),
        }),
      )
    expect((await post()).status).toBe(201)
    // Simulate a crashed holder: turn the completed record back into a pending one.
    const page = await storage.list<IdempotencyRecord>(IDEMPOTENCY_KEYS)
    const stored = page.items[0]!
    await storage.update(IDEMPOTENCY_KEYS, stored.id, stored.version, {
      id: stored.id,
      data: { ...stored.data, state: 'pending', response: null, lockedUntil: clock + 60_000 },
    })
    const busy = await post()
    expect(busy.status).toBe(409)
    expect(busy.headers.get('retry-after')).toBe('1')
    clock += 61_000
    // The takeover re-runs the handler; the slug is already taken, which is what a client then sees.
    const takeover = await post()
    expect(takeover.status).toBe(409)
    expect((await readJson(takeover)).error.message).toBe('Workspace slug "held" is already taken')
    // After the retention period, the key may be reused for a different request.
    clock += 25 * 60 * 60 * 1000
    const reused = await gateway.fetch(
      new Request('http://gateway.test/api/v1/workspaces', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'held' },
        body: JSON.stringify({ name: 'Other', slug: 'other' }),
      }),
    )
    expect(reused.status).toBe(201)
  })
})
