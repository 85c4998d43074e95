/**
 * The moderation plugin against a loopback moderation API answering in OpenAI's `/v1/moderations` shape
 * (test/fixtures/moderation/): what the gateway sends it, the 403 a flagged input gets (before any upstream call),
 * the pipeline stage, the fallback to the `openai` provider's key, and refusals when no API is configured or it fails.
 */

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createTestGateway, readEvents, scriptedProvider, type TestGateway } from '../../../src/testing'
import { startUpstream, type Upstream } from '../../helpers/upstream'

const fixture = (name: string) => JSON.parse(readFileSync(join(__dirname, '../../fixtures/moderation', name), 'utf8'))
const FLAGGED = fixture('flagged.json')
const [CLEAN_RESULT, FLAGGED_RESULT] = FLAGGED.results
const MODERATION_KEY = 'sk-moderation-7c1e5a9d3b2f4e6a8c0d'
const THREAT = 'I am going to hurt you and everyone you know, and nobody will stop me from doing it tonight, this is a promise you will regret ignoring'

let api: Upstream
let testGateway: TestGateway | undefined
beforeAll(async () => {
  // The real shape, one result per input: inputs that threaten are flagged.
  api = await startUpstream((request) => {
    if (request.url !== '/v1/moderations') return { status: 404, body: '{}' }
    const inputs = request.json.input as string[]
    return {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...FLAGGED, results: inputs.map((input) => (input.includes('hurt you') ? FLAGGED_RESULT : CLEAN_RESULT)) }),
    }
  })
})
afterAll(() => api.close())
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
  api.requests.length = 0
})

const METADATA = { headers: { 'x-service-metadata': 'enabled' } }
const MODERATION = [{ id: 'moderation' }]

const serve = async (plugins: Record<string, unknown> | null = { moderation: { baseURL: `${api.url}/v1`, apiKey: MODERATION_KEY } }, providers: Record<string, unknown> = {}) => {
  const model = scriptedProvider({ reply: 'Hello!' })
  testGateway = await createTestGateway({ providers: { scripted: model, ...providers }, ...(plugins ? { plugins } : {}) })
  return model
}

describe('moderation', () => {
  it('sends the request text to the moderation API and lets a clean input through, with its stage', async () => {
    const model = await serve()
    const response = await testGateway!.responses(
      { instructions: 'Be brief.', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hi there' }] }], plugins: MODERATION },
      METADATA,
    )
    const body = await response.json()
    expect(response.status, JSON.stringify(body)).toBe(200)
    expect(api.requests).toHaveLength(1)
    const [sent] = api.requests
    expect(sent!.method).toBe('POST')
    expect(sent!.headers.authorization).toBe(`Bearer ${MODERATION_KEY}`)
    expect(sent!.json).toEqual({ model: 'omni-moderation-latest', input: ['Be brief.', 'Hi there'] })
    expect(model.calls).toHaveLength(1)
    expect(body.service_metadata.pipeline).toEqual([
      { type: 'plugin', name: 'moderation', summary: 'the input passed moderation (omni-moderation-2024-09-26)', data: { flagged: false, model: 'omni-moderation-2024-09-26', inputs: 2 } },
    ])
  })

  it('refuses a flagged input with a 403 and the spec metadata, before any upstream call', async () => {
    const model = await serve()
    const response = await testGateway!.responses({ model: 'test/model', input: [{ role: 'user', content: 'Hello' }, { role: 'user', content: THREAT }], plugins: MODERATION, stream: true })
    expect(response.status).toBe(403)
    expect(await response.json()).toEqual({
      error: {
        code: 403,
        message: 'Your input was flagged by moderation for harassment, harassment/threatening, violence',
        metadata: {
          reasons: ['harassment', 'harassment/threatening', 'violence'],
          flagged_input: THREAT.slice(0, 100),
          provider_name: 'openai',
          model_slug: 'test/model',
        },
      },
    })
    expect(model.calls).toHaveLength(0)
  })

  it('shows the stage that refused in the 403 body when metadata is asked for', async () => {
    await serve()
    const response = await testGateway!.responses({ input: THREAT, plugins: MODERATION }, METADATA)
    expect(response.status).toBe(403)
    const body = await response.json()
    expect(body.service_metadata.pipeline).toEqual([
      {
        type: 'plugin',
        name: 'moderation',
        summary: 'the input was flagged by moderation (omni-moderation-2024-09-26): harassment, harassment/threatening, violence',
        data: { flagged: true, model: 'omni-moderation-2024-09-26', reasons: ['harassment', 'harassment/threatening', 'violence'] },
      },
    ])
  })

  it('runs first whatever its place, and moderates a Chat Completions request too', async () => {
    const model = await serve()
    const response = await testGateway!.call('POST', '/chat/completions', {
      key: testGateway!.regularKey,
      json: { messages: [{ role: 'user', content: THREAT }], plugins: [{ id: 'context-compression' }, { id: 'moderation' }] },
    })
    expect(response.status).toBe(403)
    expect((await response.json()).error.metadata.reasons).toEqual(['harassment', 'harassment/threatening', 'violence'])
    expect(model.calls).toHaveLength(0)
  })

  it('refuses a flagged /messages request in Anthropic’s error shape', async () => {
    const model = await serve()
    const response = await testGateway!.call('POST', '/messages', {
      key: testGateway!.regularKey,
      json: { max_tokens: 100, messages: [{ role: 'user', content: [{ type: 'text', text: THREAT }] }], plugins: MODERATION },
    })
    expect(response.status).toBe(403)
    expect(await response.json()).toEqual({
      type: 'error',
      error: { type: 'permission_error', message: 'Your input was flagged by moderation for harassment, harassment/threatening, violence' },
    })
    expect(model.calls).toHaveLength(0)
  })

  it('uses the openai provider’s shared key when no moderation API is configured', async () => {
    await serve(null, { openai: { baseURL: `${api.url}/v1`, apiKey: 'sk-openai-shared-2b4d6f8a0c1e3a5c' } })
    const response = await testGateway!.responses({ input: 'Hi', plugins: MODERATION })
    expect(response.status).toBe(200)
    expect(api.requests[0]!.headers.authorization).toBe('Bearer sk-openai-shared-2b4d6f8a0c1e3a5c')
  })

  it('is refused by name when no moderation API is configured', async () => {
    const model = await serve(null)
    const response = await testGateway!.responses({ input: 'Hi', plugins: [{ id: 'moderation' }] })
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual({ error: { code: 400, message: 'body.plugins.0: the "moderation" plugin needs a moderation API, and none is configured on this gateway' } })
    expect(model.calls).toHaveLength(0)
  })

  it('fails the request (502) when the moderation API fails, never sending unmoderated input on, nor quoting the API', async () => {
    const model = await serve({ moderation: { baseURL: `${api.url}/broken`, apiKey: MODERATION_KEY } })
    const response = await testGateway!.responses({ input: 'Hi', plugins: MODERATION })
    expect(response.status).toBe(502)
    expect(await response.json()).toEqual({ error: { code: 502, message: 'Moderation is unavailable: it answered HTTP 404' } })
    expect(model.calls).toHaveLength(0)
  })

  it('lets a clean streamed request through', async () => {
    await serve()
    const events = await readEvents(await testGateway!.responses({ input: 'Hi', plugins: MODERATION, stream: true }, METADATA))
    expect(events.at(-1)!.response.service_metadata.pipeline[0].data).toEqual({ flagged: false, model: 'omni-moderation-2024-09-26', inputs: 1 })
  })
})
