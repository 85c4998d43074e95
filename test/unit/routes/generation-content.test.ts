/** `GET /generation/content`: what a generation said, kept for workspaces with private logging on. */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, scriptedProvider, TEST_MODEL, type ScriptedProvider, type TestGateway } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'

let t: TestGateway | undefined
afterEach(async () => {
  await t?.close()
  t = undefined
})

const ANSWER = [
  { type: 'reasoning' as const, summary: ['Paris is well known.'] },
  { type: 'text' as const, text: ['The capital ', 'is Paris.'] },
  { type: 'usage' as const, inputTokens: 12, outputTokens: 6 },
]

const start = async (provider: ScriptedProvider = scriptedProvider({ reply: ANSWER })) => {
  t = await createTestGateway({ providers: { alpha: provider } })
  return t
}

const content = (id: string, key = t!.regularKey) => t!.call('GET', `/generation/content?id=${encodeURIComponent(id)}`, { key })
const privateLogging = (settings: Record<string, unknown>) => t!.call('PATCH', '/workspaces/default', { json: settings })

describe('GET /generation/content', () => {
  it('keeps nothing while the workspace\'s private logging is off', async () => {
    await start()
    const answer = await readJson(await t!.responses({ model: TEST_MODEL, input: 'Capital of France?' }))
    const response = await content(answer.id)
    expect(response.status).toBe(404)
    expect(await readJson(response)).toEqual({
      error: {
        code: 404,
        message:
          "No content was kept for this generation: its workspace's private logging (is_observability_io_logging_enabled) was off, " +
          'its key was not among io_logging_api_key_ids, or it was not sampled (io_logging_sampling_rate)',
      },
    })
    expect((await t!.gateway.storage.list('generation_contents')).totalCount).toBe(0)
  })

  it('keeps the conversation, the completion and the reasoning of whole and streamed answers', async () => {
    await start()
    expect((await privateLogging({ is_observability_io_logging_enabled: true })).status).toBe(200)
    const answer = await readJson(await t!.responses({ model: TEST_MODEL, instructions: 'Answer briefly.', input: 'Capital of France?' }))
    expect(await readJson(await content(answer.id))).toEqual({
      data: {
        input: { messages: [{ role: 'system', content: 'Answer briefly.' }, { role: 'user', content: 'Capital of France?' }] },
        output: { completion: 'The capital is Paris.', reasoning: 'Paris is well known.' },
        error: null,
      },
    })
    // A streamed Chat Completions answer, read by its gen- id; a management key reads it too.
    const streamed = await t!.call('POST', '/chat/completions', { key: t!.regularKey, json: { model: TEST_MODEL, stream: true, messages: [{ role: 'user', content: 'Again?' }] } })
    const id = /"id":"(gen-[0-9a-f]+)"/.exec(await streamed.text())![1]!
    const kept = await readJson(await content(id, t!.managementKey))
    expect(kept.data.input.messages).toEqual([{ type: 'message', role: 'user', content: 'Again?' }])
    expect(kept.data.output.completion).toBe('The capital is Paris.')
    // Another regular key cannot read it.
    const { key } = await t!.gateway.admin.createKey({ kind: 'regular', name: 'other' })
    expect((await content(answer.id, key)).status).toBe(404)
  })

  it('keeps the error of a request every attempt of which failed', async () => {
    await start(scriptedProvider({ reply: [{ type: 'http_error', status: 503, message: 'Overloaded' }] }))
    await privateLogging({ is_observability_io_logging_enabled: true })
    const failed = await t!.responses({ model: TEST_MODEL, input: 'Capital of France?' })
    // An overloaded upstream is a 529 to the client; the attempt keeps the provider's own 503.
    expect(failed.status).toBe(529)
    const records = (await t!.gateway.storage.list<any>('generations')).items.map((item) => item.data)
    expect(records).toHaveLength(1)
    const kept = await readJson(await content(records[0].id))
    expect(kept.data.output).toEqual({ completion: null, reasoning: null })
    expect(kept.data.error).toMatchObject({ status: 529, provider_name: 'alpha', raw: null, previous_errors: [{ code: 503, provider_name: 'alpha', raw: null }] })
    expect(kept.data.error.message).toContain('Overloaded')
  })

  it('samples at io_logging_sampling_rate, and a list of io_logging_api_key_ids matches no key here', async () => {
    await start()
    await privateLogging({ is_observability_io_logging_enabled: true, io_logging_sampling_rate: 0 })
    await t!.responses({ model: TEST_MODEL, input: 'One' })
    await privateLogging({ io_logging_sampling_rate: 1, io_logging_api_key_ids: [42] })
    await t!.responses({ model: TEST_MODEL, input: 'Two' })
    expect((await t!.gateway.storage.list('generation_contents')).totalCount).toBe(0)
    await privateLogging({ io_logging_api_key_ids: null })
    await t!.responses({ model: TEST_MODEL, input: 'Three' })
    expect((await t!.gateway.storage.list('generation_contents')).totalCount).toBe(1)
  })
})
