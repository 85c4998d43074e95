import { describe, expect, it } from 'vitest'
import { createGateway } from '../../../src/gateway/gateway'
import { silentLogger } from '../../../src/core/logger'
import { createSecretBox, generateMasterKey } from '../../../src/core/secrets'
import { BYOK_CREDENTIALS, type ByokRecord } from '../../../src/repositories/byok-credentials'
import { memoryStorage } from '../../../src/storage/memory'
import { BASE, TEST_ENCRYPTION_KEY, createTestGateway } from '../../helpers/gateway'

describe('gateway.admin.mintFirstManagementKey', () => {
  it('mints exactly one key when many processes start together on an empty store', async () => {
    const storage = memoryStorage()
    const gateways = Array.from({ length: 20 }, () => createGateway({ storage, logger: silentLogger }))
    const results = await Promise.all(gateways.map((gateway) => gateway.admin.mintFirstManagementKey()))
    const minted = results.filter((result) => result !== null)
    expect(minted).toHaveLength(1)
    expect(minted[0]!.key).toMatch(/^mg-v1-[0-9a-f]{64}$/)
    expect(minted[0]!.record).toMatchObject({ kind: 'management', name: 'First management key', disabled: false })
    // The key works, and a later start mints nothing.
    const response = await gateways[0]!.fetch(new Request(`${BASE}/keys`, { headers: { authorization: `Bearer ${minted[0]!.key}` } }))
    expect(response.status).toBe(200)
    expect(await gateways[1]!.admin.mintFirstManagementKey()).toBeNull()
  })

  it('mints nothing when the account already has a management key, even a disabled one', async () => {
    const t = await createTestGateway()
    expect(await t.gateway.admin.mintFirstManagementKey()).toBeNull()
    const storage = memoryStorage()
    const gateway = createGateway({ storage, logger: silentLogger })
    const { record } = await gateway.admin.createKey({ kind: 'management' })
    await gateway.admin.revokeKey(undefined, record.hash)
    expect(await gateway.admin.mintFirstManagementKey()).toBeNull()
  })
})

describe('gateway.admin.listKeys and revokeKey', () => {
  it('lists keys without raw values, and revokes one by a hash prefix: it stops working at once', async () => {
    const t = await createTestGateway()
    const { keys, totalCount } = await t.gateway.admin.listKeys(undefined)
    expect(totalCount).toBe(2)
    expect(JSON.stringify(keys)).not.toContain(t.regularKey)
    const regular = keys.find((key) => key.kind === 'regular')!
    const revoked = await t.gateway.admin.revokeKey(undefined, regular.hash.slice(0, 12).toUpperCase())
    expect(revoked).toMatchObject({ hash: regular.hash, disabled: true })
    expect((await t.call('GET', '/workspaces/default', { key: t.regularKey })).status).toBe(401)
    expect((await t.gateway.admin.listKeys(undefined)).totalCount).toBe(1)
    expect((await t.gateway.admin.listKeys(undefined, { includeDisabled: true })).totalCount).toBe(2)
  })

  it('may revoke the last management key (the way out when it leaked)', async () => {
    const t = await createTestGateway()
    const management = (await t.gateway.admin.listKeys(undefined)).keys.find((key) => key.kind === 'management')!
    expect((await t.gateway.admin.revokeKey(undefined, management.hash)).disabled).toBe(true)
    expect((await t.call('GET', '/keys')).status).toBe(401)
  })

  it('refuses a short, non-hex, unknown or ambiguous prefix with a clear error', async () => {
    const t = await createTestGateway()
    await expect(t.gateway.admin.revokeKey(undefined, 'abc')).rejects.toThrow('A key is named by its hash or a prefix of it: 8 to 64 hex characters')
    await expect(t.gateway.admin.revokeKey(undefined, 'mg-v1-0123456789')).rejects.toThrow('8 to 64 hex characters')
    const hashes = (await t.gateway.admin.listKeys(undefined)).keys.map((key) => key.hash)
    const unused = ['0', '1', '2', '3'].map((digit) => digit.repeat(8)).find((prefix) => !hashes.some((hash) => hash.startsWith(prefix)))!
    await expect(t.gateway.admin.revokeKey(undefined, unused)).rejects.toThrow(`No key of account "default" has a hash starting with ${unused}`)
    // Another account's key reads as absent, even by its full hash.
    const { account } = await t.gateway.admin.createAccount({ slug: 'other', name: 'Other' })
    await expect(t.gateway.admin.revokeKey(account.slug, hashes[0]!)).rejects.toThrow('No key of account "other"')
  })
})

