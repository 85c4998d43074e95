/**
 * The audit log's storage cases, run on every driver (memory, file, SQLite, Redis, PostgreSQL, MariaDB): entries are
 * listed newest first through the equality indexes they declare (account, action, target, actor), cut into pages
 * before a position and within a time range by the repository's binary search over offsets, and swept oldest first
 * in bounded pages.
 */
import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/core/logger'
import { createAuditLogRepository, type AuditAction, type AuditEntryRecord } from '../../src/repositories/audit-log'
import { createAuditLog } from '../../src/services/audit-log'
import type { StorageDriver } from '../../src/storage/contract'

type Fields = { accountId: string | null; createdAt: string; action?: AuditAction; targetId?: string; keyPrefix?: string | null }

const entry = ({ accountId, createdAt, action = 'key.create', targetId = 'aaaaaaaa', keyPrefix = '0123abcd' }: Fields): Omit<AuditEntryRecord, 'sortKey'> => ({
  id: randomUUID(),
  createdAt,
  actor: keyPrefix === null ? { keyPrefix: null, kind: 'operator' } : { keyPrefix, kind: 'management' },
  action,
  target: { type: 'key', id: targetId },
  accountId,
  workspaceId: null,
  changes: { name: createdAt },
  requestId: null,
})

/** `count` instants one second apart from `start`. */
const seconds = (start: string, count: number) => Array.from({ length: count }, (_, index) => new Date(Date.parse(start) + index * 1000).toISOString())

export function describeAuditLog(name: string, makeDriver: () => Promise<StorageDriver> | StorageDriver): void {
  describe(`audit log on ${name}`, () => {
    let driver: StorageDriver
    let accountId: string

    beforeEach(async () => {
      driver = await makeDriver()
      accountId = `account-${randomUUID()}`
    })

    afterEach(async () => {
      await driver.close()
    })

    it('pages an account newest first before a position, within a time range, and through combined filters', async () => {
      const repository = createAuditLogRepository(driver)
      const times = seconds('2031-06-01T00:00:00.000Z', 12)
      // Appended out of order, as several processes would: the store's order is the entries' time, not their arrival.
      for (const createdAt of [...times.slice(6), ...times.slice(0, 6)]) {
        const index = times.indexOf(createdAt)
        await repository.append(entry({ accountId, createdAt, action: index % 3 === 0 ? 'key.delete' : 'key.create', targetId: index % 2 === 0 ? 'even0000' : 'odd00000' }))
      }
      await repository.append(entry({ accountId: `other-${accountId}`, createdAt: times[5]! }))
      const names = (entries: AuditEntryRecord[]) => entries.map((each) => each.changes.name)

      const pages: AuditEntryRecord[][] = []
      let before: AuditEntryRecord | undefined
      for (;;) {
        const page = await repository.page({ accountId }, { limit: 5, ...(before ? { before } : {}) })
        pages.push(page.entries)
        before = page.entries.at(-1)
        if (!page.hasMore) break
      }
      expect(pages.map((page) => page.length)).toEqual([5, 5, 2])
      expect(names(pages.flat())).toEqual([...times].reverse())

      const range = await repository.page({ accountId }, { from: times[3], to: times[8], limit: 4 })
      expect(names(range.entries)).toEqual([times[8], times[7], times[6], times[5]])
      expect(range.hasMore).toBe(true)
      const rest = await repository.page({ accountId }, { from: times[3], to: times[8], before: range.entries.at(-1)!, limit: 4 })
      expect(names(rest.entries)).toEqual([times[4], times[3]])
      expect(rest.hasMore).toBe(false)

      const deletesOfEven = await repository.page({ accountId, action: 'key.delete', targetId: 'even0000' }, { limit: 10 })
      expect(names(deletesOfEven.entries)).toEqual([times[6], times[0]])
      const byActor = await repository.page({ accountId, actor: '0123abcd', targetType: 'key' }, { limit: 100 })
      expect(byActor.entries).toHaveLength(12)
      expect((await repository.page({ accountId, actor: 'operator' }, { limit: 100 })).entries).toEqual([])
      expect(await repository.page({ accountId }, { from: '2031-06-02T00:00:00.000Z', limit: 10 })).toEqual({ entries: [], hasMore: false })
    })

    it('sweeps entries past the retention oldest first in bounded pages, those of no account too, and keeps the rest', async () => {
      const repository = createAuditLogRepository(driver)
      // Older than any other case's entries, so only these can be past the cutoff.
      for (const createdAt of seconds('2001-03-01T00:00:00.000Z', 5)) await repository.append(entry({ accountId, createdAt }))
      await repository.append(entry({ accountId: null, createdAt: '2001-03-01T00:00:09.000Z', keyPrefix: null }))
      const kept = await repository.append(entry({ accountId, createdAt: '2001-03-20T00:00:00.000Z' }))
      const now = new Date('2001-03-15T00:00:00.000Z')
      const auditLog = createAuditLog(repository, { retentionDays: 10, sweepIntervalMs: false }, () => now, silentLogger)
      expect(await repository.deleteOlderThan('2001-03-05T00:00:00.000Z', 4)).toEqual({ deleted: 4, hasMore: true })
      expect(await auditLog.sweep()).toBe(2)
      expect((await repository.page({ accountId }, { limit: 10 })).entries).toEqual([kept])
      await auditLog.close()
    })
  })
}
