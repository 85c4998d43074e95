/**
 * A server-tool loop streamed from an OpenAI Responses upstream: the second turn's events are relayed as the
 * upstream wrote them (src/providers/openai-responses/as-sent.ts) and renumbered past the first turn's items, so
 * every field must survive the move (src/providers/events.ts, `itemEventFields`). The scripted provider's events
 * are plain objects and could not show it; this drives the real adapter from a loopback upstream.
 */

import { afterAll, afterEach, beforeAll, expect, it } from 'vitest'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { assertValidEventSequence } from '../../helpers/stream-events'
import { sseFixture, startSearxngFixture, type Upstream } from '../../helpers/upstream'

let engine: Upstream
let harness: ResponsesHarness | undefined
beforeAll(async () => (engine = await startSearxngFixture()))
afterAll(() => engine.close())
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

/** OpenAI's Responses stream of one function call, in OpenAI's own compact layout. */
const functionCallStream = (name: string, args: string): { status: number; headers: Record<string, string>; body: string } => {
  const item = { id: 'fc_1', type: 'function_call', status: 'in_progress', arguments: '', call_id: 'call_1', name }
  const events = [
    { type: 'response.output_item.added', output_index: 0, item },
    { type: 'response.function_call_arguments.delta', item_id: 'fc_1', output_index: 0, delta: args },
    { type: 'response.function_call_arguments.done', item_id: 'fc_1', output_index: 0, arguments: args },
    { type: 'response.output_item.done', output_index: 0, item: { ...item, status: 'completed', arguments: args } },
    {
      type: 'response.completed',
      response: { id: 'resp_1', object: 'response', status: 'completed', output: [], usage: { input_tokens: 20, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 25 } },
    },
  ]
  const body = events.map(({ type, ...fields }, index) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: index, ...fields })}\n\n`).join('')
  return { status: 200, headers: { 'content-type': 'text/event-stream' }, body }
}

it('streams the turn after a web search with every field the upstream sent, renumbered after the search', async () => {
  harness = await createResponsesHarness({ openai: {} }, { serverTools: { webSearch: { searxng: { baseURL: `${engine.url}/` } } } })
  let calls = 0
  harness.upstreams.openai!.setHandler(() => (calls++ === 0 ? functionCallStream('service_web_search', '{"query":"tides in Brest"}') : sseFixture('openai', 'text.sse')))
  const { events } = await readSseEvents(await harness.post({ model: 'openai/gpt-4.1', input: 'Tides in Brest?', tools: [{ type: 'service:web_search' }], stream: true }))
  const payloads = events.map((event) => event.data).filter((payload) => payload !== '[DONE]')
  assertValidEventSequence(payloads)
  expect(calls).toBe(2)
  const final = payloads.at(-1).response
  expect(final.status).toBe('completed')
  const messageIndex = final.output.findIndex((item: { type: string }) => item.type === 'message')
  expect(messageIndex).toBeGreaterThan(0)
  const deltas = payloads.filter((payload) => payload.type === 'response.output_text.delta')
  expect(deltas.length).toBeGreaterThan(0)
  for (const delta of deltas) {
    expect(delta).toMatchObject({ output_index: messageIndex, content_index: 0, item_id: final.output[messageIndex].id, delta: expect.any(String) })
  }
  expect(deltas.map((delta) => delta.delta).join('')).toBe(final.output[messageIndex].content[0].text)
})