describe('gateway.admin.auditSecrets', () => {
  const sealWithKey = async (encryptionKeys: string[]) => {
    const storage = memoryStorage()
    const t = await createTestGateway({ storage, encryptionKeys: [TEST_ENCRYPTION_KEY] })
    for (const key of ['sk-proj-aaaaaaaaaaaaaaaaaaaaaaaa', 'sk-proj-bbbbbbbbbbbbbbbbbbbbbbbb']) {
      expect((await t.call('POST', '/byok', { json: { provider: 'openai', key } })).status).toBe(200)
    }
    return { storage, other: createGateway({ storage, logger: silentLogger, encryptionKeys }) }
  }

  it('finds nothing missing when the configured keys opened everything', async () => {
    const { other } = await sealWithKey([generateMasterKey(), TEST_ENCRYPTION_KEY])
    const audit = await other.admin.auditSecrets()
    expect(audit).toMatchObject({ total: 2, missing: [], unreadable: [] })
    expect(audit.configuredKeyIds).toHaveLength(2)
  })

  it('names the key id in use that is not configured, with how many credentials need it', async () => {
    const kid = await createSecretBox([TEST_ENCRYPTION_KEY]).primaryKeyId()
    const { other } = await sealWithKey([generateMasterKey()])
    expect(await other.admin.auditSecrets()).toMatchObject({ total: 2, missing: [{ keyId: kid, count: 2 }], unreadable: [] })
    const { other: keyless } = await sealWithKey([])
    expect(await keyless.admin.auditSecrets()).toEqual({ total: 2, configuredKeyIds: [], missing: [{ keyId: kid, count: 2 }], unreadable: [] })
  })

  it('reports a credential that fails to open with a configured key', async () => {
    const { storage, other } = await sealWithKey([TEST_ENCRYPTION_KEY])
    const [first] = (await storage.list<ByokRecord>(BYOK_CREDENTIALS)).items
    const moved = { ...first!.data, workspaceId: '00000000-0000-4000-8000-000000000000' }
    await storage.update(BYOK_CREDENTIALS, first!.id, first!.version, { id: first!.id, data: moved, indexes: first!.indexes, sortKey: first!.sortKey })
    const audit = await other.admin.auditSecrets()
    expect(audit.missing).toEqual([])
    expect(audit.unreadable).toEqual([first!.id])
  })
})

describe('configured models', () => {
  it('refuses at creation a model entry whose endpoint names an unknown provider', () => {
    const models = [
      { slug: 'acme/large', name: 'Acme Large', endpoints: [{ provider: 'acme-cloud', model: 'large', contextLength: 8192, pricing: { prompt: 0, completion: 0 } }] },
    ]
    expect(() => createGateway({ logger: false, models })).toThrow(
      'modelgate: model "acme/large" names provider "acme-cloud", which is neither built in nor configured in providers',
    )
    // Configured (or built in), it is accepted.
    expect(() =>
      createGateway({ logger: false, models, providers: { 'acme-cloud': { api: 'openai-chat', baseURL: 'http://127.0.0.1:9/v1', isKeyless: true } } }),
    ).not.toThrow()
  })
})


describe('gateway.admin workspaces and the response cache', () => {
  it('takes a workspace`s cache setting in its record form, and clears it with null', async () => {
    const gateway = createGateway({ storage: memoryStorage(), logger: silentLogger })
    const workspace = await gateway.admin.createWorkspace(undefined, { name: 'Cached', slug: 'cached', cache: { ttlSeconds: 120 } })
    expect(workspace.cache).toEqual({ ttlSeconds: 120 })
    const cleared = await gateway.admin.updateWorkspace(undefined, workspace.id, { cache: null })
    expect(cleared.cache).toBeNull()
    await gateway.close()
  })

  it('refuses the semantic cache, naming it, where the gateway names no embedding model for it, as the HTTP routes do', async () => {
    const gateway = createGateway({ storage: memoryStorage(), logger: silentLogger })
    const refusal = /^input\.cache\.semantic: this gateway names no embedding model/
    await expect(gateway.admin.createWorkspace(undefined, { name: 'Near', slug: 'near', cache: { ttlSeconds: 60, semantic: true } })).rejects.toThrow(refusal)
    const workspace = await gateway.admin.createWorkspace(undefined, { name: 'Exact', slug: 'exact', cache: { ttlSeconds: 60 } })
    await expect(gateway.admin.updateWorkspace(undefined, workspace.id, { cache: { ttlSeconds: 60, semantic: true } })).rejects.toThrow(refusal)
    expect((await gateway.admin.getWorkspace(undefined, workspace.id)).cache).toEqual({ ttlSeconds: 60 })
    await gateway.close()
  })
})
