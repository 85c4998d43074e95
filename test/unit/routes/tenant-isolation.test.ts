/**
 * Another account's resources, reached by id, slug or filter with this account's keys: never read, used or
 * changed. Routes with an id of their own have their cross-account cases beside them (keys, workspaces, BYOK,
 * guardrails, budgets, interns, generations); these are the ones reached another way.
 */

import { afterEach, expect, it } from 'vitest'
import { createTestGateway, scriptedProvider, TEST_MODEL, type TestGateway } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'

let t: TestGateway | undefined
afterEach(async () => {
  await t?.close()
  t = undefined
})

const REPLY = [{ type: 'text' as const, text: ['Hello'] }, { type: 'usage' as const, inputTokens: 10, outputTokens: 5 }]

/** This account (the kit's default) and another one with its own management and regular keys. */
const twoAccounts = async () => {
  const provider = scriptedProvider({ reply: REPLY })
  t = await createTestGateway({ providers: { alpha: provider } })
  const other = await t.gateway.admin.createAccount({ name: 'Other', slug: 'other' })
  const management = await t.gateway.admin.createKey({ kind: 'management', name: 'other admin', accountId: other.account.id })
  const regular = await t.gateway.admin.createKey({ kind: 'regular', name: 'other app', accountId: other.account.id })
  return { t, provider, other, management: management.key, regular: regular.key, regularHash: regular.record.hash }
}

it("keeps another account's generation content, activity and presets out of reach", async () => {
  const { t, provider, other, management, regular, regularHash } = await twoAccounts()
  // The other account keeps content and a preset, and serves one request.
  expect((await t.call('PATCH', '/workspaces/default', { key: management, json: { is_observability_io_logging_enabled: true } })).status).toBe(200)
  expect((await t.call('POST', '/presets/house/responses', { key: regular, json: { model: TEST_MODEL, input: 'x', instructions: 'Secret house rules.' } })).status).toBe(200)
  const theirs = await readJson(await t.call('POST', '/responses', { key: regular, json: { model: TEST_MODEL, input: 'Their question' } }))
  expect(theirs.id).toMatch(/^resp_/)
  expect((await t.call('GET', `/generation/content?id=${theirs.id}`, { key: management })).status).toBe(200)

  // This account's keys see none of it.
  for (const key of [t.managementKey, t.regularKey]) {
    expect((await t.call('GET', `/generation/content?id=${theirs.id}`, { key })).status).toBe(404)
    expect((await t.call('GET', `/generation?id=${theirs.id}`, { key })).status).toBe(404)
  }
  const activity = await t.call('GET', `/activity?api_key_hash=${regularHash}`)
  expect(activity.status).toBe(200)
  expect((await readJson(activity)).data).toEqual([])
  expect((await t.call('GET', `/activity?workspace_id=${other.workspace.id}`)).status).toBe(404)
  expect((await t.call('GET', '/presets/house', { key: t.regularKey })).status).toBe(404)
  const calls = provider.calls.length
  const viaPreset = await t.call('POST', '/responses', { key: t.regularKey, json: { model: '@preset/house', input: 'Hi' } })
  expect(viaPreset.status).toBe(404)
  expect(JSON.stringify(await readJson(viaPreset))).not.toContain('Secret house rules')
  expect(provider.calls.length).toBe(calls)
  // This account's own preset of the same slug is its own.
  expect((await t.call('POST', '/presets/house/responses', { key: t.regularKey, json: { model: TEST_MODEL, input: 'x', instructions: 'Our rules.' } })).status).toBe(200)
  await t.call('POST', '/responses', { key: t.regularKey, json: { model: '@preset/house', input: 'Hi' } })
  expect(provider.calls.at(-1)!.request.instructions).toBe('Our rules.')
})
