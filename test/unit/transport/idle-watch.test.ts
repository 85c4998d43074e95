import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { IdleWatch } from '../../../src/transport/idle-watch'

describe('IdleWatch', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('fires once a reader has waited the whole idle time', () => {
    const onIdle = vi.fn()
    const watch = new IdleWatch(1_000, onIdle)
    watch.waiting()
    vi.advanceTimersByTime(999)
    expect(onIdle).not.toHaveBeenCalled()
    vi.advanceTimersByTime(1)
    expect(onIdle).toHaveBeenCalledTimes(1)
  })

  it('never fires while nobody waits: a slow consumer is not a silent upstream', () => {
    const onIdle = vi.fn()
    const watch = new IdleWatch(1_000, onIdle)
    watch.waiting()
    vi.advanceTimersByTime(900)
    watch.arrived()
    // The consumer takes its time before asking for the next chunk.
    vi.advanceTimersByTime(10_000)
    expect(onIdle).not.toHaveBeenCalled()
  })

  it('times each wait from its own start, with one timer re-armed for what is left', () => {
    const onIdle = vi.fn()
    const watch = new IdleWatch(1_000, onIdle)
    watch.waiting()
    vi.advanceTimersByTime(600)
    watch.arrived()
    watch.waiting()
    vi.advanceTimersByTime(400)
    expect(onIdle).not.toHaveBeenCalled()
    expect(vi.getTimerCount()).toBe(1)
    vi.advanceTimersByTime(600)
    expect(onIdle).toHaveBeenCalledTimes(1)
  })

  it('stop ends it for good', () => {
    const onIdle = vi.fn()
    const watch = new IdleWatch(1_000, onIdle)
    watch.waiting()
    watch.stop()
    vi.advanceTimersByTime(5_000)
    expect(onIdle).not.toHaveBeenCalled()
    expect(vi.getTimerCount()).toBe(0)
  })
})
