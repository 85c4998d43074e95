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
