/**
 * Background responses through the `openai` SDK (docs/decisions.md, Background runs): `responses.create` with
 * `background: true` answers queued and the run goes on without the client; `responses.retrieve` polls it to
 * `completed`; `responses.cancel` stops a run whose upstream is still answering; a background stream is resumed with
 * `responses.retrieve(id, { stream: true, starting_after })`. Every object meets the Open Responses schema.
 */

import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectOpenResponsesObject } from '../helpers/open-responses'
import { createSdkHarness, FAMILIES, type RunningGateway } from '../helpers/sdk-gateway'
import { sseFixture } from '../helpers/upstream'

const harness = createSdkHarness()
let running: RunningGateway
let client: OpenAI

const MODEL = FAMILIES.openai.model

beforeAll(async () => {
  await harness.start()
  running = await harness.startGateway({ storedResponses: { sweepIntervalMs: false, background: { sweepIntervalMs: false, flushIntervalMs: 5 } } })
  client = new OpenAI({ baseURL: running.url, apiKey: running.key, maxRetries: 0 })
})
afterAll(() => harness.close())

/** Waits for the run's end by following its event stream, which ends with the run. */
const runEnded = async (id: string) => {
  for await (const event of await client.responses.retrieve(id, { stream: true })) void event
}

describe('background responses through the openai SDK', () => {
  it('answers queued, then retrieve polls the run to completed', async () => {
    const queued = await client.responses.create({ model: MODEL, input: 'What is the capital of France?', background: true })
    expect(queued.status).toBe('queued')
    expect(queued.background).toBe(true)
    expectOpenResponsesObject(queued)
    const polled = await client.responses.retrieve(queued.id)
    expect(['queued', 'in_progress', 'completed']).toContain(polled.status)
    await runEnded(queued.id)
    const done = await client.responses.retrieve(queued.id)
    expect(done.status).toBe('completed')
    expect(done.output_text).toContain(FAMILIES.openai.textPhrase)
    expectOpenResponsesObject(done)
  })

  it('cancels a run whose upstream is still answering, and stops that upstream call', async () => {
    let reached!: () => void
    const upstreamReached = new Promise<void>((resolve) => (reached = resolve))
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    harness.overrides.openai = () => {
      reached()
      return { ...sseFixture('openai', 'text.sse'), pause: { after: 2, until: held } }
    }
    const queued = await client.responses.create({ model: MODEL, input: 'Hold on', background: true })
    await upstreamReached
    const upstreamStopped = harness.upstreams.openai.nextClientAbort()
    const cancelled = await client.responses.cancel(queued.id)
    expect(cancelled.status).toBe('cancelled')
    expectOpenResponsesObject(cancelled)
    await upstreamStopped
    expect((await client.responses.retrieve(queued.id)).status).toBe('cancelled')
    release()
    harness.clearOverrides()
  })

  it('resumes a background stream after the last event read', async () => {
    const stream = await client.responses.create({ model: MODEL, input: 'What is the capital of France?', background: true, stream: true })
    let id = ''
    let last = -1
    for await (const event of stream) {
      if (event.type === 'response.created') {
        expect(event.response.status).toBe('queued')
        id = event.response.id
      }
      last = event.sequence_number
      if (last >= 2) break
    }
    const rest: Array<{ type: string; sequence_number: number }> = []
    for await (const event of await client.responses.retrieve(id, { stream: true, starting_after: last })) rest.push(event)
    expect(rest[0]!.sequence_number).toBe(last + 1)
    expect(rest.at(-1)!.type).toBe('response.completed')
  })
})
