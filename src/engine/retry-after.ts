/**
 * `Retry-After` from upstreams to callers. RFC 9110 allows delay-seconds or an HTTP-date; an upstream may
 * also send garbage or absurd values (10^12 s), which must never reach a client as a reason to wait for ever.
 */

const DELAY_SECONDS = /^\s*\d+(\.\d+)?\s*$/

/** Seconds to wait, from a `Retry-After` value; `undefined` when absent, unreadable, or already past. */
export const parseRetryAfter = (value: string | null, nowMs: number): number | undefined => {
  if (value === null) return undefined
  const seconds = DELAY_SECONDS.test(value) ? Number(value) : (Date.parse(value) - nowMs) / 1000
  return Number.isFinite(seconds) && seconds > 0 ? seconds : undefined
}

/** The header value for a caller: whole seconds, at least 1, at most `maxSeconds`; `undefined` for no header. */
export const boundedRetryAfter = (seconds: number | undefined, maxSeconds: number): string | undefined => {
  if (seconds === undefined || !Number.isFinite(seconds) || seconds <= 0) return undefined
  return String(Math.min(maxSeconds, Math.ceil(seconds)))
}
