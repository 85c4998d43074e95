/**
 * Where the semantic cache compares: on the gateway's similarity worker, and when that worker fails the request is
 * not failed with it: the semantic lookup is a miss, logged, and the request runs upstream. The worker here is one
 * that dies on every comparison (test/fixtures/workers/crashing-worker.mjs).
 */

import { afterEach, describe, expect, it, vi } from 'vitest'
import { createRecordingLogger } from '../../helpers/logger'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import { embeddingsOrTextUpstream } from '../../helpers/upstream'
import type { SimilarityPool } from '../../../src/workers/similarity-pool'

const pools: SimilarityPool[] = []
let workerUrl: URL | undefined

vi.mock('../../../src/workers/similarity-pool', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../../src/workers/similarity-pool')>()
  return {
    ...original,
    createSimilarityPool: () => {
      const pool = original.createSimilarityPool(workerUrl ? { workerUrl } : {})
      pools.push(pool)
      return pool
    },
  }
})

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
  pools.length = 0
  workerUrl = undefined
})

const EMBEDDING_MODEL = 'openai/text-embedding-3-small'
const MODEL = 'openai/gpt-4.1-mini'

const scripted = embeddingsOrTextUpstream(() => [1, 0, 0])

const start = async (logger = createRecordingLogger().logger) => {
  const h = (harness = await createResponsesHarness({ openai: {} }, { logger, responseCache: { semantic: { model: EMBEDDING_MODEL, threshold: 0.9 } } }))
  h.upstreams.openai!.setHandler(scripted)
  const updated = await h.gateway.fetch(
    new Request('http://gateway.test/api/v1/workspaces/default', {
      method: 'PATCH',
      headers: { authorization: `Bearer ${h.managementKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ cache: { ttl_seconds: 600, semantic: true } }),
    }),
  )
  expect(updated.status).toBe(200)
  return h
}

const answerCalls = (h: ResponsesHarness) => h.upstreams.openai!.requests.filter((request) => !request.url.endsWith('/embeddings')).length

describe('the semantic cache\'s comparison', () => {
  it('runs on the gateway\'s similarity worker', async () => {
    const h = await start()
    expect(pools).toHaveLength(0)
    expect((await h.post({ model: MODEL, input: 'What is the capital of France?' })).headers.get('x-modelgate-cache')).toBe('miss')
    expect((await h.post({ model: MODEL, input: 'Which city is the capital of France?' })).headers.get('x-modelgate-cache')).toBe('hit')
    expect(pools).toHaveLength(1)
    // The first request had no candidate to compare with; the second was compared on the worker.
    expect(pools[0]!.stats()).toMatchObject({ threads: 1, completed: 1, failed: 0 })
  })

  it('is a semantic miss, logged, when the worker fails: the request runs upstream', async () => {
    workerUrl = new URL('../../fixtures/workers/crashing-worker.mjs', import.meta.url)
    const recording = createRecordingLogger()
    const h = await start(recording.logger)
    expect((await h.post({ model: MODEL, input: 'What is the capital of France?' })).headers.get('x-modelgate-cache')).toBe('miss')
    const near = await h.post({ model: MODEL, input: 'Which city is the capital of France?' })
    expect(near.status).toBe(200)
    expect(near.headers.get('x-modelgate-cache')).toBe('miss')
    expect(answerCalls(h)).toBe(2)
    expect(pools[0]!.stats()).toMatchObject({ completed: 0, failed: 1 })
    expect(recording.entries.some((entry) => entry.level === 'warn' && entry.message === 'response cache: semantic lookup failed')).toBe(true)
  })
})
