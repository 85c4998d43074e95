/**
 * Updates of one record through the real routes, at 30-way concurrency, on a given driver: every
 * valid PATCH must succeed (the repositories retry the compare-and-set), and every one must land.
 * Run by `describeStorageContract`, so every driver that claims compare-and-set runs it.
 */
import { describe, expect, it } from 'vitest'
import { createGateway } from '../../src/gateway/gateway'
import type { StorageDriver } from '../../src/storage/contract'
import { callAs, TEST_ENCRYPTION_KEY } from '../helpers/gateway'

const WRITERS = 30

export function describeConcurrentUpdates(getDriver: () => StorageDriver): void {
  describe('concurrent updates through the routes', () => {
    it(`answers ${WRITERS} concurrent PATCH /byok/{id} with 200 and applies every one`, async () => {
      const storage = getDriver()
      // The driver is the suite's: it closes it. No sweep: this gateway only serves these requests.
      const gateway = createGateway({ storage, logger: false, encryptionKeys: [TEST_ENCRYPTION_KEY], internProvisioning: { sweepIntervalMs: false } })
      const { key } = await gateway.admin.createKey({ kind: 'management', name: 'patcher' })
      const call = callAs(gateway, key)
      const created = await call('POST', '/byok', { provider: 'openai', key: 'sk-proj-0123456789abcdefghijklmnop' })
      expect(created.status).toBe(200)
      const { id } = ((await created.json()) as { data: { id: string } }).data

      const responses = await Promise.all(
        Array.from({ length: WRITERS }, (_, index) =>
          call('PATCH', `/byok/${id}`, { name: `writer ${index}`, allowed_user_ids: [`user-${index}`] }),
        ),
      )
      const bodies = (await Promise.all(responses.map((response) => response.json()))) as Array<{
        data?: { name: string; allowed_user_ids: string[] }
        error?: unknown
      }>
      expect(bodies.map((body, index) => [responses[index]!.status, body.error])).toEqual(
        Array.from({ length: WRITERS }, () => [200, undefined]),
      )
      // Each answer shows its own write, whole.
      bodies.forEach((body, index) => expect(body.data).toMatchObject({ name: `writer ${index}`, allowed_user_ids: [`user-${index}`] }))
      // Every PATCH was applied once, one after the other: version 1 plus one per writer.
      const stored = await storage.get<{ name: string; allowedUserIds: string[] }>('byok_credentials', id)
      expect(stored?.version).toBe(1 + WRITERS)
      const writer = Number(stored!.data.name.replace('writer ', ''))
      expect(stored!.data.allowedUserIds).toEqual([`user-${writer}`])
    })
  })
}
