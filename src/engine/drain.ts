/** Ending an upstream stream whose answer is complete without costing its connection. */

import type { UpstreamStreamEvent } from '../providers/contract'
import type { OpenedAttempt } from './attempts'

/** How long an upstream may take to end its body after its last event before the connection is dropped. */
const DRAIN_DEADLINE_MS = 5_000

/**
 * Reads an upstream stream to its end after its finish event. An exchange that ends cleanly leaves its
 * keep-alive connection reusable; aborting one mid-body costs a new connection (and a handshake) next time.
 */
export const drainThenRelease = (iterator: AsyncIterator<UpstreamStreamEvent>, opened: OpenedAttempt): void => {
  const deadline = setTimeout(() => {
    opened.abort()
    iterator.return?.()?.catch(() => {})
  }, DRAIN_DEADLINE_MS)
  const drain = async () => {
    while (!(await iterator.next()).done) {
      // Events after the finish (a trailing keep-alive) carry nothing the client still needs.
    }
  }
  drain()
    .then(
      () => opened.release(),
      () => opened.abort(),
    )
    .finally(() => clearTimeout(deadline))
}

/** Resolves `'commit'` after `ms` unless cancelled first. */
export const commitDeadline = (ms: number) => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const reached = new Promise<'commit'>((resolve) => {
    timer = setTimeout(() => resolve('commit'), ms)
  })
  return { reached, cancel: () => clearTimeout(timer) }
}
