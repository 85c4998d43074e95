/**
 * A driver whose calls report their latency and failures to the telemetry's `storeCalled` (src/core/telemetry.ts).
 * The composition root puts it in front of the driver only when somebody observes store calls; otherwise the driver
 * is used as it is and a call costs nothing more.
 */

import type { StoreCalled } from '../core/telemetry'
import type { StorageDriver } from './contract'

// Closing is the gateway's own end, not a call its requests wait on.
const UNOBSERVED = new Set(['name', 'close'])

export const observedDriver = (driver: StorageDriver, report: (event: StoreCalled) => void): StorageDriver => {
  const observed: Record<string, unknown> = {}
  for (const operation of Object.keys(driver)) {
    const value = (driver as unknown as Record<string, unknown>)[operation]
    if (typeof value !== 'function' || UNOBSERVED.has(operation)) {
      observed[operation] = typeof value === 'function' ? value.bind(driver) : value
      continue
    }
    observed[operation] = (...args: unknown[]) => {
      const startedAt = performance.now()
      const ended = (isError: boolean) => report({ operation, isError, durationMs: performance.now() - startedAt })
      return (value.apply(driver, args) as Promise<unknown>).then(
        (result) => {
          ended(false)
          return result
        },
        (error: unknown) => {
          ended(true)
          throw error
        },
      )
    }
  }
  return observed as unknown as StorageDriver
}
