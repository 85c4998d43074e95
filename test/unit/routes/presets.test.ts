/** `/presets`: saving from the three inference wires, reading, versions, and requests that use a preset. */

import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { createTestGateway, scriptedProvider, type ScriptedProvider, type TestGateway } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'

const REPLY = [{ type: 'text' as const, text: ['Hello'] }, { type: 'usage' as const, inputTokens: 10, outputTokens: 5 }]
const SECOND: ModelEntry = { slug: 'test/second', name: 'Second', endpoints: [{ provider: 'alpha', model: 'second-model', contextLength: 128_000, pricing: { prompt: 0, completion: 0 } }] }
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

let t: TestGateway | undefined
let provider: ScriptedProvider
afterEach(async () => {
  await t?.close()
  t = undefined
})

const start = async () => {
  provider = scriptedProvider({ reply: REPLY })
  t = await createTestGateway({ providers: { alpha: provider }, models: [SECOND] })
  return t
}

const as = (key: string) => (method: string, path: string, json?: unknown) => t!.call(method, path, { key, ...(json === undefined ? {} : { json }) })

describe('saving presets', () => {
  it('saves from a Responses body: configuration and instructions kept, the conversation not; each save a new designated version', async () => {
    const t = await start()
    const call = as(t.regularKey)
    const first = await call('POST', '/presets/support/responses', {
      model: 'test/model',
      input: 'Hello!',
      instructions: 'You answer support tickets.',
      temperature: 0.2,
      provider: { only: ['alpha'] },
      stream: false,
    })
    expect(first.status).toBe(200)
    const saved = await readJson(first)
    expect(saved.data).toEqual({
      id: expect.any(String),
      slug: 'support',
      name: 'support',
      description: null,
      status: 'active',
      status_updated_at: null,
      designated_version_id: saved.data.designated_version.id,
      workspace_id: t.defaultWorkspaceId,
      creator_user_id: expect.stringMatching(/^user_/),
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
      designated_version: {
        id: expect.any(String),
        preset_id: saved.data.id,
        version: 1,
        config: { model: 'test/model', temperature: 0.2, provider: { only: ['alpha'] } },
        system_prompt: 'You answer support tickets.',
        creator_id: expect.stringMatching(/^user_/),
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      },
    })
    const second = await readJson(await call('POST', '/presets/support/chat/completions', {
      model: 'test/second',
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }],
      max_tokens: 64,
    }))
    expect(second.data.id).toBe(saved.data.id)
    expect(second.data.designated_version).toMatchObject({ version: 2, config: { model: 'test/second', max_output_tokens: 64 }, system_prompt: 'Be brief.' })
    const third = await readJson(await call('POST', '/presets/support/messages', { model: 'test/model', max_tokens: 32, system: 'Be kind.', messages: [{ role: 'user', content: 'Hi' }] }))
    expect(third.data.designated_version).toMatchObject({ version: 3, config: { model: 'test/model', max_output_tokens: 32 }, system_prompt: 'Be kind.' })

    const got = await readJson(await call('GET', '/presets/support'))
    expect(got.data.designated_version.version).toBe(3)
    const versions = await readJson(await call('GET', '/presets/support/versions'))
    expect(versions.total_count).toBe(3)
    expect(versions.data.map((version: any) => version.version)).toEqual([1, 2, 3])
    expect((await readJson(await call('GET', '/presets/support/versions/2'))).data.system_prompt).toBe('Be brief.')
    expect(await readJson(await call('GET', '/presets/support/versions/9'))).toEqual({ error: { code: 404, message: 'Preset "support" has no version 9' } })

    await call('POST', '/presets/triage/responses', { model: 'test/model', input: 'x' })
    const list = await readJson(await call('GET', '/presets?limit=10'))
    // Most recently updated first.
    expect(list.data.map((preset: any) => preset.slug)).toEqual(['triage', 'support'])
    expect(list.total_count).toBe(2)
  })

  it('refuses a field it would not keep, and a model it does not know, naming them', async () => {
    const t = await start()
    const call = as(t.regularKey)
    const cases: [string, unknown, string][] = [
      ['/presets/a/responses', { model: 'test/model', input: 'x', user: 'u1' }, 'body.user: not kept in a preset;'],
      ['/presets/a/responses', { model: 'acme/unknown', input: 'x' }, 'body.model: "acme/unknown" is not a model of this gateway'],
      ['/presets/a/responses', { model: '@preset/other', input: 'x' }, 'body.model: a preset cannot name another preset'],
      ['/presets/a/chat/completions', { model: 'test/model', messages: [{ role: 'user', content: 'x' }], stop: ['END'] }, 'body.stop: not kept in a preset;'],
      ['/presets/a/messages', { model: 'test/model', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], metadata: { user_id: 'u' } }, 'body.metadata: not kept in a preset;'],
      // The inference routes ignore an unknown top-level field; a save refuses it, as it would look kept.
      ['/presets/a/responses', { model: 'test/model', input: 'x', bogus: 1 }, 'body.bogus: unknown field'],
      ['/presets/a/chat/completions', { model: 'test/model', messages: [{ role: 'user', content: 'x' }], bogus: 1 }, 'body.bogus: unknown field'],
      ['/presets/a/messages', { model: 'test/model', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], bogus: 1 }, 'body.bogus: unknown field'],
      ['/presets/Bad Slug/responses', { model: 'test/model', input: 'x' }, 'params.slug: must be a preset slug: 1 to 64 lowercase letters, digits, - or _'],
    ]
    for (const [path, body, message] of cases) {
      const response = await call('POST', path, body)
      expect(response.status, path).toBe(400)
      expect((await readJson(response)).error.message).toContain(message)
    }
    expect((await readJson(await call('GET', '/presets'))).total_count).toBe(0)
  })
})

