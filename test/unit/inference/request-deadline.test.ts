/**
 * The request's deadline (`requestTimeoutMs`): every attempt of a request, its server-tool turns and its fusion runs
 * share it, each wait takes only what is left of it, and a request that runs out of it ends with a 524 (or an in-band
 * failure) that names it. The timers are vitest's fake ones, performance.now with them, so what a test proves is
 * which attempts were made and which error came back, whatever the machine's load.
 */

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { ToolExecutor } from '../../../src'
import type { ModelEntry } from '../../../src/engine/models'
import { createTestGateway, gate, scriptedProvider, type ScriptedCall, type ScriptedReply, type TestGateway, type TestGatewayOptions } from '../../../src/testing'
import { TEST_PRICING } from '../../helpers/models'
import { bodyReader, sseEventsOf } from '../../helpers/interrupted-stream'

/** Three models, each served by the scripted provider `lab` alone: a request for the first falls back to the others. */
const THREE_MODELS: ModelEntry[] = [1, 2, 3].map((index) => ({
  slug: `lab/model-${index}`,
  name: `Model ${index}`,
  endpoints: [{ provider: 'lab', model: `upstream-${index}`, contextLength: 8192, pricing: TEST_PRICING, supportedParameters: ['tools', 'tool_choice'] }],
}))
const WITH_FALLBACKS = { model: 'lab/model-1', models: ['lab/model-2', 'lab/model-3'] }

/** Never opened: an upstream waiting on it never sends a byte. */
const never = gate()
const silent: ScriptedReply = [{ type: 'wait', until: never }, { type: 'text', text: 'never sent' }]

let testGateway: TestGateway | undefined
beforeEach(() => {
  // setImmediate stays real: `work` below yields to the gateway's I/O with it while the fake clock stands still.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance'] })
})
afterEach(async () => {
  vi.useRealTimers()
  await testGateway?.close()
  testGateway = undefined
})

const serve = async (reply: ScriptedReply | ScriptedReply[], options: TestGatewayOptions = {}) => {
  const lab = scriptedProvider(Array.isArray(reply) && reply.every((item) => Array.isArray(item) || typeof item === 'string') ? { replies: reply as ScriptedReply[] } : { reply: reply as ScriptedReply })
  testGateway = await createTestGateway({ providers: { lab }, models: THREE_MODELS, outlierDetection: false, ...options })
  return lab
}

/**
 * Lets the gateway work (its I/O, and timers due now) without moving the fake clock, until `isDone`: so the clock
 * moves only where a test moves it, never while the gateway is busy.
 */
