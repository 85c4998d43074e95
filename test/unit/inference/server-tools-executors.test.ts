/**
 * Sandbox and file tools (`service:bash`, `service:shell`, `service:apply_patch`, `service:files`): the loop runs
 * each call through the operator's executor; without one the tool is a 400 naming it.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { ToolExecutor, ToolExecutorCall, ToolExecutorContext } from '../../../src'
import { createTestGateway, readEvents, scriptedProvider, type ScriptedProvider, type ScriptedReply, type TestGateway } from '../../../src/testing'
import { assertValidEventSequence } from '../../helpers/stream-events'
import { createRecordingLogger } from '../../helpers/logger'
import { createResponsesHarness } from '../../helpers/responses'
import { jsonFixture } from '../../helpers/upstream'

let testGateway: TestGateway | undefined
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

const bashCall = (command: string, callId = 'call_bash') => ({ type: 'function_call' as const, name: 'service_bash', arguments: JSON.stringify({ command }), callId })
const RUN_THEN_ANSWER: ScriptedReply[] = [[bashCall('ls')], 'There are two files.']

let model: ScriptedProvider
const serve = async (replies: ScriptedReply[], executors: Record<string, ToolExecutor>, extra: Record<string, unknown> = {}) => {
  model = scriptedProvider({ replies })
  testGateway = await createTestGateway({ providers: { scripted: model }, serverTools: { executors }, ...extra })
  return testGateway
}

/** An executor that records its calls and answers with a fixed listing. */
const listing = () => {
  const calls: Array<{ call: ToolExecutorCall; context: ToolExecutorContext }> = []
  const executor: ToolExecutor = {
    async run(call, context) {
      calls.push({ call, context })
      return { output: 'a.txt\nb.txt\n(exit code 0)', item: { exit_code: 0 }, cost: 0.001 }
    },
  }
  return { calls, executor }
}

describe('an operator executor', () => {
  it('runs the call, hands the output to the model and shows the tool item', async () => {
    const { calls, executor } = listing()
    const gateway = await serve(RUN_THEN_ANSWER, { 'service:bash': executor })
    const response = await gateway.responses({ input: 'What is here?', tools: [{ type: 'service:bash', parameters: { engine: 'sandbox-1', sleep_after_seconds: 60 } }] })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body.output[0]).toEqual({
      type: 'service:bash',
      id: expect.stringMatching(/^exe_/),
      status: 'completed',
      exit_code: 0,
      arguments: '{"command":"ls"}',
      output: 'a.txt\nb.txt\n(exit code 0)',
    })
    expect(calls).toHaveLength(1)
    expect(calls[0]!.call).toEqual({ type: 'service:bash', callId: 'call_bash', arguments: { command: 'ls' }, parameters: { engine: 'sandbox-1', sleep_after_seconds: 60 } })
    expect(calls[0]!.context).toMatchObject({ requestId: expect.any(String), workspaceId: gateway.defaultWorkspaceId, accountId: expect.any(String) })
    expect(calls[0]!.context.signal).toBeInstanceOf(AbortSignal)
    // The model sees a function tool with the default schema, and reads the output.
    expect(model.calls[0]!.tools).toEqual([expect.objectContaining({ type: 'function', name: 'service_bash', parameters: expect.objectContaining({ required: ['command'] }) })])
    expect((model.calls[1]!.input as Array<Record<string, unknown>>).at(-1)).toEqual({ type: 'function_call_output', call_id: 'call_bash', output: 'a.txt\nb.txt\n(exit code 0)' })
    // The executor's price is the cost (the scripted turns report no tokens).
    expect(body.usage.cost).toBe(0.001)
    expect(body.usage.server_tool_use_details).toMatchObject({ tool_calls_executed: 1 })
  })

  it("offers the executor's own description and schema", async () => {
    const executor: ToolExecutor = { description: 'Run it.', parameters: { type: 'object', properties: { script: { type: 'string' } } }, run: async () => ({ output: 'ok' }) }
    const gateway = await serve(['Nothing to run.'], { 'service:shell': executor })
    await gateway.responses({ input: 'hi', tools: [{ type: 'service:shell' }] })
    expect(model.calls[0]!.tools).toEqual([{ type: 'function', name: 'service_shell', description: 'Run it.', parameters: { type: 'object', properties: { script: { type: 'string' } } } }])
  })

  it('reports a throwing executor as a failed call the model reads, and logs the cause', async () => {
    const recording = createRecordingLogger()
    const executor: ToolExecutor = {
      run: async () => {
        throw new Error('sandbox exploded')
      },
    }
    const gateway = await serve(RUN_THEN_ANSWER, { 'service:bash': executor }, { logger: recording.logger })
    const body = await (await gateway.responses({ input: 'hi', tools: [{ type: 'service:bash' }] })).json()
    expect(body.output[0]).toMatchObject({ type: 'service:bash', status: 'incomplete', error: 'the tool failed' })
    expect((model.calls[1]!.input as Array<Record<string, unknown>>).at(-1)).toMatchObject({ output: 'Error: the tool failed' })
    expect(JSON.stringify(body)).not.toContain('exploded')
    expect(recording.entries.find((entry) => entry.message === 'server tool failed')?.fields).toMatchObject({ tool: 'service:bash' })
  })

  it('streams the item added and done', async () => {
    const { executor } = listing()
    const gateway = await serve(RUN_THEN_ANSWER, { 'service:bash': executor })
    const events = await readEvents(await gateway.responses({ input: 'hi', tools: [{ type: 'service:bash' }], stream: true }))
    assertValidEventSequence(events)
    expect(events.find((event) => event.type === 'response.output_item.added')!.item).toMatchObject({ type: 'service:bash', status: 'in_progress' })
    expect(events.find((event) => event.type === 'response.output_item.done')!.item).toMatchObject({ type: 'service:bash', status: 'completed', exit_code: 0 })
  })

  it('reads an item sent back as the call and output it stands for', async () => {
    const { executor } = listing()
    const gateway = await serve([...RUN_THEN_ANSWER, 'Again.'], { 'service:bash': executor })
    const first = await (await gateway.responses({ input: 'hi', tools: [{ type: 'service:bash' }] })).json()
    await gateway.responses({ input: [{ role: 'user', content: 'hi' }, ...first.output, { role: 'user', content: 'and now?' }], tools: [{ type: 'service:bash' }] })
    const input = model.calls[2]!.input as Array<Record<string, unknown>>
    expect(input[1]).toEqual({ type: 'function_call', call_id: `call_${first.output[0].id}`, name: 'service_bash', arguments: '{"command":"ls"}' })
    expect(input[2]).toEqual({ type: 'function_call_output', call_id: `call_${first.output[0].id}`, output: 'a.txt\nb.txt\n(exit code 0)' })
  })
})

