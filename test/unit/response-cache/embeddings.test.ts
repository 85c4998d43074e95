/**
 * The response cache on `/embeddings` (its own path, outside the request stages): a repeated request is answered
 * with the stored vectors and the hit's usage and recorded as a hit; another input or a TTL of 0 runs upstream; an
 * operator's hit charge is what the hit costs.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { readJson } from '../../helpers/gateway'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import type { RecordedRequest, UpstreamReply } from '../../helpers/upstream'

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const answer = (request: RecordedRequest): UpstreamReply => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    object: 'list',
    data: (request.json.input as unknown[]).map((_, index) => ({ object: 'embedding', index, embedding: [index, 0.25, Math.random()] })),
    model: request.json.model,
    usage: { prompt_tokens: 7, total_tokens: 7 },
  }),
})

const embed = (body: Record<string, unknown>, headers: Record<string, string> = { 'x-modelgate-cache-ttl': '60' }, key = harness!.key) =>
  harness!.gateway.fetch(
    new Request('http://gateway.test/api/v1/embeddings', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    }),
  )

const MODEL = 'openai/text-embedding-3-small'

describe('the response cache on /embeddings', () => {
  it('answers a repeated request with the stored vectors, no upstream call, and records the hit', async () => {
    harness = await createResponsesHarness({ openai: {} }, { responseCache: { hitCharge: 0.0001 } })
    harness.upstreams.openai!.setHandler(answer)
    const first = await embed({ model: MODEL, input: ['Paris is the capital of France.'] })
    expect(first.headers.get('x-modelgate-cache')).toBe('miss')
    const stored = await readJson(first)
    const second = await embed({ model: MODEL, input: ['Paris is the capital of France.'] })
    expect(second.headers.get('x-modelgate-cache')).toBe('hit')
    expect(second.headers.get('x-modelgate-cache-age')).toBe('0')
    const hit = await readJson(second)
    expect(hit.data).toEqual(stored.data)
    expect(hit.id).not.toBe(stored.id)
    expect(hit.usage).toMatchObject({ prompt_tokens: 7, cost: 0.0001, is_cache_hit: true, cost_details: { upstream_inference_cost: 0 } })
    expect(harness.upstreams.openai!.requests).toHaveLength(1)

    const other = await embed({ model: MODEL, input: ['Madrid is the capital of Spain.'] })
    expect(other.headers.get('x-modelgate-cache')).toBe('miss')
    const bypassed = await embed({ model: MODEL, input: ['Paris is the capital of France.'] }, { 'x-modelgate-cache-ttl': '0' })
    expect(bypassed.headers.get('x-modelgate-cache')).toBe('bypass')
    expect(harness.upstreams.openai!.requests).toHaveLength(3)

    const generation = await readJson(
      await harness.gateway.fetch(new Request(`http://gateway.test/api/v1/generation?id=${hit.id}`, { headers: { authorization: `Bearer ${harness.managementKey}` } })),
    )
    expect(generation.data).toMatchObject({ api_type: 'embeddings', response_cache_source_id: expect.any(String), total_cost: 0.0001, provider_responses: [] })
  })
})
