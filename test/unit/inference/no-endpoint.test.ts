/**
 * "No endpoint" answers say why: a provider without any key names the variable the runner reads and BYOK, while
 * endpoints filtered out by the caller's preferences keep their own message. Neither is a 5xx that SDKs would retry.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createGateway } from '../../../src/gateway/gateway'
import { silentLogger } from '../../../src/core/logger'
import type { ModelEntry } from '../../../src/engine/models'
import { memoryStorage } from '../../../src/storage/memory'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture } from '../../helpers/upstream'

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const PRICING = { prompt: 0.000001, completion: 0.000002 }
const TWO_PROVIDERS: ModelEntry[] = [
  {
    slug: 'test/model',
    name: 'Test model',
    endpoints: [
      { provider: 'groq', model: 'groq-model', contextLength: 8192, pricing: PRICING },
      { provider: 'my-vllm', model: 'local-model', contextLength: 8192, pricing: PRICING },
    ],
  },
]

describe('no endpoint for lack of a key', () => {
  it('names OPENAI_API_KEY and BYOK when a bare gateway is asked for its default model', async () => {
    const gateway = createGateway({ storage: memoryStorage(), logger: silentLogger })
    const { key } = await gateway.admin.createKey({ kind: 'regular' })
    const response = await gateway.fetch(
      new Request('http://gateway.test/api/v1/responses', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ input: 'hi' }),
      }),
    )
    expect(response.status).toBe(404)
    expect(await response.json()).toEqual({
      error: {
        code: 404,
        message:
          'No provider key for openai/gpt-4.1-mini: the gateway has none for OpenAI (set OPENAI_API_KEY, or providers.openai.apiKey) ' +
          'and this workspace has no BYOK credential that applies (POST /byok with provider "openai")',
        metadata: { error_type: 'not_found' },
      },
    })
  })

  it('names every provider that lacks one, with the runner variable of a provider that has no conventional name', async () => {
    harness = await createResponsesHarness({ groq: { apiKey: null }, 'my-vllm': { api: 'openai-chat', apiKey: null } }, { models: TWO_PROVIDERS })
    const response = await harness.post({ model: 'test/model', input: 'hi' })
    expect(response.status).toBe(404)
    expect((await response.json()).error.message).toBe(
      'No provider key for test/model: the gateway has none for Groq or my-vllm (set GROQ_API_KEY or MODELGATE_PROVIDER_MY_VLLM_API_KEY, ' +
        'or providers.<id>.apiKey) and this workspace has no BYOK credential that applies (POST /byok with provider "groq" or "my-vllm")',
    )
  })

  it('serves once the workspace has a BYOK key for one of them', async () => {
    harness = await createResponsesHarness({ groq: { apiKey: null }, 'my-vllm': { api: 'openai-chat', apiKey: null } }, { models: TWO_PROVIDERS })
    await harness.addByok({ provider: 'groq', key: 'byok-groq-key-0123456789' })
    harness.upstreams.groq!.setHandler(() => jsonFixture('openai-chat', 'text.json'))
    expect((await harness.post({ model: 'test/model', input: 'hi' })).status).toBe(200)
  })

  it('keeps the preferences message when the preferences left no endpoint', async () => {
    harness = await createResponsesHarness({ groq: { apiKey: null }, 'my-vllm': { api: 'openai-chat', apiKey: null } }, { models: TWO_PROVIDERS })
    const response = await harness.post({ model: 'test/model', input: 'hi', provider: { only: ['anthropic'] } })
    expect(response.status).toBe(404)
    expect((await response.json()).error.message).toBe(
      'No endpoints found for test/model that match the provider preferences and available credentials',
    )
  })
})
