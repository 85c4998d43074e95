/**
 * Stored responses' storage cases, run on every driver (memory, file, SQLite, Redis): a response saved sealed or
 * readable reads back whole for its owner only, a second save of one id keeps the first, and the retention sweep
 * deletes the oldest first in bounded pages, leaving the recent ones.
 */
import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/core/logger'
import { createSecretBox } from '../../src/core/secrets'
import { createStoredResponsesRepository, type StoredResponseContent } from '../../src/repositories/stored-responses'
import { createStoredResponses } from '../../src/services/stored-responses'
import type { StorageDriver } from '../../src/storage/contract'
import { TEST_ENCRYPTION_KEY } from '../helpers/gateway'

const contentSaying = (text: string): StoredResponseContent => ({
  response: { id: 'resp_x', object: 'response', output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }] },
  input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: `asked ${text}` }] }],
  history: [],
})

export function describeStoredResponses(name: string, makeDriver: () => Promise<StorageDriver> | StorageDriver): void {
  describe(`stored responses on ${name}`, () => {
    let driver: StorageDriver
    let owner: { accountId: string; workspaceId: string }
    let clock: Date
    const service = () =>
      createStoredResponses(createStoredResponsesRepository(driver), createSecretBox([TEST_ENCRYPTION_KEY]), { retentionDays: 1, sweepIntervalMs: false }, () => clock, silentLogger)
    const id = () => `resp_${randomUUID().replaceAll('-', '')}`

    beforeEach(async () => {
      driver = await makeDriver()
      owner = { accountId: `account-${randomUUID()}`, workspaceId: `workspace-${randomUUID()}` }
      clock = new Date('2026-03-01T00:00:00Z')
    })
    afterEach(async () => {
      await driver.close()
    })

    it('reads a sealed and a readable response back for their owner only; a second save keeps the first', async () => {
      const stored = service()
      const [sealed, readable] = [id(), id()]
      await stored.save(sealed, owner, { isObservabilityIoLoggingEnabled: false }, contentSaying('sealed'))
      await stored.save(readable, owner, { isObservabilityIoLoggingEnabled: true }, contentSaying('readable'))
      await stored.save(readable, owner, { isObservabilityIoLoggingEnabled: true }, contentSaying('again'))
      expect(await stored.load(sealed, owner)).toEqual(contentSaying('sealed'))
      expect(await stored.load(readable, owner)).toEqual(contentSaying('readable'))
      expect(await stored.load(sealed, { ...owner, workspaceId: `workspace-${randomUUID()}` })).toBeNull()
      expect(await stored.delete(sealed, owner)).toBe(true)
      expect(await stored.load(sealed, owner)).toBeNull()
    })

    it('sweeps expired responses oldest first and keeps the recent', async () => {
      const stored = service()
      const old = [id(), id(), id()]
      for (const each of old) await stored.save(each, owner, { isObservabilityIoLoggingEnabled: true }, contentSaying(each))
      clock = new Date('2026-03-02T12:00:00Z')
      const recent = id()
      await stored.save(recent, owner, { isObservabilityIoLoggingEnabled: true }, contentSaying(recent))
      await stored.sweep()
      for (const each of old) expect(await createStoredResponsesRepository(driver).get(each)).toBeNull()
      expect(await stored.load(recent, owner)).toEqual(contentSaying(recent))
    })
  })
}
