/**
 * The semantic cache: a workspace that opted in has a request close in meaning to a stored one answered from it, an
 * unrelated one run upstream; the embeddings come from a scripted embedding upstream through the gateway's own
 * embeddings path, and `service_metadata` shows the model and threshold. A workspace cannot opt in on a gateway that
 * names no embedding model.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { readJson } from '../../helpers/gateway'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import { embeddingsOrTextUpstream } from '../../helpers/upstream'

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const EMBEDDING_MODEL = 'openai/text-embedding-3-small'
const MODEL = 'openai/gpt-4.1-mini'

/** Scripted vectors: questions about France's capital point one way, anything else another. */
const vectorOf = (text: string): number[] => {
  if (/capital/i.test(text) && /france/i.test(text)) return /city/i.test(text) ? [0.98, 0.2, 0] : [1, 0, 0]
  return [0, 0, 1]
}

const scripted = embeddingsOrTextUpstream(vectorOf)

const manage = (h: ResponsesHarness, method: string, path: string, body: unknown) =>
  h.gateway.fetch(
    new Request(`http://gateway.test/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${h.managementKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  )

const ask = (h: ResponsesHarness, input: string) => h.post({ model: MODEL, input }, { 'x-service-metadata': 'enabled' })

const embeddingCalls = (h: ResponsesHarness) => h.upstreams.openai!.requests.filter((request) => request.url.endsWith('/embeddings')).length
const answerCalls = (h: ResponsesHarness) => h.upstreams.openai!.requests.filter((request) => !request.url.endsWith('/embeddings')).length

describe('the semantic cache', () => {
  it('answers a near duplicate from the cache and runs an unrelated request, showing its model and threshold', async () => {
    const h = (harness = await createResponsesHarness({ openai: {} }, { responseCache: { semantic: { model: EMBEDDING_MODEL, threshold: 0.9 } } }))
    h.upstreams.openai!.setHandler(scripted)
    const updated = await manage(h, 'PATCH', '/workspaces/default', { cache: { ttl_seconds: 600, semantic: true } })
    expect(updated.status).toBe(200)
    expect((await readJson(updated)).data.cache).toEqual({ ttl_seconds: 600, semantic: true })

    const first = await ask(h, 'What is the capital of France?')
    expect(first.headers.get('x-modelgate-cache')).toBe('miss')
    const original = await readJson(first)
    expect(original.service_metadata.response_cache).toEqual({ status: 'miss', semantic: { model: EMBEDDING_MODEL, threshold: 0.9 } })
    expect(answerCalls(h)).toBe(1)

    const near = await ask(h, 'Which city is the capital of France?')
    expect(near.headers.get('x-modelgate-cache')).toBe('hit')
    const served = await readJson(near)
    expect(served.output).toEqual(original.output.map((item: { id: string }) => ({ ...item, id: expect.any(String) })))
    expect(served.service_metadata.response_cache).toEqual({ status: 'hit', age_seconds: 0, semantic: { model: EMBEDDING_MODEL, threshold: 0.9, similarity: expect.any(Number) } })
    expect(served.service_metadata.response_cache.semantic.similarity).toBeGreaterThanOrEqual(0.9)
    expect(answerCalls(h)).toBe(1)

    const unrelated = await ask(h, 'Write a haiku about the sea.')
    expect(unrelated.headers.get('x-modelgate-cache')).toBe('miss')
    expect(answerCalls(h)).toBe(2)
    // Each lookup embedded its prompt once, through the gateway's embeddings path; an exact hit embeds nothing.
    expect(embeddingCalls(h)).toBe(3)
    expect((await ask(h, 'What is the capital of France?')).headers.get('x-modelgate-cache')).toBe('hit')
    expect(embeddingCalls(h)).toBe(3)
  })

  it('compares only requests of the same shape: another model misses', async () => {
    const h = (harness = await createResponsesHarness({ openai: {} }, { responseCache: { semantic: { model: EMBEDDING_MODEL, threshold: 0.9 } } }))
    h.upstreams.openai!.setHandler(scripted)
    await manage(h, 'PATCH', '/workspaces/default', { cache: { ttl_seconds: 600, semantic: true } })
    await ask(h, 'What is the capital of France?')
    const other = await h.post({ model: MODEL, input: 'Which city is the capital of France?', temperature: 0.1 })
    expect(other.headers.get('x-modelgate-cache')).toBe('miss')
  })

  it('is refused by name on a gateway that names no embedding model for it', async () => {
    const h = (harness = await createResponsesHarness({ openai: {} }))
    const refused = await manage(h, 'PATCH', '/workspaces/default', { cache: { ttl_seconds: 600, semantic: true } })
    expect(refused.status).toBe(400)
    expect((await readJson(refused)).error.message).toContain('body.cache.semantic')
  })
})
