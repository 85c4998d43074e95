/**
 * Noticing that the process that started the runner is gone. `npm start` and `npx modelgate serve` run the
 * gateway under wrappers (npm, a shell) that can die on SIGTERM without passing it on; the gateway would then live
 * on as an orphan holding the store's lock. Polling the parent's pid costs one system call per interval.
 */

import { isProcessAlive } from '../storage/file-lock'

const DEFAULT_INTERVAL_MS = 1_000

/**
 * Calls `onGone` once when the parent process exits; returns the function that stops watching. The timer is
 * unref'd, so it never keeps the process alive. Under init or a container's pid 1 (parent 0 or 1) there is nothing
 * to watch: that parent outlives us.
 */
export const watchParent = (onGone: () => void, intervalMs = DEFAULT_INTERVAL_MS): (() => void) => {
  const parent = process.ppid
  if (parent <= 1) return () => {}
  const timer = setInterval(() => {
    if (isProcessAlive(parent)) return
    clearInterval(timer)
    onGone()
  }, intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}

/** Watch by default only under npm and npx, which set `npm_lifecycle_event` for what they run. */
export const shouldWatchParent = (setting: boolean | undefined, environment: Record<string, string | undefined>): boolean =>
  setting ?? Boolean(environment.npm_lifecycle_event)
