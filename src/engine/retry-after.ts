/**
 * `Retry-After` from upstreams to callers. RFC 9110 allows delay-seconds or an HTTP-date; an upstream may
 * also send garbage or absurd values (10^12 s), which must never reach a client as a reason to wait for ever.
 * Reading the header is the provider error reader's job (src/providers/shared/retry-after.ts); this bounds it.
 */

/** The header value for a caller: whole seconds, at least 1, at most `maxSeconds`; `undefined` for no header. */
export const boundedRetryAfter = (seconds: number | undefined, maxSeconds: number): string | undefined => {
  if (seconds === undefined || !Number.isFinite(seconds) || seconds <= 0) return undefined
  return String(Math.min(maxSeconds, Math.ceil(seconds)))
}
