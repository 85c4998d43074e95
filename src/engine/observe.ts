/**
 * Observers of a session: code that watches (or adjusts) the events on their way to the writer, such as
 * an intern's chat (renaming its pause tool, storing the turn) or the access log. One wrapper per
 * observer; no event is copied or buffered.
 */

import type { ResponsesRequestBody } from './request.schemas'
import type { ResponseResult, ResponseSession, SessionEvent, StoppedUsage } from './session-events'

/** `used` is present when the consumer stopped an answer that had started (session-events.ts). */
export type SessionEnd = { how: 'finished'; result: ResponseResult } | { how: 'stopped'; used?: StoppedUsage } | { how: 'broken'; error: unknown }

export interface SessionObserver {
  /** The request as the consumer should see it (the writer echoes its fields); the session's own when absent. */
  request?(request: ResponsesRequestBody): ResponsesRequestBody
  /** Sees each event before the consumer does; may change it in place. */
  onEvent?(event: SessionEvent): void
  /**
   * Runs on the `finished` event before the consumer receives it: the consumer sees the end only once
   * this settled (a turn stored before its caller sees it complete). A rejection breaks the stream.
   */
  beforeFinished?(result: ResponseResult): Promise<void>
  /** Called once, however the session ended: finished, stopped by the consumer, or broken by a bug. */
  onEnd?(end: SessionEnd): void
}

export const observeSession = (session: ResponseSession, observer: SessionObserver): ResponseSession => ({
  request: observer.request ? observer.request(session.request) : session.request,
  overheadMs: session.overheadMs,
  start(sink) {
    let finished: ResponseResult | undefined
    let isEnded = false
    // Set while `beforeFinished` runs: the final event and the close wait for it.
    let holding: Promise<void> | undefined
    const end = (value: SessionEnd) => {
      if (isEnded) return
      isEnded = true
      observer.onEnd?.(value)
    }
    const stop = session.start({
      write(event) {
        observer.onEvent?.(event)
        if (event.type !== 'finished') return sink.write(event)
        finished = event.result
        if (!observer.beforeFinished) return sink.write(event)
        holding = observer.beforeFinished(event.result).then(() => void sink.write(event))
        return false
      },
      ready: () => (holding ? holding.then(() => sink.ready()) : sink.ready()),
      close(stopped) {
        const close = () => {
          if (finished) end({ how: 'finished', result: finished })
          else end(stopped ? { how: 'stopped', used: stopped } : { how: 'stopped' })
          sink.close(stopped)
        }
        if (!holding) return close()
        holding.then(close, (error: unknown) => {
          end({ how: 'broken', error })
          sink.fail(error)
        })
      },
      fail(error) {
        end({ how: 'broken', error })
        sink.fail(error)
      },
    })
    return () => {
      const used = stop()
      end(used ? { how: 'stopped', used } : { how: 'stopped' })
      return used
    }
  },
})
