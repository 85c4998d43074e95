/**
 * The wait an upstream asks for before a retry: its `Retry-After` header (RFC 9110: delay-seconds or an
 * HTTP-date), or, where a provider sends none, the delay its message names. Bounding the value for
 * callers is the engine's job.
 */

const DELAY_SECONDS = /^\s*\d+(\.\d+)?\s*$/

/** Seconds to wait, from a `Retry-After` value; `undefined` when absent, unreadable, or already past. */
export const parseRetryAfter = (value: string | null, nowMs: number): number | undefined => {
  if (value === null) return undefined
  const seconds = DELAY_SECONDS.test(value) ? Number(value) : (Date.parse(value) - nowMs) / 1000
  return Number.isFinite(seconds) && seconds > 0 ? seconds : undefined
}

// Go durations, as OpenAI writes them: "try again in 20ms", "in 2.5s", "in 1m30s", "in 114h18m0s".
const DURATION_DELAY = /(?:try again in|retry after)\s+((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)(?![a-z])/i
const DURATION_PART = /(\d+(?:\.\d+)?)(ms|h|m|s)/g
// Words, as Groq and Azure write them: "try again in 5.63 s", "Please retry after 6 seconds."
const WORDED_DELAY = /(?:try again in|retry after)\s+(\d+(?:\.\d+)?)\s*(ms|s|sec|seconds?)\b/i
const SECONDS_PER_UNIT: Readonly<Record<string, number>> = { ms: 0.001, s: 1, sec: 1, second: 1, seconds: 1, m: 60, h: 3600 }

/** The delay an error message names, in whole seconds (rounded up, at least 1); `undefined` when it names none. */
export const retryAfterInMessage = (message: string): number | undefined => {
  const duration = DURATION_DELAY.exec(message)?.[1]
  let seconds: number | undefined
  if (duration) {
    seconds = 0
    for (const [, amount, unit] of duration.toLowerCase().matchAll(DURATION_PART)) seconds += Number(amount) * SECONDS_PER_UNIT[unit!]!
  } else {
    const worded = WORDED_DELAY.exec(message)
    if (worded) seconds = Number(worded[1]) * SECONDS_PER_UNIT[worded[2]!.toLowerCase()]!
  }
  return seconds === undefined ? undefined : Math.max(1, Math.ceil(seconds))
}
