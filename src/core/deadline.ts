/** Bounding a wait: one timer per call, cleared as soon as the work settles. */

/**
 * Settles like `work`, or rejects with `timeoutError()` once `ms` have passed. `work` is then abandoned:
 * its eventual result or failure is dropped (never an unhandled rejection).
 */
export const withDeadline = <T>(work: Promise<T>, ms: number, timeoutError: () => unknown): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(timeoutError()), ms)
    work.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })

/**
 * A point in time several waits share, on the monotonic clock (a wall-clock step must not lengthen or cut it):
 * each wait takes at most what is left of it.
 */
export class Deadline {
  readonly #endsAt: number
  #isPassed = false

  constructor(readonly ms: number) {
    this.#endsAt = performance.now() + ms
  }

  /** What is left, never below 0. */
  remainingMs(): number {
    return this.isPassed ? 0 : this.#endsAt - performance.now()
  }

  get isPassed(): boolean {
    if (!this.#isPassed && performance.now() >= this.#endsAt) this.#isPassed = true
    return this.#isPassed
  }

  /**
   * A wait this deadline bounded has run out: it counts as passed from now on. A timer may fire a fraction of a
   * millisecond before the clock reads its end, and the waits that ran out must not see time left.
   */
  markPassed(): void {
    this.#isPassed = true
  }

  /** Calls `listener` once the deadline has passed (at once when it has); returns what cancels the call. */
  whenPassed(listener: () => void): () => void {
    const timer = setTimeout(() => {
      this.#isPassed = true
      listener()
    }, this.remainingMs())
    return () => clearTimeout(timer)
  }
}
