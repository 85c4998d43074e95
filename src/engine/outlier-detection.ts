/**
 * Outlier ejection, as Envoy does it for hosts: after `consecutiveFailures` failures in a row that are
 * the upstream's (5xx, no connection, timeout), a target is skipped for a back-off that doubles with
 * each ejection (`baseEjectionSeconds` × 2^(k−1), at most `maxEjectionSeconds`). When that runs out,
 * one attempt goes through as a probe while the others keep skipping it; a probe that fails ejects
 * again for longer, any answer from the upstream resets the target. State is per gateway instance
 * (per process), so several gateways behind a load balancer each learn on their own.
 */

export interface OutlierDetectionOptions {
  consecutiveFailures: number
  baseEjectionSeconds: number
  maxEjectionSeconds: number
}

/** How an attempt ended, as far as the target's health goes. */
export type AttemptOutcome =
  /** The upstream answered (any status that is not its own failure): it is alive. */
  | 'answered'
  /** 5xx, connection failure or timeout. */
  | 'failed'
  /** Nothing learnt (the client left, the gateway stopped the attempt, the request was never sent). */
  | 'unknown'

export interface OutlierDetector {
  /** Whether any of `keys` is ejected now, or its probe is already in flight. */
  isEjected(keys: readonly string[]): boolean
  /** Marks an attempt on `keys` as sent; a key whose ejection ran out becomes this attempt's probe. */
  admit(keys: readonly string[]): void
  record(keys: readonly string[], outcome: AttemptOutcome): void
}

interface Health {
  /** Failures in a row since the last answer or ejection. */
  failures: number
  /** Ejections in a row since the last answer: the back-off's exponent. */
  ejections: number
  /** While ejected: until when (ms); 0 otherwise. */
  ejectedUntil: number
  isProbing: boolean
}

// Targets are endpoints and BYOK credentials; a long-running gateway forgets the oldest beyond this many.
const MAX_TRACKED = 10_000

export const createOutlierDetector = (
  options: OutlierDetectionOptions,
  now: () => number,
  onEject: (key: string, seconds: number) => void = () => {},
): OutlierDetector => {
  const health = new Map<string, Health>()

  const isKeyEjected = (key: string, at: number) => {
    const entry = health.get(key)
    return entry !== undefined && entry.ejectedUntil !== 0 && (at < entry.ejectedUntil || entry.isProbing)
  }

  const eject = (key: string, entry: Health, at: number) => {
    entry.ejections++
    const seconds = Math.min(options.maxEjectionSeconds, options.baseEjectionSeconds * 2 ** (entry.ejections - 1))
    entry.ejectedUntil = at + seconds * 1000
    entry.failures = 0
    entry.isProbing = false
    onEject(key, seconds)
  }

  const fail = (key: string, at: number) => {
    let entry = health.get(key)
    if (!entry) {
      if (health.size >= MAX_TRACKED) health.delete(health.keys().next().value!)
      entry = { failures: 0, ejections: 0, ejectedUntil: 0, isProbing: false }
      health.set(key, entry)
    }
    if (entry.isProbing) return eject(key, entry, at)
    // Attempts that still reach an ejected target (every target was ejected) do not extend its back-off.
    if (entry.ejectedUntil > at) return
    entry.failures++
    if (entry.failures >= options.consecutiveFailures) eject(key, entry, at)
  }

  return {
    isEjected(keys) {
      const at = now()
      return keys.some((key) => isKeyEjected(key, at))
    },
    admit(keys) {
      const at = now()
      for (const key of keys) {
        const entry = health.get(key)
        if (entry && entry.ejectedUntil !== 0 && at >= entry.ejectedUntil) entry.isProbing = true
      }
    },
    record(keys, outcome) {
      const at = now()
      for (const key of keys) {
        if (outcome === 'answered') health.delete(key)
        else if (outcome === 'failed') fail(key, at)
        else {
          // A probe that learnt nothing frees its slot for the next attempt.
          const entry = health.get(key)
          if (entry) entry.isProbing = false
        }
      }
    },
  }
}

/** Ejection turned off: every target is always tried. */
export const disabledOutlierDetector: OutlierDetector = { isEjected: () => false, admit() {}, record() {} }