const work = async (isDone: () => boolean) => {
  for (let turns = 0; !isDone(); turns++) {
    if (turns > 10_000) throw new Error('the gateway never got there')
    await vi.advanceTimersByTimeAsync(0)
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** Whether `promise` has settled, for `work`. */
const settledFlag = (promise: Promise<unknown>) => {
  let isSettled = false
  promise.then(
    () => (isSettled = true),
    () => (isSettled = true),
  )
  return () => isSettled
}

/** Waits (clock standing) for `pending` to settle. */
const settled = async <T>(pending: Promise<T>): Promise<T> => {
  await work(settledFlag(pending))
  return pending
}

const models = (lab: { calls: readonly ScriptedCall[] }) => lab.calls.map((call) => call.model)

/** Each call the upstream receives, as it arrives: the clock moves on only once the gateway has sent it. */
const sent = (lab: { calls: readonly ScriptedCall[] }, count: number) => work(() => lab.calls.length >= count)

describe('the request deadline across fallback attempts', () => {
  /** Three silent models, a 200 ms first-byte timeout and a 300 ms deadline: the brief's case. */
  const cutAfterTwoAttempts = async (body: Record<string, unknown>, headers?: Record<string, string>) => {
    const lab = await serve(silent, { upstream: { firstByteTimeoutMs: 200 }, requestTimeoutMs: 300 })
    const pending = testGateway!.responses({ ...WITH_FALLBACKS, input: 'hi', ...body }, headers ? { headers } : {})
    await sent(lab, 1)
    // The first attempt's own first-byte timeout: it leaves 100 ms of the deadline.
    await vi.advanceTimersByTimeAsync(200)
    await sent(lab, 2)
    // The second attempt was given those 100 ms only.
    await vi.advanceTimersByTimeAsync(100)
    return { lab, response: await settled(pending) }
  }

  it('ends a whole request with a 524 naming the deadline: the second attempt gets only what was left, the third none', async () => {
    const { lab, response } = await cutAfterTwoAttempts({})
    expect(response.status).toBe(524)
    expect((await response.json()).error).toEqual({
      code: 524,
      message: "The request's deadline of 0.3 s passed after 2 upstream attempts",
      metadata: { error_type: 'timeout' },
    })
    expect(models(lab)).toEqual(['upstream-1', 'upstream-2'])
    expect(lab.calls.every((call) => call.signal.aborted)).toBe(true)
  })

  it('a stream still waiting for content ends with the same clean 524, before anything was committed', async () => {
    const { lab, response } = await cutAfterTwoAttempts({ stream: true })
    expect(response.status).toBe(524)
    expect(response.headers.get('content-type')).toContain('application/json')
    expect((await response.json()).error.message).toBe("The request's deadline of 0.3 s passed after 2 upstream attempts")
    expect(models(lab)).toEqual(['upstream-1', 'upstream-2'])
  })

  it('carries service_metadata when the caller asked for it', async () => {
    const { response } = await cutAfterTwoAttempts({}, { 'x-service-metadata': 'enabled' })
    const body = await response.json()
    expect(body.error.message).toBe("The request's deadline of 0.3 s passed after 2 upstream attempts")
    expect(body.service_metadata).toMatchObject({ attempt: 2, requested: 'lab/model-1' })
  })

  it('leaves the per-attempt first-byte timeout its own message while the deadline is not reached', async () => {
    const lab = await serve(silent, { upstream: { firstByteTimeoutMs: 200 }, requestTimeoutMs: 10_000 })
    const pending = testGateway!.responses({ ...WITH_FALLBACKS, input: 'hi' })
    for (const count of [1, 2, 3]) {
      await sent(lab, count)
      await vi.advanceTimersByTimeAsync(200)
    }
    const response = await settled(pending)
    expect(response.status).toBe(524)
    expect((await response.json()).error).toEqual({ code: 524, message: 'lab: No answer in time (first byte)', metadata: { error_type: 'timeout', provider_name: 'lab' } })
    expect(models(lab)).toEqual(['upstream-1', 'upstream-2', 'upstream-3'])
  })

  it('caps the first-byte wait at what is left: the default 300 s first-byte timeout does not hold a 1 s deadline', async () => {
    const lab = await serve(silent, { requestTimeoutMs: 1_000 })
    const pending = testGateway!.responses({ ...WITH_FALLBACKS, input: 'hi' })
    await sent(lab, 1)
    await vi.advanceTimersByTimeAsync(1_000)
    const response = await settled(pending)
    expect(response.status).toBe(524)
    expect((await response.json()).error.message).toBe("The request's deadline of 1 s passed after 1 upstream attempt")
    expect(models(lab)).toEqual(['upstream-1'])
  })
})

describe('the request deadline mid-stream', () => {
  it('ends a stream that is sending content with response.failed naming the deadline, then [DONE]', async () => {
    const lab = await serve([{ type: 'text', text: 'Hel' }, { type: 'wait', until: never }, { type: 'text', text: 'lo' }], { requestTimeoutMs: 500 })
    const response = await settled(testGateway!.responses({ ...WITH_FALLBACKS, input: 'hi', stream: true }))
    expect(response.status).toBe(200)
    const reader = bodyReader(response.body!)
    await settled(reader.until('"delta":"Hel"'))
    await vi.advanceTimersByTimeAsync(500)
    const events = sseEventsOf(await settled(reader.rest()))
    expect(events.at(-1)).toBe('[DONE]')
    expect(events.at(-2)).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error_type: 'timeout', error: { code: 'server_error', message: "The request's deadline of 0.5 s passed after 1 upstream attempt" } },
    })
    expect(events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta)).toEqual(['Hel'])
    // Content had gone out: no fallback after it.
    expect(models(lab)).toEqual(['upstream-1'])
    expect(lab.calls[0]!.signal.aborted).toBe(true)
  })
})

