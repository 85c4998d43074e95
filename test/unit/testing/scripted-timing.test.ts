/**
 * Pauses in scripted answers: a gate the test opens, timers the test drives, and the gateway's own deadlines and
 * aborts acting on scripted answers as on real ones.
 */

import { once } from 'node:events'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createTestGateway, gate, scriptedProvider, type TestGateway } from '../../../src/testing'
import { bodyReader, sseEventsOf } from '../../helpers/interrupted-stream'

let testGateway: TestGateway | undefined
afterEach(async () => {
  vi.useRealTimers()
  await testGateway?.close()
  testGateway = undefined
})

const deltasOf = (text: string) => sseEventsOf(text).filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta)

describe('a pause in a scripted answer', () => {
  it('holds a stream at a gate until the test opens it', async () => {
    const thinking = gate()
    const model = scriptedProvider({ reply: [{ type: 'text', text: 'Hel' }, { type: 'wait', until: thinking }, { type: 'text', text: 'lo' }] })
    testGateway = await createTestGateway({ providers: { scripted: model } })
    const reader = bodyReader((await testGateway.responses({ input: 'hi', stream: true })).body!)
    await reader.until('"delta":"Hel"')
    await thinking.reached
    expect(thinking.isOpen).toBe(false)
    thinking.open()
    const text = await reader.rest()
    expect(deltasOf(text)).toEqual(['Hel', 'lo'])
    expect(sseEventsOf(text).at(-2).type).toBe('response.completed')
  })

  it('holds a whole answer until the gate opens', async () => {
    const answer = gate()
    testGateway = await createTestGateway({ providers: { scripted: scriptedProvider({ reply: [{ type: 'wait', until: answer }, { type: 'text', text: 'Late' }] }) } })
    let isAnswered = false
    const pending = testGateway.responses({ input: 'hi' }).then((response) => {
      isAnswered = true
      return response
    })
    await answer.reached
    expect(isAnswered).toBe(false)
    answer.open()
    expect((await (await pending).json()).output[0].content[0].text).toBe('Late')
  })

  it('runs timed pauses on the timers, so fake timers drive them', async () => {
    vi.useFakeTimers()
    const model = scriptedProvider({ reply: [{ type: 'wait', ms: 60_000 }, { type: 'text', text: 'After a minute' }] })
    testGateway = await createTestGateway({ providers: { scripted: model }, upstream: { firstByteTimeoutMs: 120_000 } })
    const pending = testGateway.responses({ input: 'hi' })
    await vi.advanceTimersByTimeAsync(60_000)
    const response = await pending
    expect((await response.json()).output[0].content[0].text).toBe('After a minute')
  })

  it('is cut short by the gateway first-byte deadline, like a silent provider', async () => {
    vi.useFakeTimers()
    const model = scriptedProvider({ reply: [{ type: 'wait', ms: 60_000 }, { type: 'text', text: 'Too late' }] })
    testGateway = await createTestGateway({ providers: { scripted: model }, upstream: { firstByteTimeoutMs: 1_000 } })
    const pending = testGateway.responses({ input: 'hi' })
    await vi.advanceTimersByTimeAsync(1_000)
    const response = await pending
    expect(response.status).toBe(524)
    expect((await response.json()).error).toMatchObject({ message: 'scripted: No answer in time (first byte)', metadata: { error_type: 'timeout' } })
    expect(model.lastCall!.signal.aborted).toBe(true)
  })

  it('is abandoned when the client leaves: the call signal aborts', async () => {
    const never = gate()
    const model = scriptedProvider({ reply: [{ type: 'text', text: 'Hel' }, { type: 'wait', until: never }, { type: 'text', text: 'lo' }] })
    testGateway = await createTestGateway({ providers: { scripted: model } })
    const client = new AbortController()
    const response = await testGateway.responses({ input: 'hi', stream: true }, { signal: client.signal })
    const reader = bodyReader(response.body!)
    await reader.until('"delta":"Hel"')
    await never.reached
    const aborted = once(model.lastCall!.signal, 'abort')
    client.abort()
    await aborted
    expect(model.lastCall!.signal.aborted).toBe(true)
  })
})
