import { describe, expect, it } from 'vitest'
import { silentLogger } from '../../../src/core/logger'
import { createSecretBox } from '../../../src/core/secrets'
import { createStoredResponsesRepository, STORED_RESPONSES, type StoredResponseContent } from '../../../src/repositories/stored-responses'
import { createStoredResponses } from '../../../src/services/stored-responses'
import { memoryStorage } from '../../../src/storage/memory'
import { TEST_ENCRYPTION_KEY } from '../../helpers/gateway'

const CONTENT: StoredResponseContent = {
  response: { id: 'resp_1', object: 'response', output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Paris.' }] }] },
  input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Capital of France?' }] }],
  history: [],
}
const OWNER = { accountId: 'account-a', workspaceId: 'workspace-a' }
const SEALED_WORKSPACE = { isObservabilityIoLoggingEnabled: false, isResponseStorageEnabled: true }
const READABLE_WORKSPACE = { isObservabilityIoLoggingEnabled: true, isResponseStorageEnabled: true }

const setup = (keys = [TEST_ENCRYPTION_KEY]) => {
  const storage = memoryStorage()
  let clock = new Date('2026-01-10T00:00:00Z')
  const stored = createStoredResponses(createStoredResponsesRepository(storage), createSecretBox(keys), { retentionDays: 30, sweepIntervalMs: false }, () => clock, silentLogger)
  return { storage, stored, advance: (days: number) => (clock = new Date(clock.getTime() + days * 86_400_000)) }
}

describe('stored responses', () => {
  it('seals the content where the workspace keeps content unreadable, and opens it for its owner only', async () => {
    const { storage, stored } = setup()
    await stored.save('resp_1', OWNER, SEALED_WORKSPACE, CONTENT)
    const raw = JSON.stringify((await storage.get(STORED_RESPONSES, 'resp_1'))!.data)
    expect(raw).not.toContain('Paris')
    expect(raw).not.toContain('Capital of France')
    expect(await stored.load('resp_1', OWNER)).toEqual(CONTENT)
    expect(await stored.load('resp_1', { ...OWNER, workspaceId: 'workspace-b' })).toBeNull()
    expect(await stored.load('resp_1', { ...OWNER, accountId: 'account-b' })).toBeNull()
    expect(await stored.delete('resp_1', { ...OWNER, workspaceId: 'workspace-b' })).toBe(false)
    expect(await stored.delete('resp_1', OWNER)).toBe(true)
    expect(await stored.load('resp_1', OWNER)).toBeNull()
  })

  it('keeps the content readable where the workspace logs content (its I/O logging)', async () => {
    const { storage, stored } = setup()
    await stored.save('resp_1', OWNER, READABLE_WORKSPACE, CONTENT)
    expect(JSON.stringify((await storage.get(STORED_RESPONSES, 'resp_1'))!.data)).toContain('Paris')
    expect(await stored.load('resp_1', OWNER)).toEqual(CONTENT)
  })

  it('says why a workspace cannot store: storing turned off, or sealed content without a key', () => {
    expect(setup().stored.refusal(SEALED_WORKSPACE)).toBeNull()
    expect(setup().stored.refusal({ ...SEALED_WORKSPACE, isResponseStorageEnabled: false })).toBe('workspace_off')
    expect(setup([]).stored.refusal(SEALED_WORKSPACE)).toBe('no_encryption_key')
    expect(setup([]).stored.refusal(READABLE_WORKSPACE)).toBeNull()
  })

  it('forgets a response past its retention, and the sweep deletes it', async () => {
    const { storage, stored, advance } = setup()
    await stored.save('resp_1', OWNER, SEALED_WORKSPACE, CONTENT)
    advance(29)
    expect(await stored.load('resp_1', OWNER)).not.toBeNull()
    advance(2)
    expect(await stored.load('resp_1', OWNER)).toBeNull()
    expect(await stored.sweep()).toBe(1)
    expect(await storage.get(STORED_RESPONSES, 'resp_1')).toBeNull()
  })
})