describe('requests that use a preset', () => {
  it('the preset fills what the request leaves out; the request wins where it sets a field', async () => {
    const t = await start()
    const call = as(t.regularKey)
    await call('POST', '/presets/brief/responses', { model: 'test/second', input: 'x', instructions: 'Answer in one sentence.', temperature: 0.1, max_output_tokens: 100 })

    // `@preset/<slug>` as the model: the preset's model, instructions and sampling.
    expect((await t.responses({ model: '@preset/brief', input: 'Hi' })).status).toBe(200)
    expect(provider.lastCall).toMatchObject({ model: 'second-model', request: { instructions: 'Answer in one sentence.', temperature: 0.1, max_output_tokens: 100 } })
    // `<model>@preset/<slug>`: the request's model, the rest from the preset.
    expect((await t.responses({ model: 'test/model@preset/brief', input: 'Hi', temperature: 0.9 })).status).toBe(200)
    expect(provider.lastCall).toMatchObject({ model: 'test-model', request: { instructions: 'Answer in one sentence.', temperature: 0.9, max_output_tokens: 100 } })
    // The `preset` field, on Chat Completions: the request's own system message stays beside the preset's prompt.
    const chat = await t.call('POST', '/chat/completions', { key: t.regularKey, json: { preset: 'brief', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 7 } })
    expect(chat.status).toBe(200)
    expect(provider.lastCall).toMatchObject({ model: 'second-model', request: { instructions: 'Answer in one sentence.', max_output_tokens: 7, temperature: 0.1 } })
    // And on Messages.
    const messages = await t.call('POST', '/messages', { key: t.regularKey, json: { model: '@preset/brief', max_tokens: 9, system: 'Be playful.', messages: [{ role: 'user', content: 'Hi' }] } })
    expect(messages.status).toBe(200)
    expect(provider.lastCall).toMatchObject({ model: 'second-model', request: { instructions: 'Be playful.', max_output_tokens: 9, temperature: 0.1 } })

    // The ledger names the preset a generation used (OpenRouter's `preset_id`).
    const viaPreset = await readJson(await t.responses({ model: '@preset/brief', input: 'Hi' }))
    const presetId = (await readJson(await call('GET', '/presets/brief'))).data.id
    expect((await readJson(await call('GET', `/generation?id=${viaPreset.id}`))).data.preset_id).toBe(presetId)
    const plain = await readJson(await t.responses({ model: 'test/model', input: 'Hi' }))
    expect((await readJson(await call('GET', `/generation?id=${plain.id}`))).data.preset_id).toBeNull()

    // A preset the workspace does not have, or two names for one.
    expect(await readJson(await t.responses({ model: '@preset/nope', input: 'Hi' }))).toEqual({ error: { code: 404, message: 'Preset "nope" not found' } })
    expect((await readJson(await t.responses({ model: '@preset/brief', preset: 'brief', input: 'Hi' }))).error.message).toBe(
      'body.preset: name the preset once, in preset or in model, not in both',
    )
  })

  it('presets belong to the key\'s workspace', async () => {
    const t = await start()
    await as(t.regularKey)('POST', '/presets/mine/responses', { model: 'test/model', input: 'x' })
    const other = await t.gateway.admin.createWorkspace(undefined, { name: 'Other', slug: 'other' })
    const { key } = await t.gateway.admin.createKey({ kind: 'regular', name: 'other', workspaceId: other.id })
    expect((await as(key)('GET', '/presets/mine')).status).toBe(404)
    expect((await t.call('POST', '/responses', { key, json: { model: '@preset/mine', input: 'Hi' } })).status).toBe(404)
  })
})
