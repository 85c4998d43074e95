/**
 * Spend counters and limits over a given driver, through the real routes: parallel requests against one
 * key's limit never push its settled usage past the limit, and the usage is exactly the sum of what the
 * served requests cost; parallel credit grants each land once. Run by `describeStorageContract`, so
 * every driver (memory, file, Redis, PostgreSQL, MariaDB, unstorage) runs it.
 */
import { describe, expect, it } from 'vitest'
import { createGateway } from '../../src/gateway/gateway'
import type { StorageDriver } from '../../src/storage/contract'
import { scriptedProvider, TEST_MODEL, withScriptedProviders } from '../../src/testing'
import { callAs, TEST_ENCRYPTION_KEY } from '../helpers/gateway'

const REQUESTS = 24
// $0.00002 a request (10 tokens in at $1/M, 5 out at $2/M); each reserves $0.000026 (see test/unit/inference/spend-limits.test.ts).
const COST_NANO = 20_000
const LIMIT_NANO = 150_000

export function describeSpendLimits(getDriver: () => StorageDriver): void {
  describe('spend limits through the routes', () => {
    // The store may hold the default account from earlier cases, with another default model: each request names its own.
    const open = (options: { isByokOnly?: boolean } = {}) => {
      const provider = scriptedProvider({
        reply: [{ type: 'text', text: 'ok' }, { type: 'usage', inputTokens: 10, outputTokens: 5 }],
        ...(options.isByokOnly ? { apiKey: null } : {}),
      })
      // The driver is the suite's: it closes it. No sweep: this gateway only serves these requests.
      const gateway = createGateway(
        withScriptedProviders({
          storage: getDriver(),
          logger: false,
          encryptionKeys: [TEST_ENCRYPTION_KEY],
          internProvisioning: { sweepIntervalMs: false },
          providers: { alpha: provider },
        }),
      )
      return { gateway, provider }
    }

    it(`keeps ${REQUESTS} parallel requests under one key's limit and settles usage to the sum of their costs`, async () => {
      const { gateway, provider } = open()
      const { key: management } = await gateway.admin.createKey({ kind: 'management', name: 'spender admin' })
      const { key, record } = await gateway.admin.createKey({ name: 'spender', limit: LIMIT_NANO / 1e9 })
      const responses = await Promise.all(Array.from({ length: REQUESTS }, () => callAs(gateway, key)('POST', '/responses', { model: TEST_MODEL, input: 'Hi', max_output_tokens: 10 })))
      const statuses = responses.map((response) => response.status)
      expect(statuses.every((status) => status === 200 || status === 402), statuses.join()).toBe(true)
      const served = statuses.filter((status) => status === 200).length
      expect(served).toBeGreaterThan(0)
      expect(served).toBeLessThanOrEqual(LIMIT_NANO / COST_NANO)
      // A refused request never reached the upstream.
      expect(provider.calls).toHaveLength(served)
      await gateway.flushSpend()
      const { data } = (await (await callAs(gateway, management)('GET', `/keys/${record.hash}`)).json()) as { data: Record<string, number> }
      expect(Math.round(data.usage! * 1e9)).toBe(served * COST_NANO)
      expect(Math.round(data.usage_daily! * 1e9)).toBe(served * COST_NANO)
      expect(Math.round(data.limit_remaining! * 1e9)).toBe(LIMIT_NANO - served * COST_NANO)
    })

    it(`keeps ${REQUESTS} parallel BYOK requests under a limit that counts BYOK spend, and settles both metrics exactly`, async () => {
      const { gateway, provider } = open({ isByokOnly: true })
      // An account of its own: its BYOK key is the only way this provider answers.
      const { account } = await gateway.admin.createAccount({ name: 'BYOK spender', slug: `byok-${Math.random().toString(36).slice(2, 10)}` })
      const { key: management } = await gateway.admin.createKey({ accountId: account.id, kind: 'management', name: 'byok admin' })
      expect((await callAs(gateway, management)('POST', '/byok', { provider: 'alpha', key: 'byok-alpha-0123456789abcdef' })).status).toBe(200)
      const { key, record } = await gateway.admin.createKey({ accountId: account.id, name: 'byok spender', limit: LIMIT_NANO / 1e9, includeByokInLimit: true })
      const responses = await Promise.all(Array.from({ length: REQUESTS }, () => callAs(gateway, key)('POST', '/responses', { model: TEST_MODEL, input: 'Hi', max_output_tokens: 10 })))
      const statuses = responses.map((response) => response.status)
      expect(statuses.every((status) => status === 200 || status === 402), statuses.join()).toBe(true)
      const served = statuses.filter((status) => status === 200).length
      // Each costs the list price upstream plus the 5 % fee here, all of it counted by the limit.
      const FEE_NANO = COST_NANO / 20
      expect(served).toBeGreaterThan(0)
      expect(served).toBeLessThanOrEqual(Math.floor(LIMIT_NANO / (COST_NANO + FEE_NANO)))
      expect(provider.calls).toHaveLength(served)
      await gateway.flushSpend()
      const { data } = (await (await callAs(gateway, management)('GET', `/keys/${record.hash}`)).json()) as { data: Record<string, number> }
      expect(Math.round(data.usage! * 1e9)).toBe(served * FEE_NANO)
      expect(Math.round(data.byok_usage! * 1e9)).toBe(served * COST_NANO)
      expect(Math.round(data.limit_remaining! * 1e9)).toBe(LIMIT_NANO - served * (COST_NANO + FEE_NANO))
    })

    it('applies parallel credit grants once each, numbered without gaps', async () => {
      const { gateway } = open()
      const { account } = await gateway.admin.createAccount({ name: 'Granted', slug: `granted-${Math.random().toString(36).slice(2, 10)}` })
      await Promise.all(Array.from({ length: 8 }, (_, index) => gateway.admin.grantCredits(account.id, { amount: 0.1 * (index + 1), note: `grant ${index}` })))
      const credits = await gateway.admin.getCredits(account.id)
      expect(credits.totalCredits).toBe(3.6)
      const { grants } = await gateway.admin.listCreditGrants(account.id)
      expect(grants.map((grant) => grant.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    })
  })
}
