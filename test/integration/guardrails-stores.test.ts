/**
 * The guardrails repository on every real store: a key holds one guardrail whatever the races, a guardrail's
 * deletion takes its assignments with it, and listings filter by guardrail and account.
 */

import { afterAll, describe, expect, it } from 'vitest'
import { createGuardrailsRepository, NO_RULES } from '../../src/repositories/guardrails'
import type { StorageDriver } from '../../src/storage/contract'
import { redisStorage } from '../../src/storage/redis'
import { sqlStorage } from '../../src/storage/sql'
import { dropMariadbDatabase, dropPostgresSchema, dropRedisPrefix, MARIADB_URL, POSTGRES_URL, REDIS_URL, uniqueNamespace } from '../helpers/stores'

const namespace = uniqueNamespace('guardrails')

const STORES: Array<{ name: string; open: () => StorageDriver; drop: () => Promise<void> }> = [
  { name: 'Redis', open: () => redisStorage({ url: REDIS_URL, prefix: `${namespace}:` }), drop: () => dropRedisPrefix(`${namespace}:`) },
  { name: 'PostgreSQL', open: () => sqlStorage({ url: POSTGRES_URL, schema: namespace }), drop: () => dropPostgresSchema(namespace) },
  { name: 'MariaDB', open: () => sqlStorage({ url: MARIADB_URL.replace(/\/test$/, `/${namespace}`) }), drop: () => dropMariadbDatabase(namespace) },
]

const opened: Array<{ storage: StorageDriver; drop: () => Promise<void> }> = []
afterAll(async () => {
  for (const { storage, drop } of opened) {
    await storage.close()
    await drop()
  }
})

const KEY = 'a'.repeat(64)
const OTHER_KEY = 'b'.repeat(64)

describe.each(STORES)('guardrails on $name', ({ open, drop }) => {
  it('keeps one guardrail per key through concurrent assignments, and deletes assignments with their guardrail', async () => {
    const storage = open()
    opened.push({ storage, drop })
    const repository = createGuardrailsRepository(storage, () => new Date())
    const guardrail = (id: string) => repository.create({ ...NO_RULES, id, accountId: 'acct', workspaceId: 'ws', name: id, description: null })
    const first = await guardrail(crypto.randomUUID())
    const second = await guardrail(crypto.randomUUID())

    const assign = (guardrailId: string, keyHash = KEY) => repository.assignKey({ id: crypto.randomUUID(), keyHash, guardrailId, accountId: 'acct', assignedBy: null })
    await Promise.all(Array.from({ length: 10 }, (_, index) => assign(index % 2 === 0 ? first.id : second.id)))
    const holder = (await repository.assignmentOf(KEY))!.guardrailId
    expect([first.id, second.id]).toContain(holder)
    const all = await repository.listAssignments({ accountId: 'acct' }, 0, 10)
    expect(all.totalCount).toBe(1)

    await assign(first.id, OTHER_KEY)
    await assign(first.id)
    expect((await repository.listAssignments({ accountId: 'acct', guardrailId: first.id }, 0, 10)).totalCount).toBe(2)
    expect((await repository.listAssignments({ accountId: 'acct', guardrailId: second.id }, 0, 10)).totalCount).toBe(0)
    expect(await repository.unassignKey(KEY, second.id)).toBe(false)

    expect(await repository.delete(first.id)).toBe(true)
    expect(await repository.assignmentOf(KEY)).toBeNull()
    expect((await repository.listAssignments({ accountId: 'acct' }, 0, 10)).totalCount).toBe(0)
    expect((await repository.listForAccount('acct', 'ws', 0, 10)).guardrails.map((record) => record.id)).toEqual([second.id])
  })
})
