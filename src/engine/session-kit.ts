/**
 * What every streamed answer shares, whoever produces it (a single turn in stream-session.ts, the server-tool
 * loop, fusion): one state, `streaming` until the answer `ended`, and what changes with it. The kit writes to the
 * sink at the client's pace, sends keep-alives while the producer has nothing to say, finishes an answer with its
 * usage, failure and result, leaves the gateway's active streams when it ends, turns a producer's bug into a broken
 * stream, and gives the consumer a stop that works once. What an answer is made of, and what it used when stopped,
 * stay the producer's.
 */

import type { ActiveStream } from './active-streams'
import type { InferenceService } from './service'
import type { EventSink, ResponseFailure, ResponseResult, SessionEvent, StoppedUsage } from './session-events'

/** `streaming` from the producer's start; `ended` once closed, stopped or broken: nothing is written after. */
export type SessionState = 'streaming' | 'ended'

/** How keep-alives are sent: every interval, only when nothing else was written for one, or not at all. */
export type KeepAliveMode = 'always' | 'when-quiet' | 'off'

// One object for every keep-alive: they carry nothing.
export const KEEP_ALIVE: SessionEvent = Object.freeze({ type: 'keep_alive' })

export interface SessionKitOptions {
  requestId: string
  /** Names the producer in the log line of a bug. */
  producer: string
  /** The producer's shutdown hook, registered with the gateway's active streams: the kit removes it when the answer ends. */
  active?: ActiveStream
}

export interface SessionKit {
  readonly state: SessionState
  readonly isEnded: boolean
  /** Writes an event; `false` when the sink asked to wait (see `paced`). Nothing once ended. */
  write(event: SessionEvent): boolean
  /** Waits for the sink when a write asked to: the client's pace sets the producer's. */
  paced(): Promise<void>
  keepAlive(mode: KeepAliveMode): void
  /** Ends the answer: its usage, its failure if any, then its result; and closes the sink. */
  finish(usage: ResponseResult['usage'], failure: ResponseFailure | null, result: ResponseResult): void
  /** Closes the sink without a result (nothing started, or the client left); `stopped` is what was used. */
  end(stopped?: StoppedUsage): void
  /** Breaks the stream (a part of the answer failed as no client should take for whole): ended, and the sink told. */
  fail(error: unknown): void
  /** Runs the producer; a rejection is a bug, not an upstream failure: the stream breaks rather than ending as if whole. */
  run(producer: () => Promise<void>, onBug?: (error: unknown) => void): void
  /** The consumer's stop: runs `stop` once, unless the answer already ended, and resolves with what it used. */
  stopper(stop: () => StoppedUsage | undefined): () => StoppedUsage | undefined
}

export const createSessionKit = (service: InferenceService, sink: EventSink<SessionEvent>, options: SessionKitOptions): SessionKit => {
  let state: SessionState = 'streaming'
  let needsDrain = false
  let lastWrite = performance.now()
  let timer: ReturnType<typeof setInterval> | undefined

  const write = (event: SessionEvent): boolean => {
    if (state === 'ended') return true
    lastWrite = performance.now()
    const isAccepted = sink.write(event)
    if (!isAccepted) needsDrain = true
    return isAccepted
  }
  const keepAlive = (mode: KeepAliveMode) => {
    clearInterval(timer)
    timer = undefined
    if (mode === 'off' || state === 'ended') return
    const { keepAliveMs } = service
    timer =
      mode === 'always'
        ? setInterval(() => write(KEEP_ALIVE), keepAliveMs)
        : setInterval(() => {
            if (performance.now() - lastWrite >= keepAliveMs) write(KEEP_ALIVE)
          }, keepAliveMs)
  }
  /** Leaves the streaming state: no keep-alive, no shutdown hook. */
  const leave = () => {
    state = 'ended'
    clearInterval(timer)
    timer = undefined
    if (options.active) service.streams.delete(options.active)
  }
  const end = (stopped?: StoppedUsage) => {
    if (state === 'ended') return
    leave()
    sink.close(stopped)
  }

  return {
    get state() {
      return state
    },
    get isEnded() {
      return state === 'ended'
    },
    write,
    async paced() {
      if (!needsDrain) return
      needsDrain = false
      await sink.ready()
    },
    keepAlive,
    finish(usage, failure, result) {
      if (state === 'ended') return
      if (usage) write({ type: 'usage', usage })
      if (failure) write({ type: 'error', error: failure })
      write({ type: 'finished', result })
      end()
    },
    end,
    fail(error) {
      if (state === 'ended') return
      leave()
      sink.fail(error)
    },
    run(producer, onBug) {
      producer().catch((error: unknown) => {
        leave()
        onBug?.(error)
        service.logger.error(`${options.producer} failed`, { requestId: options.requestId, error })
        sink.fail(error)
      })
    },
    stopper: (stop) => () => {
      if (state === 'ended') return undefined
      leave()
      return stop()
    },
  }
}
