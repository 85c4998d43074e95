/**
 * The catalog routes besides `GET /models`: one model (`GET /model/{author}/{slug}`), the count, the
 * models the calling key can run, the zero-data-retention endpoints and the image models.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { BUILT_IN_MODELS, type ModelEntry } from '../../../src/engine/models'
import { createTestGateway, scriptedProvider, type TestGateway } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'

const SELF_HOSTED = { api: 'openai-chat', baseURL: 'http://127.0.0.1:9/v1', displayName: 'My vLLM' } as const
const PRIVATE_MODEL: ModelEntry = {
  slug: 'acme/private-7b',
  name: 'Private 7B',
  endpoints: [
    { provider: 'my-vllm', model: 'private-7b', contextLength: 8_192, pricing: { prompt: 0, completion: 0 }, isZeroDataRetention: true, supportedParameters: ['temperature'] },
  ],
}

let t: TestGateway | undefined
afterEach(async () => {
  await t?.close()
  t = undefined
})

const start = async () => {
  t = await createTestGateway({ logger: false, providers: { alpha: scriptedProvider({ reply: 'Hi' }), 'my-vllm': SELF_HOSTED }, models: [PRIVATE_MODEL] })
  return t
}

const get = async (path: string, key: string | null = null) => {
  const response = await t!.call('GET', path, { key })
  return { status: response.status, headers: response.headers, body: await readJson(response) }
}

const textModels = (extra: number) => BUILT_IN_MODELS.filter((entry) => (entry.outputModalities ?? ['text']).includes('text')).length + extra

describe('catalog routes', () => {
  it('GET /model/{author}/{slug} answers the model as GET /models lists it', async () => {
    await start()
    const { status, body } = await get('/model/openai/gpt-4.1-mini')
    expect(status).toBe(200)
    const listed = (await get('/models')).body.data.find((model: any) => model.id === 'openai/gpt-4.1-mini')
    expect(body).toEqual({ data: listed })
    expect(body.data.links.details).toBe('/api/v1/models/openai/gpt-4.1-mini/endpoints')
    expect(await get('/model/acme/unknown')).toMatchObject({ status: 404, body: { error: { code: 404, message: 'Model "acme/unknown" not found' } } })
    expect((await get('/model/openai/gpt-4.1-mini?x=1')).body).toEqual({ error: { code: 400, message: 'query.x: unknown field' } })
  })

  it('GET /models/count counts what GET /models lists, by output modality', async () => {
    await start()
    // The configured test/model and acme/private-7b join the built-in text models.
    expect((await get('/models/count')).body).toEqual({ data: { count: textModels(2) } })
    expect((await get('/models/count')).body.data.count).toBe((await get('/models')).body.total_count)
    const images = (await get('/models/count?output_modalities=image')).body.data.count
    expect(images).toBe((await get('/models?output_modalities=image')).body.total_count)
    expect(images).toBeGreaterThan(0)
    expect((await get('/models/count?output_modalities=smell')).status).toBe(400)
  })

  it('GET /models/user lists only what the key can run: shared keys and its workspace BYOK keys', async () => {
    const t = await start()
    const before = await get('/models/user', t.regularKey)
    expect(before.status).toBe(200)
    expect(before.headers.get('cache-control')).toBe('private, no-store')
    // Only the scripted provider has a shared key here (my-vllm has none, nor do the built-in providers).
    expect(before.body.data.map((model: any) => model.id)).toEqual(['test/model'])
    expect(before.body.total_count).toBe(1)
    expect((await t.call('POST', '/byok', { json: { provider: 'anthropic', key: 'sk-ant-test-0123456789abcdef' } })).status).toBe(200)
    const after = (await get('/models/user?limit=500&offset=0', t.regularKey)).body
    const ids: string[] = after.data.map((model: any) => model.id)
    expect(ids).toContain('anthropic/claude-sonnet-4.5')
    expect(ids.every((id) => id === 'test/model' || id.startsWith('anthropic/'))).toBe(true)
    expect((await get('/models/user')).status).toBe(401)
    expect((await get('/models/user?sort=newest', t.regularKey)).body).toEqual({ error: { code: 400, message: 'query.sort: unknown field' } })
  })

  it('GET /models/user leaves out what the key’s guardrail rules out', async () => {
    const t = await start()
    expect((await t.call('POST', '/byok', { json: { provider: 'anthropic', key: 'sk-ant-test-0123456789abcdef' } })).status).toBe(200)
    const created = await (await t.call('POST', '/guardrails', { json: { name: 'Only Claude Sonnet', allowed_models: ['anthropic/claude-sonnet-4.5'] } })).json()
    expect((await t.call('POST', `/guardrails/${created.data.id}/assignments/keys`, { json: { key_hashes: [t.regularKeyHash] } })).status).toBe(200)
    const ids: string[] = (await get('/models/user?limit=500&offset=0', t.regularKey)).body.data.map((model: any) => model.id)
    expect(ids).toEqual(['anthropic/claude-sonnet-4.5'])
  })

  it('GET /endpoints/zdr lists the zero-data-retention endpoints in the endpoint shape', async () => {
    await start()
    const { status, body } = await get('/endpoints/zdr')
    expect(status).toBe(200)
    expect(body.data).toHaveLength(1)
    const listed = (await get('/models/acme/private-7b/endpoints')).body.data.endpoints[0]
    expect(body.data[0]).toEqual(listed)
    expect(body.data[0]).toMatchObject({ model_id: 'acme/private-7b', tag: 'my-vllm', provider_name: 'My vLLM' })
  })

  it('GET /images/models lists the models that draw, with their parameters as capability descriptors', async () => {
    await start()
    const { status, body } = await get('/images/models')
    expect(status).toBe(200)
    const drawing = BUILT_IN_MODELS.filter((entry) => entry.outputModalities?.includes('image')).map((entry) => entry.slug)
    expect(body.data.map((model: any) => model.id)).toEqual(drawing)
    const flash = body.data.find((model: any) => model.id === 'google/gemini-2.5-flash-image')
    expect(flash).toMatchObject({
      name: 'Gemini 2.5 Flash Image',
      architecture: { input_modalities: ['text', 'image'], output_modalities: ['image', 'text'] },
      endpoints: '/api/v1/models/google/gemini-2.5-flash-image/endpoints',
      supports_streaming: false,
    })
    expect(flash.supported_parameters.modalities).toEqual({ type: 'enum', values: ['image', 'text'] })
    expect(flash.supported_parameters.temperature).toEqual({ type: 'range', min: 0, max: 2 })
  })
})
