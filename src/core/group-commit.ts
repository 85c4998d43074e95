/**
 * Group commit: items written by concurrent callers share one write. A caller's item goes out with the next
 * write that starts; a write starts at once while fewer than `maxInFlight` are under way, so an idle writer
 * adds no wait, and under load the items that arrive while writes are in flight form the next batch. Each
 * caller's promise settles with the write that carried its item.
 */

import { ServiceUnavailableError } from './errors'

export interface GroupCommitOptions {
  /** Most items in one write. */
  maxBatch: number
  /** Most items waiting for a write; beyond it `add` rejects at once (503) rather than queue without bound. */
  maxQueue: number
  /** Writes under way at once. */
  maxInFlight: number
  /** Said by the 503 when the queue is full. */
  overloadedMessage: string
}

export interface GroupCommit<T> {
  /** Resolves once a write carrying `item` succeeded; rejects with that write's error. */
  add(item: T): Promise<void>
  /** Resolves once every item added so far was written or failed. */
  drain(): Promise<void>
}

interface Pending<T> {
  item: T
  resolve: () => void
  reject: (error: unknown) => void
}

export const createGroupCommit = <T>(write: (batch: T[]) => Promise<void>, options: GroupCommitOptions): GroupCommit<T> => {
  let queue: Pending<T>[] = []
  let inFlight = 0
  let isScheduled = false
  let idle: { promise: Promise<void>; resolve: () => void } | undefined

  const settleIdle = () => {
    if (queue.length > 0 || inFlight > 0 || !idle) return
    idle.resolve()
    idle = undefined
  }

  const send = (batch: Pending<T>[]) => {
    inFlight++
    write(batch.map((pending) => pending.item)).then(
      () => {
        for (const pending of batch) pending.resolve()
      },
      (error: unknown) => {
        for (const pending of batch) pending.reject(error)
      },
    ).finally(() => {
      inFlight--
      flush()
      settleIdle()
    })
  }

  const flush = () => {
    isScheduled = false
    while (inFlight < options.maxInFlight && queue.length > 0) {
      const batch = queue.length <= options.maxBatch ? queue : queue.slice(0, options.maxBatch)
      queue = queue.length <= options.maxBatch ? [] : queue.slice(options.maxBatch)
      send(batch)
    }
  }

  return {
    add(item) {
      if (queue.length >= options.maxQueue) return Promise.reject(new ServiceUnavailableError(options.overloadedMessage))
      return new Promise<void>((resolve, reject) => {
        queue.push({ item, resolve, reject })
        // Items added in the same turn of the event loop go out together.
        if (!isScheduled && inFlight < options.maxInFlight) {
          isScheduled = true
          queueMicrotask(flush)
        }
      })
    },
    drain() {
      if (queue.length === 0 && inFlight === 0) return Promise.resolve()
      if (!idle) {
        let resolve!: () => void
        const promise = new Promise<void>((done) => (resolve = done))
        idle = { promise, resolve }
      }
      return idle.promise
    },
  }
}
