/**
 * `service:experimental__search_models`: the model searches the gateway's catalog; it reads, and the client's item
 * shows, each model found with its id, name, context length, prices and modalities, whole and streamed.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, readEvents, scriptedProvider, type ScriptedCall, type ScriptedReply, type TestGateway } from '../../../src/testing'
import { assertValidEventSequence } from '../../helpers/stream-events'

let testGateway: TestGateway | undefined
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

const endpoint = (provider: string, contextLength: number, prompt: number, completion: number) => ({ provider, model: 'm', contextLength, pricing: { prompt, completion } })
const MODELS = [
  { slug: 'zephyrlabs/zephyr-vision-pro', name: 'Zephyr Vision Pro', description: 'Reads images and long documents.', inputModalities: ['text', 'image'] as const, endpoints: [endpoint('scripted', 200_000, 0.000003, 0.000015), endpoint('scripted', 400_000, 0.000005, 0.00002)] },
  { slug: 'zephyrlabs/zephyr-mini', name: 'Zephyr Mini', description: 'A small fast text model for autocompletion of tooltips.', endpoints: [endpoint('scripted', 32_000, 0.0000001, 0.0000004)] },
]
const VISION_PRO = {
  id: 'zephyrlabs/zephyr-vision-pro',
  name: 'Zephyr Vision Pro',
  context_length: 400_000,
  pricing: { prompt: 3, completion: 15 },
  input_modalities: ['text', 'image'],
  output_modalities: ['text'],
}
const MINI = { id: 'zephyrlabs/zephyr-mini', name: 'Zephyr Mini', context_length: 32_000, pricing: { prompt: 0.1, completion: 0.4 }, input_modalities: ['text'], output_modalities: ['text'] }

const searchCall = (query: string, callId = 'call_models') => ({ type: 'function_call' as const, name: 'service_experimental__search_models', arguments: JSON.stringify({ query }), callId })
const serve = async (replies: ScriptedReply[]) => {
  const model = scriptedProvider({ replies })
  testGateway = await createTestGateway({ providers: { scripted: model }, models: MODELS as never })
  return model
}
const resultsOf = (call: ScriptedCall) =>
  (call.input as Array<Record<string, unknown>>).filter((item) => item.type === 'function_call_output').map((item) => String(item.output))

describe('service:experimental__search_models', () => {
  it('finds models by name with typos and prefixes, best first, and shows them in its item', async () => {
    const model = await serve([[searchCall('zephir visi')], 'Zephyr Vision Pro reads images.'])
    const response = await testGateway!.responses({ input: 'Which model reads images?', tools: [{ type: 'service:experimental__search_models', parameters: { max_results: 2 } }] })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(model.calls[0]!.tools).toEqual([expect.objectContaining({ type: 'function', name: 'service_experimental__search_models' })])
    const [result] = resultsOf(model.calls[1]!)
    expect(JSON.parse(result!)).toEqual([VISION_PRO, MINI])
    expect(body.output[0]).toEqual({
      type: 'service:experimental__search_models',
      id: expect.stringMatching(/^sm_/),
      status: 'completed',
      query: 'zephir visi',
      arguments: '{"query":"zephir visi"}',
      models: [VISION_PRO, MINI],
    })
    expect(body.usage.server_tool_use_details).toEqual({ tool_calls_requested: 1, tool_calls_executed: 1, web_search_requests: 0 })
  })

  it('searches descriptions, gives at most max_results, and says when nothing matches', async () => {
    const model = await serve([[searchCall('tooltip', 'c1'), searchCall('qqxqzz', 'c2'), searchCall('zephyr', 'c3')], 'ok'])
    await testGateway!.responses({ input: 'hi', tools: [{ type: 'service:experimental__search_models', parameters: { max_results: 1 } }] })
    const [small, nothing, zephyr] = resultsOf(model.calls[1]!)
    expect(JSON.parse(small!)).toEqual([MINI])
    expect(nothing).toBe('No models match "qqxqzz".')
    expect(JSON.parse(zephyr!)).toHaveLength(1)
  })

  it('streams its item in place of the call, as the whole answer has it', async () => {
    await serve([[searchCall('vision')], 'ok', [searchCall('vision')], 'ok'])
    const tools = [{ type: 'service:experimental__search_models' }]
    const wholeBody = await (await testGateway!.responses({ input: 'hi', tools })).json()
    const events = await readEvents(await testGateway!.responses({ input: 'hi', tools, stream: true }))
    assertValidEventSequence(events)
    expect(events.filter((event) => event.output_index === 0).map((event) => event.type)).toEqual(['response.output_item.added', 'response.output_item.done'])
    const done = events.find((event) => event.type === 'response.output_item.done' && event.output_index === 0)!
    expect(done.item).toEqual({ ...wholeBody.output[0], id: done.item.id })
    expect(done.item.models[0]).toEqual(VISION_PRO)
  })

  it('goes back to the model as the call and its result when its item is sent again', async () => {
    const model = await serve([[searchCall('vision')], 'Zephyr Vision Pro.', 'Yes.'])
    const first = await (await testGateway!.responses({ input: 'Which reads images?', tools: [{ type: 'service:experimental__search_models' }] })).json()
    await testGateway!.responses({ input: [{ type: 'message', role: 'user', content: 'Which reads images?' }, ...first.output, { type: 'message', role: 'user', content: 'Sure?' }], tools: [{ type: 'service:experimental__search_models' }] })
    const sent = model.calls[2]!.input as Array<Record<string, unknown>>
    expect(sent[1]).toMatchObject({ type: 'function_call', name: 'service_experimental__search_models', arguments: '{"query":"vision"}' })
    expect(JSON.parse(String(sent[2]!.output))[0]).toEqual(VISION_PRO)
  })

  it('refuses unknown parameters with a 400 naming them', async () => {
    await serve([])
    const response = await testGateway!.responses({ input: 'hi', tools: [{ type: 'service:experimental__search_models', parameters: { max_results: 2, provider: 'x' } }] })
    expect(response.status).toBe(400)
    expect((await response.json()).error.message).toMatch(/^body\.tools\.0\.parameters/)
  })
})
