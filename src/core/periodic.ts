/**
 * Background work on a timer: one periodic task (a lease renewal, a sweep, a heartbeat) that runs one at a time,
 * reports a failure and carries on, and never holds a process open; and the retention sweep of records older than
 * a date, deleted in bounded pages. Shared by the spend book, the settlement recovery, the usage ledger and the
 * audit log.
 */

import type { Logger } from './logger'

/** Lets a timer run without keeping the process alive (Node and Bun timers can be unref'd; others cannot). */
export const unrefTimer = (timer: unknown) => (timer as { unref?: () => void } | undefined)?.unref?.()

/** Resolves after `ms`, without keeping the process alive meanwhile. */
export const unrefSleep = (ms: number) =>
  new Promise<void>((resolve) => {
    unrefTimer(setTimeout(resolve, ms))
  })

/** The store's own reason, for the log: a 503's cause (refused, timed out) is what an operator needs. */
export const causeOf = (error: unknown) => (error instanceof Error && error.cause !== undefined ? { cause: error.cause } : {})

export interface PeriodicTask {
  /** Runs the task now, unless a run is under way or the task was stopped. */
  run(): void
  /** Stops the timer and waits for a run under way; later `run` calls do nothing. */
  stop(): Promise<void>
}

/**
 * Runs `task` every `everyMs` (never when `false`), one run at a time; a failed run goes to `onError` and the next
 * run comes as usual.
 */
export const startPeriodicTask = (everyMs: number | false, task: () => Promise<unknown>, onError: (error: unknown) => void): PeriodicTask => {
  let running: Promise<void> | undefined
  let isStopped = false
  const run = () => {
    if (running || isStopped) return
    running = task()
      .then(() => {}, onError)
      .finally(() => {
        running = undefined
      })
  }
  const timer = everyMs === false ? undefined : setInterval(run, everyMs)
  unrefTimer(timer)
  return {
    run,
    async stop() {
      isStopped = true
      clearInterval(timer)
      await running
    },
  }
}

/** One page of a retention sweep: how many records went, and whether older ones may remain. */
export type DeletedPage = { deleted: number; hasMore: boolean }

/** Pages one sweep deletes at most, and their size; the next sweep carries on. */
const SWEEP_PAGE_SIZE = 200
const SWEEP_MAX_PAGES = 50

/**
 * Deletes the records created before `before` (ISO 8601) in pages, at most a bounded number per call; resolves with
 * how many went. `what` names them in the line logged when the bound stops the sweep.
 */
export const sweepOlderThan = async (
  deleteOlderThan: (before: string, limit: number) => Promise<DeletedPage>,
  before: string,
  logger: Logger,
  what: string,
): Promise<number> => {
  let deleted = 0
  for (let page = 0; page < SWEEP_MAX_PAGES; page++) {
    const outcome = await deleteOlderThan(before, SWEEP_PAGE_SIZE)
    deleted += outcome.deleted
    if (!outcome.hasMore) return deleted
  }
  logger.info(`${what} sweep stopped at its bound; the next sweep continues`, { deleted })
  return deleted
}
