/**
 * modelgate/testing as users get it: the built `dist/testing.js` behind the official `openai` SDK (through its
 * `fetch` option, no socket), and the same kit under node:test in a child process, so both runners are proven.
 */

import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import OpenAI, { RateLimitError } from 'openai'
import type { ResponseStreamEvent } from 'openai/resources/responses/responses'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'

type Kit = typeof import('../../src/testing')

const DIST = new URL('../../dist/testing.js', import.meta.url)
let kit: Kit
let testGateway: Awaited<ReturnType<Kit['createTestGateway']>> | undefined

beforeAll(async () => {
  if (!existsSync(DIST)) throw new Error('dist/ is missing: this test imports the built package, so run `npm run build` first')
  kit = (await import(DIST.href)) as Kit
})

afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

const clientFor = (gateway: NonNullable<typeof testGateway>) =>
  new OpenAI({ fetch: gateway.fetch, baseURL: gateway.baseURL, apiKey: gateway.regularKey, maxRetries: 0 })

describe('modelgate/testing behind the openai SDK', () => {
  it('answers responses.create with the scripted text and usage', async () => {
    const model = kit.scriptedProvider({ reply: [{ type: 'text', text: ['Hello', ' from the kit'] }, { type: 'usage', inputTokens: 9, outputTokens: 4 }] })
    testGateway = await kit.createTestGateway({ providers: { scripted: model } })
    const response = await clientFor(testGateway).responses.create({ model: kit.TEST_MODEL, input: 'Say hello' })
    expect(response.output_text).toBe('Hello from the kit')
    expect(response.usage).toMatchObject({ input_tokens: 9, output_tokens: 4, total_tokens: 13 })
    expect(model.lastCall).toMatchObject({ input: 'Say hello', stream: false })
  })

  it('streams a chunked tool call the SDK assembles, and records the tools the model was given', async () => {
    const model = kit.scriptedProvider({
      reply: [
        { type: 'reasoning', summary: 'Needs the weather' },
        { type: 'function_call', name: 'get_weather', arguments: ['{"city"', ':"Paris"}'], callId: 'call_weather' },
      ],
    })
    testGateway = await kit.createTestGateway({ providers: { scripted: model } })
    const tools = [{ type: 'function' as const, name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false }]
    const stream = clientFor(testGateway).responses.stream({ model: kit.TEST_MODEL, input: 'Weather in Paris?', tools })
    const types: Array<ResponseStreamEvent['type']> = []
    for await (const event of stream) types.push(event.type)
    const final = await stream.finalResponse()
    expect(final.output.at(-1)).toMatchObject({ type: 'function_call', name: 'get_weather', call_id: 'call_weather', arguments: '{"city":"Paris"}' })
    expect(types).toContain('response.function_call_arguments.delta')
    expect(types).toContain('response.reasoning_summary_text.delta')
    expect(types.at(-1)).toBe('response.completed')
    expect(model.lastCall).toMatchObject({ stream: true, tools: [{ name: 'get_weather' }] })
  })

  it('turns a scripted 429 into the SDK RateLimitError, and falls back when a second provider answers', async () => {
    const limited = kit.scriptedProvider({ reply: [{ type: 'http_error', status: 429, message: 'Slow down', retryAfter: 30 }] })
    testGateway = await kit.createTestGateway({ providers: { limited } })
    const failure = await clientFor(testGateway).responses.create({ model: kit.TEST_MODEL, input: 'hi' }).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(RateLimitError)
    expect((failure as RateLimitError).headers.get('retry-after')).toBe('30')
    await testGateway.close()

    testGateway = await kit.createTestGateway({ providers: { limited, spare: kit.scriptedProvider({ reply: 'From the spare' }) } })
    const response = await clientFor(testGateway).responses.create({ model: kit.TEST_MODEL, input: 'hi' })
    expect(response.output_text).toBe('From the spare')
  })
})

describe('modelgate/testing under node:test', () => {
  it('passes a node:test file run with node --test', async () => {
    const file = fileURLToPath(new URL('./fixtures/testing-kit.node-test.mjs', import.meta.url))
    const child = spawn(process.execPath, ['--test', '--test-reporter=tap', file], { stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    expect(code, output).toBe(0)
    expect(output).toMatch(/^# pass 2$/m)
    expect(output).toMatch(/^# fail 0$/m)
  })
})
