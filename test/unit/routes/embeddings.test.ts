/**
 * `POST /embeddings` and `GET /embeddings/models` against loopback upstreams: OpenAI's and Gemini's
 * embeddings wires, pricing, BYOK and fallbacks, limits, the ledger, and what is refused.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../../src/core/crypto'
import { BUILT_IN_MODELS } from '../../../src/engine/models'
import { readJson } from '../../helpers/gateway'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture, type RecordedRequest, type UpstreamReply } from '../../helpers/upstream'

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const start = async () => {
  harness = await createResponsesHarness({ openai: {}, 'google-ai-studio': {}, mistral: {} })
  return harness
}

const call = (method: string, path: string, json?: unknown, key = harness!.key) =>
  harness!.gateway.fetch(
    new Request(`http://gateway.test/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
      body: json === undefined ? undefined : JSON.stringify(json),
    }),
  )

const embed = (body: Record<string, unknown>) => call('POST', '/embeddings', body)

/** An OpenAI-shaped answer with one short vector per input (their first value is the input's index). */
const openAIAnswer = (request: RecordedRequest): UpstreamReply => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    object: 'list',
    data: (request.json.input as unknown[]).map((_, index) => ({ object: 'embedding', index, embedding: [index, 0.25, -0.5] })),
    model: request.json.model,
    usage: { prompt_tokens: 7, total_tokens: 7 },
  }),
})

const QUESTION = ['The food was delicious and the waiter was friendly.', 'Paris is the capital of France.']

