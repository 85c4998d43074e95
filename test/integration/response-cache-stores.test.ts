/**
 * The response cache's entries on every real store (and SQLite): served until they expire, kept within a
 * workspace's caps oldest first, and cleared per workspace, through the storage contract alone.
 */

import { rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createResponseCacheRepository } from '../../src/repositories/response-cache'
import type { StorageDriver } from '../../src/storage/contract'
import { redisStorage } from '../../src/storage/redis'
import { sqlStorage } from '../../src/storage/sql'
import { sqliteStorage } from '../../src/storage/sqlite'
import { dropMariadbDatabase, dropPostgresSchema, dropRedisPrefix, MARIADB_URL, POSTGRES_URL, REDIS_URL, uniqueNamespace } from '../helpers/stores'

const namespace = uniqueNamespace('response_cache')
const sqliteDirectory = join(tmpdir(), namespace)

const STORES: Array<{ name: string; open: () => StorageDriver; drop: () => Promise<void> }> = [
  { name: 'Redis', open: () => redisStorage({ url: REDIS_URL, prefix: `${namespace}:` }), drop: () => dropRedisPrefix(`${namespace}:`) },
  { name: 'PostgreSQL', open: () => sqlStorage({ url: POSTGRES_URL, schema: namespace }), drop: () => dropPostgresSchema(namespace) },
  { name: 'MariaDB', open: () => sqlStorage({ url: MARIADB_URL.replace(/\/test$/, `/${namespace}`) }), drop: () => dropMariadbDatabase(namespace) },
  { name: 'SQLite', open: () => sqliteStorage({ path: join(sqliteDirectory, 'modelgate.db') }), drop: () => rm(sqliteDirectory, { recursive: true, force: true }) },
]

const opened: Array<{ storage: StorageDriver; drop: () => Promise<void> }> = []
afterAll(async () => {
  for (const { storage, drop } of opened) {
    await storage.close()
    await drop()
  }
})

const CAPS = { maxEntryBytes: 10_000, maxWorkspaceBytes: 1_000_000, maxWorkspaceEntries: 2 }
const answer = (text: string) => ({ id: `resp_${text}`, output: [{ type: 'message', content: [{ type: 'output_text', text }] }] })

describe.each(STORES)('response cache entries on $name', ({ open, drop }) => {
  it('serves an entry until it expires, evicts the oldest past the caps, and clears one workspace', async () => {
    const storage = open()
    opened.push({ storage, drop })
    const entries = createResponseCacheRepository(storage)
    await entries.put('other', 'ws-2', answer('other'), 60_000, 0, CAPS)
    await entries.put('a', 'ws-1', answer('a'), 60_000, 1, CAPS)
    expect(await entries.get('a', 2)).toMatchObject({ workspaceId: 'ws-1', storedAt: 1, answer: answer('a') })
    expect(await entries.get('a', 60_001)).toBeNull()

    await entries.put('b', 'ws-1', answer('b'), 60_000, 10, CAPS)
    await entries.put('c', 'ws-1', answer('c'), 60_000, 11, CAPS)
    await entries.put('d', 'ws-1', answer('d'), 60_000, 12, CAPS)
    expect(await entries.get('b', 13)).toBeNull()
    expect(await entries.get('c', 13)).not.toBeNull()
    expect(await entries.get('d', 13)).not.toBeNull()

    // The semantic cache's vectors: newest first per workspace and shape, only the last ones kept, cleared with their workspace.
    for (const [index, entryId] of ['c', 'd', 'e'].entries()) {
      await entries.putVector({ workspaceId: 'ws-1', shape: 'shape-1', entryId, vector: [index, 1], storedAt: 20 + index }, 2)
    }
    await entries.putVector({ workspaceId: 'ws-1', shape: 'shape-2', entryId: 'f', vector: [9, 9], storedAt: 30 }, 2)
    expect((await entries.recentVectors('ws-1', 'shape-1', 10)).map((record) => record.entryId)).toEqual(['e', 'd'])
    expect((await entries.recentVectors('ws-1', 'shape-1', 1)).map((record) => record.vector)).toEqual([[2, 1]])

    expect(await entries.clear('ws-1')).toBe(2)
    expect(await entries.get('d', 13)).toBeNull()
    expect(await entries.recentVectors('ws-1', 'shape-1', 10)).toEqual([])
    expect(await entries.recentVectors('ws-1', 'shape-2', 10)).toEqual([])
    expect(await entries.get('other', 13)).not.toBeNull()
  })
})
