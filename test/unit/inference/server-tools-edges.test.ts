/**
 * The server-tool loop at its edges: tools refused before anything is sent (unknown, disabled, bad parameters),
 * routing and fallbacks per turn, a later turn that fails, the client leaving and the gateway shutting down
 * between turns.
 */

import { once } from 'node:events'
import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, gate, readEvents, scriptedProvider, type ScriptedReply, type TestGateway } from '../../../src/testing'
import { assertValidEventSequence } from '../../helpers/stream-events'

let testGateway: TestGateway | undefined
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

const DATETIME = { type: 'service:datetime' }
const CALL = { type: 'function_call' as const, name: 'service_datetime', arguments: '{"timezone":"UTC"}' }
const USAGE = { type: 'usage' as const, inputTokens: 100, outputTokens: 10 }

const expectRefused = async (body: Record<string, unknown>, message: string) => {
  const response = await testGateway!.responses({ input: 'hi', ...body })
  expect(await response.json()).toEqual({ error: { code: 400, message } })
  expect(response.status).toBe(400)
}

describe('tools refused before any upstream call', () => {
  it('names a server tool the gateway cannot run, a disabled one, and a bad parameter', async () => {
    const model = scriptedProvider({ reply: 'never' })
    testGateway = await createTestGateway({ providers: { scripted: model } })
    await expectRefused(
      { tools: [DATETIME, { type: 'service:teleport' }] },
      'body.tools.1: server tool "service:teleport" is not available on this gateway (available: service:datetime, service:web_fetch, service:web_search, service:tool_search, service:experimental__search_models, service:fusion, service:advisor, service:subagent, service:image_generation, service:bash, service:shell, service:apply_patch, service:files)',
    )
    await expectRefused({ tools: [{ type: 'service:datetime', parameters: { timezone: 'Mars/Olympus' } }] }, 'body.tools.0.parameters.timezone: must be an IANA time zone name such as Europe/Paris')
    await expectRefused({ tools: [{ type: 'service:datetime', parameters: { zone: 'UTC' } }] }, 'body.tools.0.parameters.zone: unknown field')
    await expectRefused({ tools: [{ type: 'service:datetime', engine: 'x' }] }, 'body.tools.0.engine: unknown field')
    await expectRefused({ tools: [DATETIME, DATETIME] }, 'body.tools.1: server tool "service:datetime" is listed more than once')
    await expectRefused(
      { tools: [DATETIME, { type: 'function', name: 'service_datetime' }] },
      'body.tools: the function name "service_datetime" is the one service:datetime is offered to the model under; rename your function',
    )
    const patched = await testGateway.call('PATCH', `/workspaces/${testGateway.defaultWorkspaceId}`, { json: { disabled_server_tools: ['datetime'] } })
    expect(patched.status).toBe(200)
    await expectRefused({ tools: [DATETIME] }, 'body.tools.0: server tool "service:datetime" is disabled for this workspace (disabled_server_tools)')
    await testGateway.call('PATCH', `/workspaces/${testGateway.defaultWorkspaceId}`, { json: { disabled_server_tools: ['service:datetime'] } })
    await expectRefused({ tools: [DATETIME], stream: true }, 'body.tools.0: server tool "service:datetime" is disabled for this workspace (disabled_server_tools)')
    expect(model.calls).toHaveLength(0)
  })
})