describe('the request deadline across server-tool turns', () => {
  const DATETIME = { type: 'service:datetime' }
  // The first turn answers after 400 ms of a 500 ms deadline and asks for the time; the second turn never answers.
  const SLOW_TURN_THEN_SILENT: ScriptedReply[] = [
    [{ type: 'wait', ms: 400 }, { type: 'function_call', name: 'service_datetime', arguments: '{}' }],
    silent,
    'never asked',
  ]

  const twoTurns = async (stream: boolean) => {
    const lab = await serve(SLOW_TURN_THEN_SILENT, { upstream: { firstByteTimeoutMs: 10_000 }, requestTimeoutMs: 500 })
    const pending = testGateway!.responses({ model: 'lab/model-1', models: ['lab/model-2'], input: 'What time is it?', tools: [DATETIME], stream })
    await sent(lab, 1)
    await vi.advanceTimersByTimeAsync(400)
    await sent(lab, 2)
    // The second turn's first-byte wait is what the first turn left: 100 ms, not 10 s.
    await vi.advanceTimersByTimeAsync(100)
    return { lab, response: await settled(pending) }
  }

  it('whole: the second turn waits only for what the first left, and the response fails naming the deadline', async () => {
    const { lab, response } = await twoTurns(false)
    const body = await response.json()
    expect(body).toMatchObject({ status: 'failed', error: { code: 'server_error', message: "The request's deadline of 0.5 s passed after 2 upstream attempts" } })
    // The time was told; the second turn was cut by the deadline, with no fallback to lab/model-2.
    expect(models(lab)).toEqual(['upstream-1', 'upstream-1'])
  })

  it('streamed: the same turns end with response.failed naming the deadline', async () => {
    const { lab, response } = await twoTurns(true)
    const events = sseEventsOf(await settled(bodyReader(response.body!).rest()))
    expect(events.at(-2)).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error_type: 'timeout', error: { message: "The request's deadline of 0.5 s passed after 2 upstream attempts" } },
    })
    expect(models(lab)).toEqual(['upstream-1', 'upstream-1'])
  })
})

describe('the request deadline over a server tool that is still running', () => {
  const BASH_THEN_ANSWER: ScriptedReply[] = [[{ type: 'function_call', name: 'service_bash', arguments: '{"command":"make"}' }], 'never asked']

  /** An executor that works until its signal aborts, and records when it started and why it was stopped. */
  const endless = () => {
    const started: unknown[] = []
    const stopped: unknown[] = []
    const executor: ToolExecutor = {
      run: (call, context) =>
        new Promise((_resolve, reject) => {
          started.push(call)
          context.signal.addEventListener('abort', () => {
            stopped.push(context.signal.reason)
            reject(context.signal.reason)
          })
        }),
    }
    return { executor, started, stopped }
  }

  for (const stream of [false, true]) {
    it(`${stream ? 'streamed' : 'whole'}: the deadline stops the tool and the response fails naming it; no further turn is sent`, async () => {
      const { executor, started, stopped } = endless()
      const lab = await serve(BASH_THEN_ANSWER, { requestTimeoutMs: 300, serverTools: { executors: { 'service:bash': executor } } })
      const pending = testGateway!.responses({ model: 'lab/model-1', input: 'Build it', tools: [{ type: 'service:bash' }], stream })
      await work(() => started.length === 1)
      await vi.advanceTimersByTimeAsync(300)
      const response = await settled(pending)
      const failure = { status: 'failed', error: { message: "The request's deadline of 0.3 s passed after 1 upstream attempt" } }
      if (stream) expect(sseEventsOf(await settled(bodyReader(response.body!).rest())).at(-2)).toMatchObject({ type: 'response.failed', response: failure })
      else expect(await response.json()).toMatchObject(failure)
      expect(stopped).toHaveLength(1)
      expect(models(lab)).toEqual(['upstream-1'])
    })
  }
})

describe('the request deadline across a fusion panel', () => {
  it('ends a fusion request whose panel ran out of time with the deadline error; neither analyst nor judge is asked', async () => {
    const lab = await serve(silent, { requestTimeoutMs: 300 })
    const pending = testGateway!.responses({ model: 'lab/model-1', input: 'hi', plugins: [{ id: 'fusion', analysis_models: ['lab/model-2', 'lab/model-3'] }] })
    await sent(lab, 2)
    await vi.advanceTimersByTimeAsync(300)
    const response = await settled(pending)
    expect(response.status).toBe(524)
    expect((await response.json()).error.message).toBe("The request's deadline of 0.3 s passed after 2 upstream attempts")
    // The two panel members, each cut by the shared deadline; nothing after them.
    expect(models(lab).sort()).toEqual(['upstream-2', 'upstream-3'])
  })
})
