/**
 * The session kit every streamed answer is produced with (src/engine/session-kit.ts): one state, `streaming` until
 * `ended`, after which nothing is written; keep-alives in their three modes; an answer finished as usage, failure and
 * result, closed once; the consumer's stop run once and never after the end; a producer's bug breaking the stream;
 * the gateway's shutdown hook removed whichever way the answer ends.
 */

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createActiveStreams, type ActiveStream } from '../../../src/engine/active-streams'
import type { InferenceService } from '../../../src/engine/service'
import type { EventSink, ResponseResult, SessionEvent, StoppedUsage } from '../../../src/engine/session-events'
import { createSessionKit } from '../../../src/engine/session-kit'
import { createRecordingLogger } from '../../helpers/logger'

const KEEP_ALIVE_MS = 1_000

/** A sink that records what reached it, refusing writes while `isFull`. */
const recordingSink = () => {
  const events: SessionEvent[] = []
  const calls: string[] = []
  let readyCount = 0
  const sink: EventSink<SessionEvent> & { isFull: boolean } = {
    isFull: false,
    write(event) {
      events.push(event)
      return !sink.isFull
    },
    ready: async () => void readyCount++,
    close: (stopped?: StoppedUsage) => void calls.push(stopped ? 'close:stopped' : 'close'),
    fail: (error: unknown) => void calls.push(`fail:${(error as Error).message}`),
  }
  return { sink, events, calls, readyCount: () => readyCount }
}

const setup = (withActive = true) => {
  const logger = createRecordingLogger()
  const streams = createActiveStreams()
  const service = { keepAliveMs: KEEP_ALIVE_MS, streams, logger: logger.logger } as unknown as InferenceService
  const recorded = recordingSink()
  const ended: string[] = []
  const active: ActiveStream = { end: (message) => void ended.push(message) }
  if (withActive) streams.add(active)
  const kit = createSessionKit(service, recorded.sink, { requestId: 'req_1', producer: 'test stream', ...(withActive ? { active } : {}) })
  return { kit, ...recorded, logger, streams, ended }
}

const result = { id: 'resp_1', status: 'completed' } as unknown as ResponseResult
const usage = { cost: 1 } as unknown as NonNullable<ResponseResult['usage']>
const types = (events: SessionEvent[]) => events.map((event) => event.type)

beforeEach(() => vi.useFakeTimers())
afterEach(() => vi.useRealTimers())

describe('the session kit', () => {
  it('finishes with usage, failure and result, closes once, and writes nothing after', () => {
    const { kit, events, calls, streams, ended } = setup()
    expect(kit.state).toBe('streaming')
    kit.finish(usage, { status: 502, errorType: 'provider', message: 'cut' }, result)
    expect(types(events)).toEqual(['usage', 'error', 'finished'])
    expect(calls).toEqual(['close'])
    expect(kit.state).toBe('ended')
    kit.write({ type: 'keep_alive' })
    kit.finish(null, null, result)
    kit.end()
    expect(types(events)).toEqual(['usage', 'error', 'finished'])
    expect(calls).toEqual(['close'])
    // Its shutdown hook left with it: a shutdown afterwards does not reach it.
    streams.endAll('bye')
    expect(ended).toEqual([])
  })

  it('finishes without usage or failure when it has none', () => {
    const { kit, events } = setup()
    kit.finish(null, null, result)
    expect(types(events)).toEqual(['finished'])
  })

  it('sends keep-alives every interval, only when quiet, or not at all', () => {
    const { kit, events } = setup()
    kit.keepAlive('always')
    vi.advanceTimersByTime(3 * KEEP_ALIVE_MS)
    expect(types(events)).toEqual(['keep_alive', 'keep_alive', 'keep_alive'])
    kit.keepAlive('when-quiet')
    vi.advanceTimersByTime(KEEP_ALIVE_MS / 2)
    kit.write({ type: 'response.output_text.delta' } as unknown as SessionEvent)
    // The write half an interval ago keeps the next tick quiet.
    vi.advanceTimersByTime(KEEP_ALIVE_MS / 2)
    expect(types(events)).toHaveLength(4)
    vi.advanceTimersByTime(KEEP_ALIVE_MS)
    expect(types(events).at(-1)).toBe('keep_alive')
    kit.keepAlive('off')
    vi.advanceTimersByTime(5 * KEEP_ALIVE_MS)
    expect(types(events)).toHaveLength(5)
  })

  it('stops keep-alives when the answer ends', () => {
    const { kit, events } = setup()
    kit.keepAlive('always')
    kit.end()
    vi.advanceTimersByTime(5 * KEEP_ALIVE_MS)
    expect(events).toEqual([])
  })

  it('waits for the sink only after it refused a write', async () => {
    const { kit, sink, readyCount } = setup()
    await kit.paced()
    expect(readyCount()).toBe(0)
    sink.isFull = true
    expect(kit.write({ type: 'keep_alive' })).toBe(false)
    await kit.paced()
    await kit.paced()
    expect(readyCount()).toBe(1)
  })

  it('runs the consumer stop once, and not once the answer ended', () => {
    const { kit, streams, ended } = setup()
    const stop = vi.fn((): StoppedUsage => ({ usage, isEstimated: true }))
    const stopper = kit.stopper(stop)
    expect(stopper()).toEqual({ usage, isEstimated: true })
    expect(stopper()).toBeUndefined()
    expect(stop).toHaveBeenCalledTimes(1)
    expect(kit.state).toBe('ended')
    streams.endAll('bye')
    expect(ended).toEqual([])

    const other = setup()
    const never = vi.fn(() => undefined)
    other.kit.end()
    expect(other.kit.stopper(never)()).toBeUndefined()
    expect(never).not.toHaveBeenCalled()
  })

  it("breaks the stream on a producer's bug, after its clean-up, and logs it", async () => {
    const { kit, calls, logger } = setup()
    const cleanedUp: unknown[] = []
    kit.keepAlive('always')
    kit.run(
      async () => {
        throw new Error('bug')
      },
      (error) => cleanedUp.push(error),
    )
    await vi.advanceTimersByTimeAsync(0)
    expect(cleanedUp).toHaveLength(1)
    expect(calls).toEqual(['fail:bug'])
    expect(kit.state).toBe('ended')
    expect(logger.entries.some((entry) => entry.message === 'test stream failed' && entry.fields?.requestId === 'req_1')).toBe(true)
  })

  it('breaks the stream once when a part fails', () => {
    const { kit, calls } = setup(false)
    kit.fail(new Error('judge broke'))
    kit.fail(new Error('again'))
    kit.end()
    expect(calls).toEqual(['fail:judge broke'])
  })
})
