/**
 * Presets (OpenRouter's): named request configurations of a workspace, each save a new numbered
 * version that becomes the designated one requests resolve to. A preset is unique by slug within its
 * workspace; a version by number within its preset, so concurrent saves get distinct numbers.
 */

import { randomId } from '../core/crypto'
import { StorageConflictError } from '../core/errors'
import type { JsonObject, RecordInput, StorageDriver } from '../storage/contract'
import { isUniqueConflict, retryLostRaces, updateRecord } from './mutate'

export const PRESETS = 'presets'
export const PRESET_VERSIONS = 'preset_versions'

export type PresetStatus = 'active' | 'disabled' | 'archived'

export type PresetRecord = {
  id: string
  accountId: string
  workspaceId: string
  slug: string
  name: string
  description: string | null
  status: PresetStatus
  statusUpdatedAt: string | null
  /** The version requests resolve to: the latest saved. */
  designatedVersionId: string | null
  designatedVersion: number
  creatorUserId: string | null
  createdAt: string
  updatedAt: string
}

export type PresetVersionRecord = {
  id: string
  presetId: string
  version: number
  /** Stored request fields, in the Responses API's names (src/routes/presets.config.ts). */
  config: JsonObject
  systemPrompt: string | null
  creatorId: string
  createdAt: string
  updatedAt: string
}

const slugUnique = (workspaceId: string, slug: string) => `preset:${workspaceId}:${slug}`
const versionUnique = (presetId: string, version: number) => `preset-version:${presetId}:${version}`

// Listed most recently updated first, and listing is ascending by sort key: the key counts down with time.
const LATEST_FIRST_BASE = 10 ** 15
const latestFirstKey = (updatedAt: string) => (LATEST_FIRST_BASE - Date.parse(updatedAt)).toString().padStart(16, '0')

const presetInput = (preset: PresetRecord): RecordInput<PresetRecord> => ({
  id: preset.id,
  data: preset,
  indexes: { workspaceId: preset.workspaceId },
  uniques: [slugUnique(preset.workspaceId, preset.slug)],
  sortKey: latestFirstKey(preset.updatedAt),
})

export interface NewVersion {
  config: JsonObject
  systemPrompt: string | null
  creatorId: string
}

export const createPresetsRepository = (storage: StorageDriver, now: () => Date) => {
  const findBySlug = async (workspaceId: string, slug: string) => (await storage.findByUnique<PresetRecord>(PRESETS, slugUnique(workspaceId, slug)))?.data ?? null

  /** The preset of `slug`, created (with no version yet) when the workspace has none. */
  const ensure = async (owner: { accountId: string; workspaceId: string; creatorUserId: string }, slug: string): Promise<PresetRecord> => {
    const existing = await findBySlug(owner.workspaceId, slug)
    if (existing) return existing
    const timestamp = now().toISOString()
    const preset: PresetRecord = {
      id: randomId(),
      ...owner,
      slug,
      name: slug,
      description: null,
      status: 'active',
      statusUpdatedAt: null,
      designatedVersionId: null,
      designatedVersion: 0,
      createdAt: timestamp,
      updatedAt: timestamp,
    }
    try {
      return (await storage.create(PRESETS, presetInput(preset))).data
    } catch (error) {
      // Another save created it first: use theirs.
      if (!isUniqueConflict(error)) throw error
      const created = await findBySlug(owner.workspaceId, slug)
      if (!created) throw error
      return created
    }
  }

  return {
    findBySlug,

    /**
     * Saves a new version of the preset `slug` (creating the preset on first save) and designates it.
     * Concurrent saves each get their own number; the highest is designated.
     */
    async saveVersion(owner: { accountId: string; workspaceId: string; creatorUserId: string }, slug: string, version: NewVersion) {
      const preset = await ensure(owner, slug)
      let number = 0
      const saved = await retryLostRaces(async () => {
        const current = await storage.get<PresetRecord>(PRESETS, preset.id)
        // Past a number a concurrent save took, even before that save designated it.
        number = Math.max(number + 1, (current?.data.designatedVersion ?? 0) + 1)
        const timestamp = now().toISOString()
        const record: PresetVersionRecord = { id: randomId(), presetId: preset.id, version: number, ...version, createdAt: timestamp, updatedAt: timestamp }
        try {
          return (
            await storage.create(PRESET_VERSIONS, {
              id: record.id,
              data: record,
              indexes: { presetId: preset.id },
              uniques: [versionUnique(preset.id, number)],
              sortKey: number.toString().padStart(10, '0'),
            })
          ).data
        } catch (error) {
          // The number was taken by a concurrent save: a lost race, tried again with the next one.
          if (isUniqueConflict(error)) throw new StorageConflictError('version')
          throw error
        }
      })
      const updated = await updateRecord<PresetRecord>(storage, PRESETS, preset.id, (current) =>
        current.data.designatedVersion >= saved.version
          ? null
          : presetInput({ ...current.data, designatedVersion: saved.version, designatedVersionId: saved.id, updatedAt: saved.createdAt }),
      )
      return { preset: updated?.data ?? (await storage.get<PresetRecord>(PRESETS, preset.id))!.data, version: saved }
    },

    async version(presetId: string, number: number): Promise<PresetVersionRecord | null> {
      return (await storage.findByUnique<PresetVersionRecord>(PRESET_VERSIONS, versionUnique(presetId, number)))?.data ?? null
    },

    async designatedVersion(preset: PresetRecord): Promise<PresetVersionRecord | null> {
      return preset.designatedVersionId ? ((await storage.get<PresetVersionRecord>(PRESET_VERSIONS, preset.designatedVersionId))?.data ?? null) : null
    },

    /** A workspace's presets, most recently updated first. */
    async list(workspaceId: string, offset: number, limit: number) {
      const page = await storage.list<PresetRecord>(PRESETS, { where: { workspaceId }, offset, limit })
      return { presets: page.items.map((item) => item.data), totalCount: page.totalCount }
    },

    /** A preset's versions, oldest first. */
    async versions(presetId: string, offset: number, limit: number) {
      const page = await storage.list<PresetVersionRecord>(PRESET_VERSIONS, { where: { presetId }, offset, limit })
      return { versions: page.items.map((item) => item.data), totalCount: page.totalCount }
    },
  }
}