describe('each turn is routed on its own', () => {
  it('falls back to the next provider when a later turn fails on the first', async () => {
    const primary = scriptedProvider({ replies: [[CALL, USAGE], [{ type: 'http_error', status: 503 }]] })
    const backup = scriptedProvider({ reply: 'From the backup.' })
    testGateway = await createTestGateway({ providers: { primary, backup }, retry: { budget: false } })
    const response = await testGateway.responses({ input: 'hi', tools: [DATETIME] })
    const body = await response.json()
    expect(body.status).toBe('completed')
    expect(body.output.map((item: { type: string }) => item.type)).toEqual(['service:datetime', 'message'])
    expect(primary.calls).toHaveLength(2)
    expect(backup.calls).toHaveLength(1)
    // The backup gets the whole conversation, the tool's result included.
    expect((backup.calls[0]!.input as Array<{ type?: string }>).map((item) => item.type)).toEqual(['message', 'function_call', 'function_call_output'])
  })

  it('fails the response in-band when every attempt of a later turn fails, keeping what the earlier turns made and cost', async () => {
    const model = scriptedProvider({ replies: [[CALL, USAGE], [{ type: 'http_error', status: 400, message: 'Bad turn' }], [CALL, USAGE], [{ type: 'http_error', status: 400, message: 'Bad turn' }]] })
    testGateway = await createTestGateway({ providers: { scripted: model } })
    const response = await testGateway.responses({ input: 'hi', tools: [DATETIME] })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body).toMatchObject({ status: 'failed', error: { message: expect.stringContaining('Bad turn') }, usage: { input_tokens: 100, server_tool_use_details: { tool_calls_executed: 1 } } })
    expect(body.output.map((item: { type: string }) => item.type)).toEqual(['service:datetime'])
    const events = await readEvents(await testGateway.responses({ input: 'hi', tools: [DATETIME], stream: true }))
    assertValidEventSequence(events.slice(0, -1))
    const failed = events.at(-1)!
    expect(failed.type).toBe('response.failed')
    expect(failed.response).toMatchObject({ status: 'failed', usage: body.usage, error: { message: body.error.message } })
    expect(failed.response.output).toEqual([expect.objectContaining({ type: 'service:datetime', status: 'completed' })])
  })

  it('answers the first turn failing as a single turn would: a clean HTTP error', async () => {
    testGateway = await createTestGateway({ providers: { scripted: scriptedProvider({ reply: [{ type: 'http_error', status: 429, errorType: 'rate_limit_exceeded' }] }) } })
    expect((await testGateway.responses({ input: 'hi', tools: [DATETIME] })).status).toBe(429)
    expect((await testGateway.responses({ input: 'hi', tools: [DATETIME], stream: true })).status).toBe(429)
  })
})

describe('stopping', () => {
  const stalledSecondTurn = () => {
    const stall = gate()
    const replies: ScriptedReply[] = [[CALL, USAGE], [{ type: 'wait', until: stall }, { type: 'text', text: 'never' }]]
    return { stall, replies }
  }

  it('aborts the turn in flight when the client leaves a whole answer', async () => {
    const { stall, replies } = stalledSecondTurn()
    const model = scriptedProvider({ replies })
    testGateway = await createTestGateway({ providers: { scripted: model } })
    const controller = new AbortController()
    const pending = testGateway.responses({ input: 'hi', tools: [DATETIME] }, { signal: controller.signal })
    const second = await (async () => {
      while (model.calls.length < 2) await model.nextCall()
      return model.calls[1]!
    })()
    await stall.reached
    const aborted = second.signal.aborted ? undefined : once(second.signal, 'abort')
    controller.abort()
    await aborted
    expect((await pending.catch(() => ({ status: 499 }))).status).toBe(499)
  })

  it('ends the stream in-band when the gateway shuts down during a later turn, and aborts that turn', async () => {
    const { stall, replies } = stalledSecondTurn()
    const model = scriptedProvider({ replies })
    testGateway = await createTestGateway({ providers: { scripted: model }, streamCommitAfterMs: 0 })
    const response = await testGateway.responses({ input: 'hi', tools: [DATETIME], stream: true })
    const reading = response.text()
    await stall.reached
    const second = model.calls[1]!
    const aborted = second.signal.aborted ? undefined : once(second.signal, 'abort')
    testGateway.gateway.endStreams('Maintenance')
    await aborted
    const events = (await reading)
      .split('\n\n')
      .flatMap((block) => block.split('\n').filter((line) => line.startsWith('data: {')).map((line) => JSON.parse(line.slice(6))))
    const failed = events.at(-1)
    expect(failed.type).toBe('response.failed')
    expect(failed.response).toMatchObject({ status: 'failed', error: { message: 'Maintenance' }, error_type: 'server', usage: { input_tokens: 100 } })
    expect(failed.response.output).toEqual([expect.objectContaining({ type: 'service:datetime', status: 'completed' })])
  })
})
