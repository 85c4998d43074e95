/**
 * Events an OpenAI Responses upstream sent are relayed as it wrote them (src/providers/openai-responses/as-sent.ts).
 * When the gateway moves such an event to another output index (a fusion judge after the fusion item), the moved
 * event must keep every field the upstream sent, not only its type.
 */

import { afterEach, expect, it } from 'vitest'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { assertValidEventSequence } from '../../helpers/stream-events'
import { jsonFixture, sseFixture } from '../../helpers/upstream'

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

it("keeps every field of an OpenAI Responses upstream's events when fusion shifts the judge's output", async () => {
  harness = await createResponsesHarness({ openai: {} })
  harness.upstreams.openai!.setHandler((request) => (request.json.stream ? sseFixture('openai', 'text.sse') : jsonFixture('openai', 'text.json')))
  const body = { model: 'openai/gpt-4.1', input: 'hi', stream: true, plugins: [{ id: 'fusion', analysis_models: ['openai/gpt-4.1', 'openai/gpt-4.1-mini'] }] }
  const { events } = await readSseEvents(await harness.post(body))
  const payloads = events.map((event) => event.data)
  assertValidEventSequence(payloads)
  const deltas = payloads.filter((payload) => payload.type === 'response.output_text.delta')
  expect(deltas.length).toBeGreaterThan(0)
  for (const delta of deltas) {
    expect(delta).toMatchObject({ output_index: 1, content_index: 0, item_id: expect.stringMatching(/^msg_/), delta: expect.any(String) })
  }
  expect(deltas.map((delta) => delta.delta).join('')).toBe(payloads.at(-2).response.output[1].content[0].text)
})

it('gives the fields of an event kept as its upstream text, and of one built by an adapter, as a plain copy', async () => {
  const { readAsSent } = await import('../../../src/providers/openai-responses/as-sent')
  const { itemEventFields } = await import('../../../src/providers/events')
  const { TextDeltaEvent } = await import('../../../src/providers/shared/text-delta-event')
  const asSent = readAsSent('{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"The","logprobs":[]}')!
  const fields = { type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'The', logprobs: [] }
  expect(itemEventFields(asSent)).toEqual(fields)
  expect(itemEventFields(new TextDeltaEvent('msg_1', 0, 0, 'The'))).toEqual(fields)
  // A copy: changing it leaves the event and its wire text as they were.
  const copy = itemEventFields(asSent) as unknown as { delta: string }
  copy.delta = 'changed'
  expect(asSent.wireJson).toContain('"delta":"The"')
})
