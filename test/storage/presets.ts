/**
 * The presets repository's storage cases, run on every driver: concurrent saves of one slug make one
 * preset with distinct version numbers (the highest designated), slugs are per workspace, and listing is
 * most recently updated first.
 */

import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createPresetsRepository } from '../../src/repositories/presets'
import type { StorageDriver } from '../../src/storage/contract'

const SAVERS = 20

export function describePresets(name: string, makeDriver: () => Promise<StorageDriver> | StorageDriver): void {
  describe(`presets on ${name}`, () => {
    let driver: StorageDriver
    let owner: { accountId: string; workspaceId: string; creatorUserId: string }

    beforeEach(async () => {
      driver = await makeDriver()
      owner = { accountId: `account-${randomUUID()}`, workspaceId: `workspace-${randomUUID()}`, creatorUserId: 'user-1' }
    })

    afterEach(async () => {
      await driver.close()
    })

    it(`${SAVERS} concurrent saves of one slug make one preset with versions 1 to ${SAVERS}, the last designated`, async () => {
      let clock = Date.parse('2026-11-23T12:00:00.000Z')
      const presets = createPresetsRepository(driver, () => new Date(clock++))
      const saves = await Promise.all(
        Array.from({ length: SAVERS }, (_, index) => presets.saveVersion(owner, 'shared', { config: { temperature: index / SAVERS }, systemPrompt: null, creatorId: 'user-1' })),
      )
      expect(new Set(saves.map((save) => save.preset.id)).size).toBe(1)
      expect(saves.map((save) => save.version.version).sort((left, right) => left - right)).toEqual(Array.from({ length: SAVERS }, (_, index) => index + 1))
      const preset = (await presets.findBySlug(owner.workspaceId, 'shared'))!
      expect(preset.designatedVersion).toBe(SAVERS)
      expect((await presets.designatedVersion(preset))?.version).toBe(SAVERS)
      const versions = await presets.versions(preset.id, 0, 100)
      expect(versions.totalCount).toBe(SAVERS)
      expect(versions.versions.map((version) => version.version)).toEqual(Array.from({ length: SAVERS }, (_, index) => index + 1))
    })

    it('keeps slugs per workspace and lists the most recently updated first', async () => {
      let clock = Date.parse('2026-11-23T12:00:00.000Z')
      const presets = createPresetsRepository(driver, () => new Date((clock += 1000)))
      const other = { ...owner, workspaceId: `workspace-${randomUUID()}` }
      const version = { config: {}, systemPrompt: 'Be brief.', creatorId: 'user-1' }
      const first = await presets.saveVersion(owner, 'alpha', version)
      await presets.saveVersion(owner, 'beta', version)
      const elsewhere = await presets.saveVersion(other, 'alpha', version)
      expect(elsewhere.preset.id).not.toBe(first.preset.id)
      await presets.saveVersion(owner, 'alpha', version)
      const page = await presets.list(owner.workspaceId, 0, 10)
      expect(page.presets.map((preset) => preset.slug)).toEqual(['alpha', 'beta'])
      expect(page.totalCount).toBe(2)
      expect((await presets.list(other.workspaceId, 0, 10)).presets.map((preset) => preset.slug)).toEqual(['alpha'])
    })
  })
}
