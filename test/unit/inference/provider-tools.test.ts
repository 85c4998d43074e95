/**
 * Provider tools (OpenAI's `web_search`, `file_search`, `mcp`…): only an endpoint whose adapter sends that tool
 * type upstream is routed to; when none can take it the request is a 400 naming the tool, never a tool dropped.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture } from '../../helpers/upstream'

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

// Served by Anthropic (cheaper, so first) and by OpenAI's Responses API.
const both: ModelEntry = {
  slug: 'test/both',
  name: 'Both',
  endpoints: [
    { provider: 'anthropic', model: 'claude-test', contextLength: 100_000, pricing: { prompt: 0.000001, completion: 0.000001 } },
    { provider: 'openai', model: 'gpt-test', contextLength: 100_000, pricing: { prompt: 0.000002, completion: 0.000002 } },
  ],
}
const claudeOnly: ModelEntry = { slug: 'test/claude-only', name: 'Claude only', endpoints: [both.endpoints[0]!] }

const serve = async () => {
  harness = await createResponsesHarness({ openai: {}, anthropic: {}, 'google-ai-studio': {} }, { models: [both, claudeOnly] })
  harness.upstreams.openai!.setHandler(() => jsonFixture('openai', 'web-search.json'))
  harness.upstreams.anthropic!.setHandler(() => jsonFixture('anthropic', 'text.json'))
  return harness
}

describe('provider tools in routing', () => {
  it('skips an endpoint whose provider cannot take the tool, and sends it to one that can', async () => {
    await serve()
    const response = await harness!.post({ model: 'test/both', input: 'News?', tools: [{ type: 'web_search' }] })
    expect(response.status).toBe(200)
    expect(harness!.upstreams.anthropic!.requests).toHaveLength(0)
    expect(harness!.upstreams.openai!.requests[0]!.json.tools).toEqual([{ type: 'web_search' }])
    // Without the tool, the cheaper Anthropic endpoint serves.
    expect((await harness!.post({ model: 'test/both', input: 'Hi' })).status).toBe(200)
    expect(harness!.upstreams.anthropic!.requests).toHaveLength(1)
  })

  it('is a 400 naming the tool when no endpoint can take it', async () => {
    await serve()
    for (const [index, tool] of [{ type: 'file_search', vector_store_ids: ['vs_1'] }, { type: 'mcp', server_label: 'x', server_url: 'https://mcp.example/sse' }, { type: 'code_interpreter', container: { type: 'auto' } }].entries()) {
      const tools = [{ type: 'function', name: 'f', parameters: { type: 'object' } }, tool]
      const response = await harness!.post({ model: 'test/claude-only', input: 'x', tools })
      expect(response.status, `tool ${index}`).toBe(400)
      expect((await response.json()).error.message).toBe(`body.tools.1 (type "${tool.type}"): not supported by any endpoint of test/claude-only`)
    }
    const gemini = await harness!.post({ model: 'google/gemini-2.5-flash', input: 'x', tools: [{ type: 'computer_use_preview', display_width: 1, display_height: 1, environment: 'browser' }] })
    expect((await gemini.json()).error.message).toBe('body.tools.0 (type "computer_use_preview"): not supported by any endpoint of google/gemini-2.5-flash')
    expect(harness!.upstreams.anthropic!.requests).toHaveLength(0)
    expect(harness!.upstreams['google-ai-studio']!.requests).toHaveLength(0)
  })
})
