import { afterEach, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../../src/core/crypto'
import { StorageUnavailableError } from '../../../src/core/errors'
import { AUDIT_LOG } from '../../../src/repositories/audit-log'
import type { StorageDriver } from '../../../src/storage/contract'
import { memoryStorage } from '../../../src/storage/memory'
import { createTestGateway, scriptedProvider, type TestGateway } from '../../../src/testing'
import { TEST_ENCRYPTION_KEY, readJson } from '../../helpers/gateway'
import { createRecordingLogger, type RecordingLogger } from '../../helpers/logger'

type Entry = {
  id: string
  created_at: string
  actor: { key_prefix: string | null; kind: string }
  action: string
  target: { type: string; id: string }
  account_id: string | null
  workspace_id: string | null
  changes: Record<string, unknown>
  request_id: string | null
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const ENTRY_FIELDS = ['account_id', 'action', 'actor', 'changes', 'created_at', 'id', 'request_id', 'target', 'workspace_id']

let t: TestGateway | undefined
let logs: RecordingLogger
/** The gateway's clock: each read moves it one second on, so entries have distinct, known times. */
let clock: number

afterEach(async () => {
  await t?.close()
  t = undefined
})

const start = async (options: { storage?: StorageDriver; retentionDays?: number } = {}) => {
  logs = createRecordingLogger()
  clock = Date.parse('2026-12-01T00:00:00.000Z')
  t = await createTestGateway({
    logger: logs.logger,
    providers: { alpha: scriptedProvider({ reply: 'Hello' }) },
    encryptionKeys: [TEST_ENCRYPTION_KEY],
    now: () => new Date((clock += 1000)),
    auditLog: { sweepIntervalMs: false, ...(options.retentionDays === undefined ? {} : { retentionDays: options.retentionDays }) },
    ...(options.storage ? { storage: options.storage } : {}),
  })
  return t
}

const list = async (gateway: TestGateway, query = '', key?: string): Promise<{ data: Entry[]; has_more: boolean; next_cursor?: string }> => {
  const response = await gateway.call('GET', `/audit-log${query}`, key === undefined ? {} : { key })
  expect(response.status, JSON.stringify(await response.clone().json())).toBe(200)
  return readJson(response)
}

/** The newest entry of `action`. */
const latest = async (gateway: TestGateway, action: string): Promise<Entry> => {
  const page = await list(gateway, `?action=${action}&limit=1`)
  expect(page.data, `no ${action} entry`).toHaveLength(1)
  return page.data[0]!
}

/** Everything the store holds of the audit log, as its stored JSON. */
const storedText = async (gateway: TestGateway) => JSON.stringify((await gateway.gateway.storage.list(AUDIT_LOG)).items)

const prefixOf = async (rawKey: string) => (await sha256Hex(rawKey)).slice(0, 8)

const expectOk = async (response: Response, status = 200) => {
  const body = await response.clone().text()
  expect(response.status, body).toBe(status)
  return readJson(response)
}

describe('audit entries of key changes', () => {
  it('records a key created over HTTP: the acting key by prefix and kind, the new key by prefix, its settings, never the raw key or its hash', async () => {
    const g = await start()
    const created = await expectOk(await g.call('POST', '/keys', { json: { name: 'ci', limit: 5, limit_reset: 'monthly' }, headers: { 'x-request-id': 'req-create-1' } }), 201)
    const entry = await latest(g, 'key.create')
    expect(Object.keys(entry).sort()).toEqual(ENTRY_FIELDS)
    expect(entry).toMatchObject({
      actor: { key_prefix: await prefixOf(g.managementKey), kind: 'management' },
      action: 'key.create',
      target: { type: 'key', id: created.data.hash.slice(0, 8) },
      account_id: g.accountId,
      workspace_id: g.defaultWorkspaceId,
      changes: { name: 'ci', kind: 'regular', limit: 5, limit_reset: 'monthly', workspace_id: g.defaultWorkspaceId },
      request_id: 'req-create-1',
    })
    expect(entry.created_at).toMatch(ISO)
    const stored = await storedText(g)
    expect(stored).toContain('"key.create"')
    expect(stored).not.toContain(created.key)
    expect(stored).not.toContain(created.data.hash)
    expect(stored).not.toContain(await sha256Hex(g.managementKey))
    expect(logs.text()).not.toContain(created.key)
  })

  it('records updates and deletes, and is logged at info with the same fields', async () => {
    const g = await start()
    const created = await expectOk(await g.call('POST', '/keys', { json: { name: 'ci' } }), 201)
    const hash = created.data.hash as string
    await expectOk(await g.call('PATCH', `/keys/${hash}`, { json: { disabled: true, name: 'ci-old' } }))
    expect(await latest(g, 'key.update')).toMatchObject({ target: { type: 'key', id: hash.slice(0, 8) }, changes: { disabled: true, name: 'ci-old' } })
    await expectOk(await g.call('DELETE', `/keys/${hash}`))
    const deleted = await latest(g, 'key.delete')
    expect(deleted).toMatchObject({ target: { type: 'key', id: hash.slice(0, 8) }, changes: { kind: 'regular', name: 'ci-old' } })
    const line = logs.entries.find((each) => each.level === 'info' && each.message === 'audit' && (each.fields as Entry).id === deleted.id)
    expect(line?.fields).toEqual(deleted)
  })

  it('records nothing for a change refused (404, 400, 409)', async () => {
    const g = await start()
    const before = (await g.gateway.storage.list(AUDIT_LOG)).totalCount
    expect((await g.call('PATCH', `/keys/${'a'.repeat(64)}`, { json: { name: 'x' } })).status).toBe(404)
    expect((await g.call('POST', '/keys', { json: { name: '' } })).status).toBe(400)
    const managementHash = await sha256Hex(g.managementKey)
    expect((await g.call('DELETE', `/keys/${managementHash}`)).status).toBe(409)
    expect((await g.gateway.storage.list(AUDIT_LOG)).totalCount).toBe(before)
  })

  it("records the operator's changes through gateway.admin with the operator as actor and no request id", async () => {
    const g = await start()
    const { key, record } = await g.gateway.admin.createKey({ name: 'from-admin' })
    await g.gateway.admin.revokeKey(undefined, record.hash)
    await g.gateway.admin.grantCredits(undefined, { amount: 25, note: 'December' })
    expect(await latest(g, 'key.revoke')).toMatchObject({ actor: { key_prefix: null, kind: 'operator' }, target: { type: 'key', id: record.hash.slice(0, 8) }, request_id: null })
    expect(await latest(g, 'credits.grant')).toMatchObject({
      actor: { key_prefix: null, kind: 'operator' },
      target: { type: 'credit_grant', id: `${g.accountId}:1` },
      changes: { amount: 25, note: 'December' },
    })
    expect(await storedText(g)).not.toContain(key)
  })
})

describe('audit entries of BYOK changes', () => {
  it('records a credential created and its key replaced as "[redacted]": neither the store nor the log holds the provider key', async () => {
    const g = await start()
    const providerKey = `sk-proj-${crypto.randomUUID().replaceAll('-', '')}AUDITSECRET`
    const replacement = `sk-proj-${crypto.randomUUID().replaceAll('-', '')}ROTATEDSECRET`
    const regularHash = g.regularKeyHash
    const created = await expectOk(await g.call('POST', '/byok', { json: { key: providerKey, provider: 'openai', name: 'team', allowed_api_key_hashes: [regularHash] } }))
    expect(await latest(g, 'byok.create')).toMatchObject({
      target: { type: 'byok_credential', id: created.data.id },
      workspace_id: g.defaultWorkspaceId,
      changes: { key: '[redacted]', provider: 'openai', name: 'team', allowed_api_key_hashes: [regularHash.slice(0, 8)] },
    })
    await expectOk(await g.call('PATCH', `/byok/${created.data.id}`, { json: { key: replacement, disabled: true } }))
    expect((await latest(g, 'byok.update')).changes).toEqual({ key: '[redacted]', disabled: true })
    await expectOk(await g.call('DELETE', `/byok/${created.data.id}`))
    expect((await latest(g, 'byok.delete')).changes).toEqual({ provider: 'openai', name: 'team' })
    const stored = await storedText(g)
    for (const secret of [providerKey, replacement, 'AUDITSECRET', 'ROTATEDSECRET', regularHash]) {
      expect(stored).not.toContain(secret)
      expect(logs.text()).not.toContain(secret)
    }
  })
})

describe('audit entries of workspaces, budgets, guardrails, presets and interns', () => {
  it('records each family with its target', async () => {
    const g = await start()
    const workspace = (await expectOk(await g.call('POST', '/workspaces', { json: { name: 'Lab', slug: 'lab' } }), 201)).data
    await expectOk(await g.call('PATCH', `/workspaces/${workspace.id}`, { json: { description: 'experiments' } }))
    await expectOk(await g.call('PUT', `/workspaces/${workspace.id}/budgets/monthly`, { json: { limit_usd: 40 } }))
    await expectOk(await g.call('DELETE', `/workspaces/${workspace.id}/budgets/monthly`))
    const guardrail = (await expectOk(await g.call('POST', '/guardrails', { json: { name: 'strict', limit_usd: 3, reset_interval: 'monthly' } }), 201)).data
    await expectOk(await g.call('PATCH', `/guardrails/${guardrail.id}`, { json: { limit_usd: 4, reset_interval: 'monthly' } }))
    await expectOk(await g.call('POST', `/guardrails/${guardrail.id}/assignments/keys`, { json: { key_hashes: [g.regularKeyHash] } }))
    await expectOk(await g.call('POST', `/guardrails/${guardrail.id}/assignments/keys/remove`, { json: { key_hashes: [g.regularKeyHash] } }))
    await expectOk(await g.call('DELETE', `/guardrails/${guardrail.id}`))
    await expectOk(await g.call('POST', '/presets/support/responses', { key: g.regularKey, json: { model: 'test/model', input: 'Hi', instructions: 'Be brief.' } }))
    await expectOk(await g.call('DELETE', `/workspaces/${workspace.id}`))
    await g.gateway.admin.setAccountFlags(undefined, { interns: true })
    const intern = await expectOk(await g.call('POST', '/interns', { json: { name: 'ada' } }), 201)

    expect(await latest(g, 'workspace.create')).toMatchObject({ target: { type: 'workspace', id: workspace.id }, changes: { name: 'Lab', slug: 'lab' } })
    expect(await latest(g, 'workspace.update')).toMatchObject({ target: { type: 'workspace', id: workspace.id }, changes: { description: 'experiments' } })
    expect(await latest(g, 'workspace_budget.set')).toMatchObject({ workspace_id: workspace.id, target: { type: 'workspace_budget' }, changes: { interval: 'monthly', limit_usd: 40 } })
    expect(await latest(g, 'workspace_budget.delete')).toMatchObject({ workspace_id: workspace.id, changes: { interval: 'monthly' } })
    expect(await latest(g, 'guardrail.create')).toMatchObject({ target: { type: 'guardrail', id: guardrail.id }, changes: { name: 'strict', limit_usd: 3 } })
    expect(await latest(g, 'guardrail.update')).toMatchObject({ changes: { limit_usd: 4 } })
    expect(await latest(g, 'guardrail.assign_keys')).toMatchObject({ changes: { key_hashes: [g.regularKeyHash.slice(0, 8)], assigned_count: 1 } })
    expect(await latest(g, 'guardrail.unassign_keys')).toMatchObject({ changes: { key_hashes: [g.regularKeyHash.slice(0, 8)], unassigned_count: 1 } })
    expect(await latest(g, 'guardrail.delete')).toMatchObject({ target: { type: 'guardrail', id: guardrail.id } })
    expect(await latest(g, 'preset.save')).toMatchObject({
      actor: { key_prefix: await prefixOf(g.regularKey), kind: 'regular' },
      target: { type: 'preset' },
      changes: { slug: 'support', version: 1, config: { model: 'test/model' }, system_prompt: 'Be brief.' },
    })
    expect(await latest(g, 'workspace.delete')).toMatchObject({ target: { type: 'workspace', id: workspace.id } })
    expect(await latest(g, 'account.update_flags')).toMatchObject({ actor: { kind: 'operator' }, changes: { interns: true } })
    expect(await latest(g, 'intern.create')).toMatchObject({ target: { type: 'intern', id: intern.id }, changes: { name: 'ada' } })
    expect(await storedText(g)).not.toContain(g.regularKeyHash)
  })
})

describe('GET /audit-log', () => {
  /** Creates `count` keys named k0, k1, …, one gateway second apart. */
  const createKeys = async (g: TestGateway, count: number) => {
    for (let index = 0; index < count; index++) await expectOk(await g.call('POST', '/keys', { json: { name: `k${index}` } }), 201)
  }

  it('lists newest first in pages joined by next_cursor, with no repeat and no gap, even when entries arrive between pages', async () => {
    const g = await start()
    await createKeys(g, 7)
    const first = await list(g, '?action=key.create&actor=' + (await prefixOf(g.managementKey)) + '&limit=3')
    expect(first.data.map((entry) => entry.changes.name)).toEqual(['k6', 'k5', 'k4'])
    expect(first.has_more).toBe(true)
    // A newer entry lands between two pages: it neither shifts the next page nor appears in it.
    await createKeys(g, 1)
    const second = await list(g, `?action=key.create&actor=${await prefixOf(g.managementKey)}&limit=3&cursor=${first.next_cursor}`)
    expect(second.data.map((entry) => entry.changes.name)).toEqual(['k3', 'k2', 'k1'])
    const third = await list(g, `?action=key.create&actor=${await prefixOf(g.managementKey)}&limit=3&cursor=${second.next_cursor}`)
    expect(third.data.map((entry) => entry.changes.name)).toEqual(['k0'])
    expect(third.has_more).toBe(false)
    expect(third).not.toHaveProperty('next_cursor')
  })

  it('filters by action, target, actor and time, combined', async () => {
    const g = await start()
    const created = await expectOk(await g.call('POST', '/keys', { json: { name: 'target' } }), 201)
    const createdAt = (await latest(g, 'key.create')).created_at
    await expectOk(await g.call('PATCH', `/keys/${created.data.hash}`, { json: { name: 'renamed' } }))
    await createKeys(g, 2)
    const prefix = created.data.hash.slice(0, 8)
    const forKey = await list(g, `?target_type=key&target_id=${prefix}`)
    expect(forKey.data.map((entry) => entry.action)).toEqual(['key.update', 'key.create'])
    // A whole hash means the same key, as the actor's does.
    expect(await list(g, `?target_type=key&target_id=${created.data.hash}`)).toEqual(forKey)
    const byWholeHash = await list(g, `?actor=${await sha256Hex(g.managementKey)}&action=key.create&limit=1`)
    expect(byWholeHash.data[0]?.changes.name).toBe('k1')
    expect((await list(g, `?actor=operator&action=key.create`)).data.map((entry) => entry.changes.name)).toEqual(['test regular', 'test management'])
    const since = await list(g, `?from=${encodeURIComponent(createdAt)}&action=key.create`)
    expect(since.data.map((entry) => entry.changes.name)).toEqual(['k1', 'k0', 'target'])
    const until = await list(g, `?to=${encodeURIComponent(createdAt)}&action=key.create&actor=${await prefixOf(g.managementKey)}`)
    expect(until.data.map((entry) => entry.changes.name)).toEqual(['target'])
    const window = await list(g, `?from=${encodeURIComponent(createdAt)}&to=${encodeURIComponent(createdAt)}`)
    expect(window.data.map((entry) => entry.action)).toEqual(['key.create'])
    // A time with an offset means the same instant.
    const offset = createdAt.replace('T00:', 'T01:').replace('Z', '+01:00')
    expect((await list(g, `?from=${encodeURIComponent(offset)}&to=${encodeURIComponent(offset)}`)).data).toHaveLength(1)
  })

  it('shows one account its own entries only', async () => {
    const g = await start()
    const other = await g.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
    const otherKey = await g.gateway.admin.createKey({ accountId: other.account.id, kind: 'management', name: 'other ops' })
    await expectOk(await g.call('POST', '/keys', { key: otherKey.key, json: { name: 'theirs' } }), 201)
    const mine = await list(g, '?action=key.create')
    expect(mine.data.map((entry) => entry.changes.name)).not.toContain('theirs')
    expect((await list(g, '?action=key.create', otherKey.key)).data.map((entry) => entry.changes.name)).toEqual(['theirs', 'other ops'])
  })

  it('answers 403 to a regular key and 400 naming a bad field', async () => {
    const g = await start()
    expect((await g.call('GET', '/audit-log', { key: g.regularKey })).status).toBe(403)
    const cases: Array<[string, string]> = [
      ['?action=key.explode', 'query.action: must be one of'],
      ['?target_type=planet', 'query.target_type: must be one of'],
      ['?actor=ABCDEF12', 'query.actor: must be a key hash or its first 8 characters'],
      ['?limit=0', 'query.limit:'],
      ['?limit=101', 'query.limit:'],
      ['?from=yesterday', 'query.from: must be an ISO 8601 date-time'],
      ['?from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z', 'query.to: must not be before query.from'],
      ['?cursor=bm9zZXBhcmF0b3I', 'query.cursor: must be a cursor from next_cursor'],
      ['?cursor=a%2Bb', 'query.cursor: must be a cursor from next_cursor'],
      ['?bogus=1', 'query.bogus: unknown field'],
    ]
    for (const [query, message] of cases) {
      const response = await g.call('GET', `/audit-log${query}`)
      expect(response.status, query).toBe(400)
      expect((await readJson(response)).error.message, query).toContain(message)
    }
  })
})

describe('when the audit write fails', () => {
  it('keeps the change and answers it, and logs the whole entry at error', async () => {
    const inner = memoryStorage()
    let isAuditDown = false
    const storage: StorageDriver = new Proxy(inner, {
      get(target, property, receiver) {
        if (property === 'create') {
          return (collection: string, input: never) =>
            isAuditDown && collection === AUDIT_LOG ? Promise.reject(new StorageUnavailableError('Storage is unavailable')) : target.create(collection, input)
        }
        return Reflect.get(target, property, receiver) as unknown
      },
    })
    const g = await start({ storage })
    isAuditDown = true
    const created = await expectOk(await g.call('POST', '/keys', { json: { name: 'kept' } }), 201)
    expect((await g.call('GET', `/keys/${created.data.hash}`)).status).toBe(200)
    const failure = logs.entries.find((each) => each.level === 'error' && each.message === 'audit entry not stored; the change it records stands')
    expect(failure?.fields?.entry).toMatchObject({ action: 'key.create', target: { type: 'key', id: created.data.hash.slice(0, 8) } })
    expect(logs.text()).not.toContain(created.key)
  })
})

describe('retention', () => {
  it('sweeps entries older than retentionDays and keeps the rest', async () => {
    const g = await start({ retentionDays: 1 })
    await expectOk(await g.call('POST', '/keys', { json: { name: 'old' } }), 201)
    clock += 2 * 86_400_000
    await expectOk(await g.call('POST', '/keys', { json: { name: 'new' } }), 201)
    const deleted = await g.gateway.admin.sweepAuditLog()
    expect(deleted).toBe(3) // the two test keys' entries, and `old`'s
    expect((await list(g)).data.map((entry) => entry.changes.name)).toEqual(['new'])
  })
})