describe('POST /embeddings', () => {
  it('is held to the key’s guardrail: a provider it ignores is never called', async () => {
    const h = await start()
    const created = await readJson(await call('POST', '/guardrails', { name: 'No OpenAI', ignored_providers: ['openai'] }, h.managementKey))
    const assigned = await call('POST', `/guardrails/${created.data.id}/assignments/keys`, { key_hashes: [await sha256Hex(h.key)] }, h.managementKey)
    expect(assigned.status).toBe(200)
    const response = await embed({ model: 'openai/text-embedding-3-small', input: QUESTION })
    expect(response.status).toBe(404)
    expect(h.upstreams.openai!.requests).toHaveLength(0)
    // The refusal is recorded in the usage ledger, and the error names its record.
    const generationId = (await readJson(response)).error.metadata.generation_id
    const found = await readJson(await call('GET', `/generation?id=${generationId}`))
    expect(found.data).toMatchObject({
      id: generationId,
      api_type: 'embeddings',
      status: 'failed',
      error_type: 'not_found',
      total_cost: 0,
      provider_responses: [],
      guardrails: [{ guardrail_id: created.data.id, scope: 'key', direction: 'input', action: 'block', patterns: ['ignored_providers'], matches: 0 }],
    })
  })

  it('a guardrail budget refuses with 402 and records the refusal', async () => {
    const h = await start()
    const created = await readJson(await call('POST', '/guardrails', { name: 'Tiny budget', limit_usd: 0.000000001, reset_interval: 'daily' }, h.managementKey))
    await call('POST', `/guardrails/${created.data.id}/assignments/keys`, { key_hashes: [await sha256Hex(h.key)] }, h.managementKey)
    const response = await embed({ model: 'openai/text-embedding-3-small', input: QUESTION })
    expect(response.status).toBe(402)
    expect(h.upstreams.openai!.requests).toHaveLength(0)
    const generationId = (await readJson(response)).error.metadata.generation_id
    const found = await readJson(await call('GET', `/generation?id=${generationId}`))
    expect(found.data).toMatchObject({ id: generationId, api_type: 'embeddings', error_type: 'payment_required', guardrails: [expect.objectContaining({ patterns: ['limit_usd'] })] })
  })

  it('embeds through OpenAI, prices the input tokens and records the generation', async () => {
    const h = await start()
    h.upstreams.openai!.setHandler(() => jsonFixture('openai', 'embeddings.json'))
    const response = await embed({ model: 'openai/text-embedding-3-small', input: QUESTION, dimensions: 8, user: 'user-42' })
    expect(response.status).toBe(200)
    const body = await readJson(response)
    expect(body).toEqual({
      id: expect.stringMatching(/^gen-[0-9a-f]{48}$/),
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [-0.006929283, -0.005336422, 0.014709136, -0.024567296, 0.0039863544, 0.021012371, -0.008371405, 0.0123947] },
        { object: 'embedding', index: 1, embedding: expect.arrayContaining([0.0129823675]) },
      ],
      model: 'openai/text-embedding-3-small',
      usage: {
        prompt_tokens: 11,
        total_tokens: 11,
        // 11 tokens at $0.02 per million.
        cost: 2.2e-7,
        is_byok: false,
        cost_details: { upstream_inference_cost: null, upstream_inference_prompt_cost: 2.2e-7, upstream_inference_completions_cost: 0 },
      },
    })
    const sent = h.upstreams.openai!.requests[0]!
    expect(sent.url).toBe('/embeddings')
    expect(sent.headers.authorization).toBe('Bearer sk-shared-openai-0123456789abcdef')
    expect(sent.json).toEqual({ model: 'text-embedding-3-small', input: QUESTION, encoding_format: 'float', dimensions: 8, user: expect.stringMatching(/^mg_[0-9a-f]{32}$/) })
    expect(sent.json.user).not.toBe('user-42')

    const generation = await readJson(await call('GET', `/generation?id=${body.id}`))
    expect(generation.data).toMatchObject({ id: body.id, api_type: 'embeddings', model: 'openai/text-embedding-3-small', native_tokens_prompt: 11, native_tokens_completion: 0, total_cost: 2.2e-7, provider_name: 'OpenAI', is_byok: false })
  })

  it('answers base64 vectors as float32 little-endian, as OpenAI encodes them', async () => {
    const h = await start()
    h.upstreams.openai!.setHandler(openAIAnswer)
    const body = await readJson(await embed({ model: 'openai/text-embedding-3-large', input: 'One text', encoding_format: 'base64' }))
    expect(h.upstreams.openai!.requests[0]!.json.input).toEqual(['One text'])
    const bytes = Uint8Array.from(atob(body.data[0].embedding), (character) => character.charCodeAt(0))
    expect([...new Float32Array(bytes.buffer)]).toEqual([0, 0.25, -0.5])
  })

  it('sends token id input where the endpoint takes it', async () => {
    const h = await start()
    h.upstreams.openai!.setHandler(openAIAnswer)
    const single = await embed({ model: 'openai/text-embedding-3-small', input: [1212, 318, 257, 1332] })
    expect(single.status).toBe(200)
    expect(h.upstreams.openai!.requests[0]!.json.input).toEqual([[1212, 318, 257, 1332]])
    expect((await readJson(await embed({ model: 'openai/text-embedding-3-small', input: [[1, 2], [3]] }))).data).toHaveLength(2)
  })

  it('embeds through an OpenAI-compatible provider, leaving out the fields it is configured to refuse', async () => {
    const h = await start()
    h.upstreams.mistral!.setHandler(openAIAnswer)
    const body = await readJson(await embed({ model: 'mistralai/mistral-embed-2312', input: QUESTION, user: 'user-42' }))
    expect(body).toMatchObject({ model: 'mistralai/mistral-embed-2312', usage: { prompt_tokens: 7, cost: 7e-7 } })
    // Mistral refuses `user` (its provider entry omits it).
    expect(h.upstreams.mistral!.requests[0]!.json).toEqual({ model: 'mistral-embed', input: QUESTION, encoding_format: 'float' })
  })

  it('embeds through Gemini batchEmbedContents with the task type and dimensions, estimating unreported usage', async () => {
    const h = await start()
    h.upstreams['google-ai-studio']!.setHandler(() => jsonFixture('gemini', 'batch-embed-contents.json'))
    const response = await embed({ model: 'google/gemini-embedding-001', input: QUESTION, input_type: 'search_document', dimensions: 8 })
    expect(response.status).toBe(200)
    const body = await readJson(response)
    expect(body.data.map((item: any) => item.embedding.length)).toEqual([8, 8])
    const sent = h.upstreams['google-ai-studio']!.requests[0]!
    expect(sent.url).toBe('/models/gemini-embedding-001:batchEmbedContents')
    expect(sent.headers['x-goog-api-key']).toBe('sk-shared-google-ai-studio-0123456789abcdef')
    expect(sent.json).toEqual({
      requests: QUESTION.map((text) => ({ model: 'models/gemini-embedding-001', content: { parts: [{ text }] }, taskType: 'RETRIEVAL_DOCUMENT', outputDimensionality: 8 })),
    })
    // Gemini reports no tokens: about one per four characters, priced at $0.15 per million.
    const tokens = Math.ceil(QUESTION[0]!.length / 4) + Math.ceil(QUESTION[1]!.length / 4)
    expect(body.usage).toMatchObject({ prompt_tokens: tokens, total_tokens: tokens, cost: Number((tokens * 1.5e-7).toFixed(12)) })
    const records = await h.gateway.storage.list<any>('generations')
    expect(records.items.map((record) => [record.data.api, record.data.isUsageEstimated])).toEqual([['embeddings', true]])
  })

  it('sends Gemini more than 100 inputs in batches of 100, vectors back in input order and usage summed', async () => {
    const h = await start()
    h.upstreams['google-ai-studio']!.setHandler((request) => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ embeddings: request.json.requests.map((item: any) => ({ values: [Number(item.content.parts[0].text.slice(5)), 0.5] })) }),
    }))
    const input = Array.from({ length: 150 }, (_, index) => `text ${index}`)
    const body = await readJson(await embed({ model: 'google/gemini-embedding-001', input }))
    expect(h.upstreams['google-ai-studio']!.requests.map((request) => request.json.requests.length)).toEqual([100, 50])
    expect(body.data.map((item: any) => [item.index, item.embedding[0]])).toEqual(input.map((_, index) => [index, index]))
    // Two tokens ("text n" is 6 to 8 characters) per input, counted by the gateway since Gemini reports none.
    expect(body.usage.prompt_tokens).toBe(input.reduce((sum, text) => sum + Math.ceil(text.length / 4), 0))
    const generation = (await readJson(await call('GET', `/generation?id=${body.id}`))).data
    expect(generation.provider_responses.map((attempt: any) => attempt.status)).toEqual([200, 200])
  })

  it('tries the workspace BYOK key first and falls back to the shared key', async () => {
    const h = await start()
    await h.addByok({ provider: 'openai', key: 'sk-byok-openai-0123456789abcdef' })
    h.upstreams.openai!.setHandler((request) =>
      request.headers.authorization === 'Bearer sk-byok-openai-0123456789abcdef'
        ? { status: 503, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: { message: 'Overloaded', type: 'server_error' } }) }
        : openAIAnswer(request),
    )
    const body = await readJson(await embed({ model: 'openai/text-embedding-3-small', input: 'Hi' }))
    expect(h.upstreams.openai!.requests.map((request) => request.headers.authorization)).toEqual(['Bearer sk-byok-openai-0123456789abcdef', 'Bearer sk-shared-openai-0123456789abcdef'])
    expect(body.usage.is_byok).toBe(false)
    const generation = (await readJson(await call('GET', `/generation?id=${body.id}`))).data
    expect(generation.provider_responses.map((attempt: any) => [attempt.is_byok, attempt.status])).toEqual([[true, 503], [false, 200]])

    // With the BYOK key answering, the caller pays the gateway's fee only.
    h.upstreams.openai!.setHandler(openAIAnswer)
    const byok = await readJson(await embed({ model: 'openai/text-embedding-3-small', input: 'Hi' }))
    expect(byok.usage).toMatchObject({ is_byok: true, cost: 7e-9, cost_details: { upstream_inference_cost: 1.4e-7 } })
  })

  it('is held to the key\'s limit before any upstream call', async () => {
    const h = await start()
    const created = await h.gateway.admin.createKey({ kind: 'regular', name: 'tiny', limit: 0.000001 })
    h.upstreams.openai!.setHandler(openAIAnswer)
    const response = await call('POST', '/embeddings', { model: 'openai/text-embedding-3-large', input: 'x'.repeat(100_000) }, created.key)
    expect(response.status).toBe(402)
    expect((await readJson(response)).error.metadata).toEqual({ error_type: 'payment_required', limit: 'key' })
    expect(h.upstreams.openai!.requests).toHaveLength(0)
  })

  it('refuses what it would not honour with a 400 naming it', async () => {
    await start()
    const cases: [Record<string, unknown>, string][] = [
      [{ model: 'openai/gpt-4.1-mini', input: 'Hi' }, 'model: "openai/gpt-4.1-mini" is not an embedding model (GET /embeddings/models lists them)'],
      [{ model: 'mistralai/mistral-embed-2312', input: 'Hi', dimensions: 256 }, 'body.dimensions: not supported by any endpoint of mistralai/mistral-embed-2312'],
      [{ model: 'google/gemini-embedding-001', input: [1, 2, 3] }, 'body.input (token ids): not supported by any endpoint of google/gemini-embedding-001'],
      [{ model: 'openai/text-embedding-3-small', input: 'Hi', input_type: 'search_query' }, 'body.input_type: not supported by any endpoint of openai/text-embedding-3-small'],
      [{ model: 'openai/text-embedding-3-small', input: [{ content: [{ type: 'text', text: 'Hi' }] }] }, 'body.input: multimodal content items are not embedded by this gateway; send text or token ids'],
      [{ model: 'openai/text-embedding-3-small', input: '' }, 'body.input: must be a string, an array of strings, an array of token ids or an array of token id arrays'],
      [{ model: 'openai/text-embedding-3-small', input: 'Hi', encoding_format: 'int8' }, 'body.encoding_format: must be "float" or "base64"'],
      [{ model: 'openai/text-embedding-3-small', input: 'Hi', truncate: true }, 'body.truncate: unknown field'],
      [{ model: 'openai/text-embedding-3-small', input: 'Hi', dimensions: 0 }, 'body.dimensions: must be at least 1'],
      [
        { model: 'openai/text-embedding-3-small', input: 'Hi', provider: { sort: 'throughput' } },
        'provider.sort: embeddings write no output tokens, so they have no throughput; sort by latency or price',
      ],
      [
        { model: 'openai/text-embedding-3-small', input: 'Hi', provider: { preferred_min_throughput: 10 } },
        'provider.preferred_min_throughput: embeddings write no output tokens, so they have no throughput; sort by latency or price',
      ],
      [{ model: 'openai/text-embedding-3-small:online', input: 'Hi' }, 'model "openai/text-embedding-3-small:online": the variant ":online" (the web plugin) applies to generations only'],
    ]
    for (const [body, message] of cases) {
      const response = await embed(body)
      expect(await readJson(response), message).toEqual({ error: { code: 400, message } })
    }
    expect(harness!.upstreams.openai!.requests).toHaveLength(0)
    // And an embedding model is refused where text is generated.
    const responses = await harness!.post({ model: 'openai/text-embedding-3-small', input: 'Hi' })
    expect(await readJson(responses)).toEqual({ error: { code: 400, message: 'model: "openai/text-embedding-3-small" is an embedding model; send it to POST /embeddings' } })
  })
})

describe('GET /embeddings/models', () => {
  it('lists the embedding models in the model shape, and only them', async () => {
    await start()
    const response = await harness!.gateway.fetch(new Request('http://gateway.test/api/v1/embeddings/models?offset=0&limit=500'))
    expect(response.status).toBe(200)
    const body = await readJson(response)
    const expected = BUILT_IN_MODELS.filter((entry) => entry.outputModalities?.includes('embeddings')).map((entry) => entry.slug)
    expect(body.data.map((model: any) => model.id)).toEqual(expected)
    expect(expected).toEqual(expect.arrayContaining(['openai/text-embedding-3-small', 'google/gemini-embedding-001', 'mistralai/mistral-embed-2312']))
    expect(body.data[0]).toMatchObject({ architecture: { output_modalities: ['embeddings'] }, pricing: { prompt: '0.00000002', completion: '0' } })
    // Not among the text models GET /models lists by default.
    const text = await readJson(await harness!.gateway.fetch(new Request('http://gateway.test/api/v1/models')))
    expect(text.data.map((model: any) => model.id)).not.toContain('openai/text-embedding-3-small')
  })
})