describe('without an executor', () => {
  it('refuses each sandbox tool by name, and a parameter the kind does not take', async () => {
    const gateway = await serve([], {})
    for (const type of ['service:bash', 'service:shell', 'service:apply_patch', 'service:files']) {
      const response = await gateway.responses({ input: 'hi', tools: [{ type: 'service:datetime' }, { type }] })
      expect(response.status).toBe(400)
      expect(await response.json()).toEqual({
        error: { code: 400, message: `body.tools.1: server tool "${type}" needs a tool executor, and this gateway's operator has configured none for it (serverTools.executors)` },
      })
    }
    const bad = await gateway.responses({ input: 'hi', tools: [{ type: 'service:files', parameters: { engine: 'x' } }] })
    expect((await bad.json()).error.message).toBe('body.tools.0.parameters.engine: unknown field')
    expect(model.calls).toHaveLength(0)
  })

  it('refuses an executor option without run when the gateway is created', async () => {
    await expect(serve([], { 'service:bash': {} as ToolExecutor })).rejects.toThrow(/serverTools\.executors\.service:bash.*run\(call, context\)/)
  })
})

describe('provider tools run through an executor', () => {
  const FILE_SEARCH = { type: 'file_search', vector_store_ids: ['vs_docs'], max_num_results: 3 }
  const searchCall = { type: 'function_call' as const, name: 'service_file_search', arguments: '{"query":"refund policy"}', callId: 'call_fs' }

  it('runs file_search at the gateway when no endpoint can, with the tool fields as parameters and OpenAI\'s item name', async () => {
    const { calls, executor } = listing()
    const gateway = await serve([[searchCall], 'Refunds take 14 days.'], { file_search: executor })
    const response = await gateway.responses({ input: 'Refunds?', tools: [FILE_SEARCH] })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body.output[0]).toMatchObject({ type: 'file_search_call', status: 'completed', arguments: '{"query":"refund policy"}' })
    expect(calls[0]!.call).toEqual({ type: 'file_search', callId: 'call_fs', arguments: { query: 'refund policy' }, parameters: { vector_store_ids: ['vs_docs'], max_num_results: 3 } })
    expect(model.calls[0]!.tools).toEqual([expect.objectContaining({ type: 'function', name: 'service_file_search' })])
    // The caller's tool is echoed as sent.
    expect(body.tools).toEqual([FILE_SEARCH])
  })

  it('refuses the tool when no endpoint can run it and no executor is configured, and a malformed one with an executor', async () => {
    const { executor } = listing()
    const gateway = await serve([], { code_interpreter: executor })
    const refused = await gateway.responses({ input: 'x', tools: [FILE_SEARCH] })
    expect(refused.status).toBe(400)
    expect((await refused.json()).error.message).toBe('body.tools.0 (type "file_search"): not supported by any endpoint of test/model')
    const malformed = await gateway.responses({ input: 'x', tools: [{ type: 'code_interpreter' }] })
    expect((await malformed.json()).error.message).toMatch(/^body\.tools\.0\.container: /)
    expect(model.calls).toHaveLength(0)
  })

  it('leaves the tool to a provider that runs it, the executor unused', async () => {
    const { calls, executor } = listing()
    const harness = await createResponsesHarness({ openai: {} }, { serverTools: { executors: { file_search: executor } } })
    try {
      harness.upstreams.openai!.setHandler(() => jsonFixture('openai', 'text.json'))
      const response = await harness.post({ model: 'openai/gpt-4o', input: 'Refunds?', tools: [FILE_SEARCH] })
      expect(response.status).toBe(200)
      expect(harness.upstreams.openai!.requests[0]!.json.tools).toEqual([FILE_SEARCH])
      expect(calls).toHaveLength(0)
    } finally {
      await harness.close()
    }
  })
})
