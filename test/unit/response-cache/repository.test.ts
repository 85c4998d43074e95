/** The response cache's entries over the storage contract: TTL, the caps per entry and per workspace, eviction, clearing. */

import { describe, expect, it } from 'vitest'
import { createResponseCacheRepository } from '../../../src/repositories/response-cache'
import { memoryStorage } from '../../../src/storage/memory'

const CAPS = { maxEntryBytes: 1_000, maxWorkspaceBytes: 100_000, maxWorkspaceEntries: 100 }
const answer = (text: string) => ({ output: [{ type: 'message', text }] })

describe('the response cache repository', () => {
  it('serves an entry until it expires, then reads it as absent and removes it', async () => {
    const entries = createResponseCacheRepository(memoryStorage())
    expect(await entries.put('k1', 'ws', answer('hi'), 60_000, 1_000, CAPS)).toBe(true)
    expect(await entries.get('k1', 60_999)).toMatchObject({ workspaceId: 'ws', storedAt: 1_000, answer: answer('hi') })
    expect(await entries.get('k1', 61_000)).toBeNull()
    expect(await entries.clear('ws')).toBe(0)
  })

  it('keeps no answer larger than the entry cap', async () => {
    const entries = createResponseCacheRepository(memoryStorage())
    expect(await entries.put('big', 'ws', answer('x'.repeat(2_000)), 60_000, 0, CAPS)).toBe(false)
    expect(await entries.get('big', 1)).toBeNull()
  })

  it('evicts the oldest entries of a workspace past its caps, and no other workspace`s', async () => {
    const entries = createResponseCacheRepository(memoryStorage())
    const caps = { ...CAPS, maxWorkspaceEntries: 2 }
    await entries.put('other', 'ws-2', answer('kept'), 60_000, 0, caps)
    for (const [index, id] of ['a', 'b', 'c'].entries()) await entries.put(id, 'ws-1', answer(id), 60_000, index + 1, caps)
    expect(await entries.get('a', 10)).toBeNull()
    expect(await entries.get('b', 10)).not.toBeNull()
    expect(await entries.get('c', 10)).not.toBeNull()
    expect(await entries.get('other', 10)).not.toBeNull()

    const size = JSON.stringify(answer('d')).length
    await entries.put('d', 'ws-1', answer('d'), 60_000, 20, { ...CAPS, maxWorkspaceBytes: size * 2 })
    expect(await entries.get('b', 21)).toBeNull()
    expect(await entries.clear('ws-1')).toBe(2)
    expect(await entries.get('other', 21)).not.toBeNull()
  })

  it('sweeps expired entries of the workspace on a fill', async () => {
    const storage = memoryStorage()
    const entries = createResponseCacheRepository(storage)
    await entries.put('old', 'ws', answer('old'), 1_000, 0, CAPS)
    await entries.put('new', 'ws', answer('new'), 60_000, 5_000, CAPS)
    expect((await storage.list('response_cache', { where: { workspaceId: 'ws' } })).totalCount).toBe(1)
  })
})
