/**
 * One access log line per model request, written from what the engine reported: whole answers, streams,
 * failures before any content (with what is known) and failures after content.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import type { LogLevel } from '../../../src/core/logger'
import { createRecordingLogger, type RecordingLogger } from '../../helpers/logger'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture, sseFixture } from '../../helpers/upstream'

const PRICING = { prompt: 0.000001, completion: 0.000002 }
const MODELS: ModelEntry[] = [
  { slug: 'test/model', name: 'Test model', endpoints: [{ provider: 'alpha', model: 'alpha-model', contextLength: 8192, pricing: PRICING }] },
]

let harness: ResponsesHarness | undefined
let log: RecordingLogger
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const start = async (keeps: (level: LogLevel) => boolean = () => true) => {
  log = createRecordingLogger()
  harness = await createResponsesHarness({ alpha: { api: 'openai-chat' } }, { models: MODELS, logger: { ...log.logger, isEnabled: keeps } })
  return harness.upstreams.alpha!
}

const accessLines = () => log.entries.filter((entry) => entry.level === 'info' && entry.message === 'access').map((entry) => entry.fields!)

const keyHashPrefix = async () => {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(harness!.key)))
  return Array.from(digest.subarray(0, 4), (byte) => byte.toString(16).padStart(2, '0')).join('')
}

describe('the access log', () => {
  it('is not built for a logger that drops info entries', async () => {
    const alpha = await start((level) => level === 'warn' || level === 'error')
    alpha.setHandler(() => jsonFixture('openai-chat', 'text.json'))
    const whole = await harness!.post({ model: 'test/model', input: 'hi' })
    alpha.setHandler(() => sseFixture('openai-chat', 'text.sse'))
    const streamed = await harness!.post({ model: 'test/model', input: 'hi', stream: true })
    await readSseEvents(streamed)

    expect(whole.status).toBe(200)
    expect(accessLines()).toEqual([])
  })

  it('writes one line for a whole answer: caller, models, provider, tokens, cost, latency', async () => {
    const alpha = await start()
    alpha.setHandler(() => jsonFixture('openai-chat', 'text.json'))
    const response = await harness!.post({ model: 'test/model', input: 'hi' })
    expect(response.status).toBe(200)
    const body = await response.json()
    const lines = accessLines()
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({
      requestId: response.headers.get('x-request-id'),
      method: 'POST',
      path: '/api/v1/responses',
      status: 200,
      keyHash: await keyHashPrefix(),
      model: 'test/model',
      servedModel: 'test/model',
      provider: 'alpha',
      attempts: 1,
      isByok: false,
      inputTokens: body.usage.input_tokens,
      outputTokens: body.usage.output_tokens,
      cost: body.usage.cost,
      finish: 'completed',
    })
    expect(lines[0]!.workspaceId).toBeTypeOf('string')
    expect(lines[0]!.latencyMs).toBeTypeOf('number')
    expect(lines[0]!.errorType).toBeUndefined()
    expect(log.text()).not.toContain(harness!.key)
  })

  it('writes one line for a stream once it ends, with the time to first token', async () => {
    const alpha = await start()
    alpha.setHandler(() => sseFixture('openai-chat', 'text.sse'))
    const response = await harness!.post({ model: 'test/model', input: 'hi', stream: true })
    const { events } = await readSseEvents(response)
    const completed = events.at(-2)!.data.response
    const lines = accessLines()
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({
      status: 200,
      model: 'test/model',
      servedModel: 'test/model',
      provider: 'alpha',
      attempts: 1,
      inputTokens: completed.usage.input_tokens,
      outputTokens: completed.usage.output_tokens,
      cost: completed.usage.cost,
      finish: 'completed',
    })
    expect(lines[0]!.timeToFirstTokenMs).toBeTypeOf('number')
    expect(lines[0]!.timeToFirstTokenMs as number).toBeLessThanOrEqual(lines[0]!.latencyMs as number)
  })

  it('writes what is known of a request that failed before any content (502 whole, 401)', async () => {
    const alpha = await start()
    alpha.setHandler(() => jsonFixture('openai-chat', 'error-overloaded.json', 503))
    const failed = await harness!.post({ model: 'test/model', input: 'hi' })
    expect(failed.status).toBe(529)
    expect(accessLines()).toHaveLength(1)
    expect(accessLines()[0]).toMatchObject({ status: 529, model: 'test/model', finish: 'failed', errorType: 'provider_overloaded', keyHash: await keyHashPrefix() })

    const refused = await harness!.post({ model: 'test/model', input: 'hi' }, { authorization: 'Bearer sk-not-a-key' })
    expect(refused.status).toBe(401)
    expect(accessLines()).toHaveLength(2)
    expect(accessLines()[1]).toMatchObject({ status: 401, path: '/api/v1/responses', finish: 'failed' })
    expect(accessLines()[1]!.keyHash).toBeUndefined()
  })

  it('writes a failed finish for a stream that failed after content', async () => {
    const alpha = await start()
    alpha.setHandler(() => sseFixture('openai-chat', 'error-midstream.sse'))
    const response = await harness!.post({ model: 'test/model', input: 'hi', stream: true })
    const { events } = await readSseEvents(response)
    const failed = events.at(-2)!.data.response
    expect(failed.status).toBe('failed')
    const lines = accessLines()
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ status: 200, provider: 'alpha', finish: 'failed', errorType: failed.error_type })
    expect(lines[0]!.timeToFirstTokenMs).toBeTypeOf('number')
  })
})
