/** The inference routes refuse a top-level field they do not declare, naming it, and call no upstream. */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, scriptedProvider, TEST_MODEL, type ScriptedProvider, type TestGateway } from '../../../src/testing'

let harness: TestGateway | undefined
let provider: ScriptedProvider
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

describe('unknown top-level fields', () => {
  it.each([
    ['/responses', { model: TEST_MODEL, input: 'hi', bogus: 1 }],
    ['/chat/completions', { model: TEST_MODEL, messages: [{ role: 'user', content: 'hi' }], bogus: 1 }],
    ['/messages', { model: TEST_MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], bogus: 1 }],
  ])('%s answers 400 body.bogus: unknown field', async (path, body) => {
    provider = scriptedProvider({ reply: 'hi' })
    harness = await createTestGateway({ providers: { alpha: provider } })
    const response = await harness.call('POST', path, { key: harness.regularKey, json: body })
    expect(response.status).toBe(400)
    expect(JSON.stringify(await response.json())).toContain('body.bogus: unknown field')
    expect(provider.calls).toHaveLength(0)
  })
})
