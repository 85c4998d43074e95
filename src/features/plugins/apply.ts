/**
 * How a request's plugins (contract.ts) run: before its attempts (the plugins' run stage, stage.ts) and on the
 * answer, whole or streamed (their turn stage, turn-stage.ts, which runs their `forAttempt` on each attempt's call
 * too). Each function is a no-op for a request without plugins.
 */

import { ClientClosedError } from '../../engine/attempts'
import type { InferenceRequest } from '../../engine/request'
import { RequestDeadlineSignal, requestAbortSignal } from '../../engine/request-deadline'
import type { ResponseResult, ResponseSession, StoppedUsage } from '../../engine/session-events'
import { pluginsOf } from './request-plugins'

/** Runs every plugin's `beforeAttempts`, in the order listed. */
export const runBeforeAttempts = async (request: InferenceRequest): Promise<void> => {
  const hooks = pluginsOf(request).filter((plugin) => plugin.beforeAttempts)
  if (hooks.length === 0) return
  const { signal, release } = requestAbortSignal(request.signal, request.deadline)
  try {
    for (const plugin of hooks) await plugin.beforeAttempts!(request, signal)
  } catch (error) {
    // Whatever a plugin was doing when the client left, the request ends as every other does then.
    if (request.signal.aborted) throw new ClientClosedError()
    // A plugin's service still working when the request's deadline passed: the deadline is what the client hears of.
    if (signal.reason instanceof RequestDeadlineSignal) throw request.deadline.error()
    throw error
  } finally {
    release()
  }
}

/** A whole answer's result after the request's plugins. */
export const afterWhole = (result: ResponseResult, request: InferenceRequest): ResponseResult =>
  pluginsOf(request).reduce((current, plugin) => (plugin.afterWhole ? plugin.afterWhole(current, request) : current), result)

/** A streamed answer whose events pass the request's plugins first; the same session when none watches streams. */
export const observedByPlugins = (session: ResponseSession, request: InferenceRequest): ResponseSession => {
  const watchers = pluginsOf(request).filter((plugin) => plugin.onStreamEvent)
  const spenders = pluginsOf(request).filter((plugin) => plugin.onStopped)
  if (watchers.length === 0 && spenders.length === 0) return session
  // What the plugins spent on a stopped answer (a search already run) is added to what its turn used.
  const withSpenders = (used: StoppedUsage) => spenders.reduce((current, plugin) => plugin.onStopped!(current), used)
  return {
    request: session.request,
    overheadMs: session.overheadMs,
    start: (sink) => {
      const stop = session.start({
        write(event) {
          let isReady = true
          for (const plugin of watchers) {
            for (const before of plugin.onStreamEvent!(event, request) ?? []) isReady = sink.write(before) && isReady
          }
          return sink.write(event) && isReady
        },
        ready: () => sink.ready(),
        close: (stopped) => sink.close(stopped && withSpenders(stopped)),
        fail: (error) => sink.fail(error),
      })
      return () => {
        const used = stop()
        return used && withSpenders(used)
      }
    },
  }
}
